"""The guard's error rates, computed for a preset: its claims, simulated through its rules.

A preset states what its gate and audit get wrong how often (`presets/NAME.claims.toml`);
this module computes each stated rate by driving the project's own decision code
(`guard.gate_verdict`, `guard.likelihood_verdict`) on the preset's measured inputs, so
that `make demo` prints computed rates and a test fails when a statement and its
computation part (tests/test_guard_claims.py).

Three kinds of claim:
  gate        P(promising) at a true validation effect (a shift of every task's pass
              probability, in points), over simulated decisions: per task, the parent's p
              from the preset's validation profile, k paired samples per side of which a
              share rho are one shared draw (the same text under the same seed), and the
              rule itself, looks and all. The mean samples per side it spent come along.
  audit       P(keep) of the paired pass-rate audit at a true shift, the same way on the
              preset's audit profile.
  likelihood  P(keep) of the likelihood audit for a kind of candidate measured on real
              weights (`bench/likelihood_audit.py`): its per-task changes, with the audit's
              task set resampled with replacement (the decision's variability over which
              references the audit holds).
Each rate carries its 95% Wilson interval over the replicates; a claim holds when the
whole interval is on its side of the stated bound.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict, dataclass
from importlib import resources
from math import sqrt
from pathlib import Path
from typing import Any

import numpy as np

from codeloop import store
from codeloop.config import SessionConfig, load_preset
from codeloop.evaluate import guard

CLAIMS_SUFFIX = ".claims.toml"


@dataclass(frozen=True)
class Rate:
    """One computed rate, the claim it answers, and whether the claim holds."""

    claim: str
    kind: str
    rate: float
    low: float
    high: float
    bound: str
    holds: bool
    samples_per_side: float | None = None


def wilson(hits: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of a simulated rate."""
    if not n:
        return 0.0, 1.0
    z, rate = 1.96, hits / n
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _sides(
    profile: dict[str, Any], points: float, k: int, rng: np.random.Generator, ids: list[str]
) -> dict[str, dict[str, list[bool]]]:
    """One simulated decision's samples: per task, the parent's p from the profile's Beta,
    the candidate's q = p + points, and k paired draws per side of which a share rho are
    one shared draw (the same text under the same seed)."""
    p = rng.beta(profile["a"], profile["b"], len(ids))
    q = np.clip(p + points / 100, 0, 1)
    u = rng.random((len(p), k))
    own = rng.random((len(p), k))
    shared = rng.random((len(p), k)) < profile["rho"]
    parent, candidate = u < p[:, None], np.where(shared, u, own) < q[:, None]
    return {
        "parent": {i: row.tolist() for i, row in zip(ids, parent, strict=True)},
        "candidate": {i: row.tolist() for i, row in zip(ids, candidate, strict=True)},
    }


def gate_rate(
    config: SessionConfig, profile: dict[str, Any], points: float, reps: int, seed: int
) -> tuple[int, float]:
    """(promising decisions of `reps`, mean samples per side and task they spent) at a true
    shift of `points` on the validation profile (`profile`: tasks, Beta a and b, rho)."""
    rule = config.gate
    rng = np.random.default_rng(seed)
    ids = [f"t{i}" for i in range(profile["tasks"])]
    looks = rule.looks or [rule.confirm_samples]
    hits = spent = 0
    for _ in range(reps):
        sides = _sides(profile, points, rule.confirm_samples, rng, ids)
        promising, _reasons, evidence = guard.gate_verdict(rule, {}, sides, ids)
        hits += promising
        spent += (evidence or {}).get("samples", looks[-1])
    return hits, spent / reps


def audit_rate(
    config: SessionConfig, profile: dict[str, Any], points: float, reps: int, seed: int
) -> int:
    """Kept decisions of `reps` of the paired pass-rate audit at a true shift of `points`
    on the audit profile (tasks, Beta a and b, rho)."""
    rule = config.audit
    rng = np.random.default_rng(seed)
    ids = [f"t{i}" for i in range(profile["tasks"])]
    kept = 0
    for _ in range(reps):
        sides = _sides(profile, points, rule.confirm_samples, rng, ids)
        kept += guard.audit_verdict(rule, {"lost_ids": []}, sides, ids)[0]
    return kept


def likelihood_rate(config: SessionConfig, changes: list[float], reps: int, seed: int) -> int:
    """Kept decisions of `reps` for a candidate with these per-task changes, the task
    set resampled with replacement each time."""
    rng = np.random.default_rng(seed)
    values = np.asarray(changes, dtype=float)
    ids = [f"t{i}" for i in range(len(values))]
    kept = 0
    for _ in range(reps):
        pick = values[rng.integers(0, len(values), len(values))]
        scores = {
            "parent": dict.fromkeys(ids, 0.0),
            "candidate": {i: float(v) for i, v in zip(ids, pick, strict=True)},
        }
        kept += guard.likelihood_verdict(config.audit, scores, ids)[0]
    return kept


def claims_path(preset: str) -> Path:
    return Path(str(resources.files("codeloop.presets").joinpath(preset + CLAIMS_SUFFIX)))


def _inputs(preset: str, name: str) -> dict[str, Any]:
    """A measured input file shipped beside the preset (named by its claims file)."""
    path = claims_path(preset).parent / name
    return json.loads(path.read_text(encoding="utf-8"))


def compute(preset: str, claims_file: Path | None = None) -> list[Rate]:
    """Every claim of `preset` (or of `claims_file`, claims about it), computed now."""
    claims = tomllib.loads((claims_file or claims_path(preset)).read_text(encoding="utf-8"))
    config = load_preset(preset)
    reps, seed = int(claims["reps"]), int(claims["seed"])
    found: list[Rate] = []
    for index, claim in enumerate(claims["claim"]):
        spent = None
        for case, hits, spent in _cases(preset, claims, config, claim, reps, seed + index):
            low, high = wilson(hits, reps)
            if "at_most" in claim:
                bound, holds = f"<= {claim['at_most']:.0%}", high <= claim["at_most"]
            else:
                bound, holds = f">= {claim['at_least']:.0%}", low >= claim["at_least"]
            what = f"{claim['what']} [{case}]"
            found.append(Rate(what, claim["kind"], hits / reps, low, high, bound, holds, spent))
    return found


def _cases(preset: str, claims: dict, config: SessionConfig, claim: dict, reps: int, seed: int):
    """(case, hits, samples per side) of one claim: a gate claim under every validation
    profile the preset names, a likelihood claim on its measured candidate."""
    if claim["kind"] == "gate":
        for profile in _inputs(preset, claims["gate_profile"])["profiles"]:
            hits, spent = gate_rate(config, profile, claim["points"], reps, seed)
            yield profile["name"], hits, spent
    elif claim["kind"] == "audit":
        for profile in _inputs(preset, claims["audit_profile"])["profiles"]:
            yield profile["name"], audit_rate(config, profile, claim["points"], reps, seed), None
    elif claim["kind"] == "likelihood":  # every measured run of the candidate, one case each
        design = _inputs(preset, claims["likelihood_design"])
        rows = [row for row in design["rows"] if row["name"] == claim["candidate"]]
        if not rows:
            raise ValueError(f"{claims['likelihood_design']}: no run of {claim['candidate']!r}")
        for row in rows:
            case = f"{claim['candidate']}, {row['run']}" if "run" in row else claim["candidate"]
            yield case, likelihood_rate(config, row["changes"], reps, seed), None
    else:
        raise ValueError(f"{claims_path(preset)}: unknown claim kind {claim['kind']!r}")


def fingerprint(preset: str) -> str:
    """What the rates depend on: the preset, its claims and inputs, and this code."""
    folder = claims_path(preset).parent
    claims = tomllib.loads(claims_path(preset).read_text(encoding="utf-8"))
    parts = [
        store.sha256_file(folder / f"{preset}.toml"),
        store.sha256_file(claims_path(preset)),
        store.sha256_file(Path(__file__)),
        store.sha256_file(Path(guard.__file__)),
        *(
            store.sha256_file(folder / claims[key])
            for key in ("gate_profile", "audit_profile", "likelihood_design")
            if key in claims
        ),
    ]
    return store.sha256_json(parts)


def cached(preset: str, cache: Path) -> list[Rate]:
    """`compute(preset)`, kept in `cache` under the fingerprint of what it depends on."""
    path = cache / f"guard-rates-{preset}-{fingerprint(preset)[:16]}.json"
    if path.is_file():
        return [Rate(**row) for row in json.loads(path.read_text())["rates"]]
    rates = compute(preset)
    store.write_json(path, {"preset": preset, "rates": [asdict(rate) for rate in rates]})
    return rates
