"""Operating characteristics of the keep/discard rules: P(keep) against the true effect.

The gate ("is the candidate better on validation?") and the audit ("did it lose nothing
on the benchmark?") are statistical tests. This bench measures how often each rule is
wrong, by simulation, driving the project's own decision code: `evaluate.compare` for
the greedy comparison and `evaluate.guard` for which tasks are sampled and what the
samples say (the same functions `loop/gate.py` and `loop/finish.py` call), never a copy.

Synthetic truth, per task: the parent's pass probability p and the candidate's q. One
answer (greedy, or seeded sample i) is a draw: the parent passes when U < p; the
candidate reuses the parent's U with probability rho (a shared draw: the same text,
as two nearby adapters often write under the same seed) and draws its own otherwise,
and passes when its U < q. Greedy answers are draws of the same kind (their own rho).

Profiles (where p comes from):
  cpu-demo   measured: p ~ the Beta fitted to the parent's samples of every audit task
             of a real cpu-demo round, and the measured rho, from bench/guard_inputs.py's
             JSON (--inputs); see `cpu_demo`.
  gpu        stated: p ~ Beta(0.6, 0.4) per task (mean 0.6, U-shaped: a code model
             mostly always or never solves a task), near the published pass@1 of 1.5B
             instruction-tuned coders on HumanEval and MultiPL-E, on the gpu preset's
             sizes (HumanEval-X's 984 tasks plus curriculum-test; 128 validation tasks).
  gpu-flat   pessimistic: p ~ Beta(1, 1), the widest spread of p(1 - p) at that size.
Each runs at the measured rho and at rho = 0 (pessimistic: no shared draws).

Effects (candidate against parent): shift (q = p + d, clipped), scale (q = f p: halved,
gone), concentrated (m tasks the parent solves go to 0) and concentrated gains (m tasks
gain d points each, as real candidates' gains did in bench/doses.py). The true effect is the
exact mean of q - p over the set, in points.

The output: per rule and effect, P(keep) with its 95% Wilson interval over the
replicates, and the mean generations a decision costs; then the rule the project
adopted against its targets (docs/GUARD.md). Appended to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.results import record
from codeloop.config import AuditConfig, GateConfig
from codeloop.evaluate import guard
from codeloop.evaluate.compare import compare
from codeloop.evaluate.operating import wilson

GPU_AUDIT_TASKS = 984 + 64
"""HumanEval-X (164 problems x 6 languages) plus the gpu preset's curriculum-test (64)."""
GPU_VALIDATION_TASKS = 128
"""The gpu preset's validation: 64 fixed development tasks plus 64 fresh ones."""


@dataclass(frozen=True)
class Profile:
    name: str
    audit: np.ndarray
    validation: np.ndarray
    rho: float
    rho_greedy: float


def cpu_demo(data: dict[str, Any], rng: np.random.Generator) -> Profile:
    """cpu-demo's profile from bench/guard_inputs.py's measurements: the audit's per-task
    p drawn from the Beta fitted to the parent's samples on every audit task; the
    validation's from a Beta of the same concentration (a + b) at the parent's greedy
    validation pass rate (the validation set is sampled on its flips only); rho, the
    share of same-seed sample pairs whose texts were the same (a shared draw for sure;
    answers that differ may still agree in outcome, so this errs towards less sharing)."""
    audit, validation = data["audit"], data["validation"]
    fit = audit["profile"]
    if fit is None:
        raise SystemExit("the measured audit has no fitted profile (was every task sampled?)")
    total = fit["a"] + fit["b"]
    mean = validation["greedy_pass_rate"][0]
    return Profile(
        "cpu-demo",
        rng.beta(fit["a"], fit["b"], audit["tasks"]),
        rng.beta(mean * total, (1 - mean) * total, validation["tasks"]),
        audit["sample_same_text"],
        audit["greedy_same_text"],
    )


def profiles(inputs: Path | None, seed: int) -> list[Profile]:
    """The stated gpu profiles, and cpu-demo's measured one when `inputs` is given."""
    rng = np.random.default_rng(seed)
    found = [cpu_demo(json.loads(inputs.read_text()), rng)] if inputs is not None else []
    measured = found[0].rho if found else 0.5
    measured_greedy = found[0].rho_greedy if found else 0.5
    for name, a, b in (("gpu", 0.6, 0.4), ("gpu-flat", 1.0, 1.0)):
        found.append(
            Profile(
                name,
                rng.beta(a, b, GPU_AUDIT_TASKS),
                rng.beta(a, b, GPU_VALIDATION_TASKS),
                measured,
                measured_greedy,
            )
        )
    return found


# -- effects ---------------------------------------------------------------------------------


def shift(points: float) -> Callable[[np.ndarray, np.random.Generator], np.ndarray]:
    return lambda p, _rng: np.clip(p + points / 100, 0, 1)


def scale(factor: float) -> Callable[[np.ndarray, np.random.Generator], np.ndarray]:
    return lambda p, _rng: p * factor


def concentrated_gain(
    tasks: int, points: float
) -> Callable[[np.ndarray, np.random.Generator], np.ndarray]:
    """`tasks` tasks gain `points` each (clipped), the rest unchanged: a real gain sitting on
    a few tasks, as bench/doses.py measured on cpu-demo candidates (two or three audit
    tasks carried all of it), which a uniform shift or scale spreads out."""

    def effect(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        q = p.copy()
        chosen = rng.choice(len(p), size=min(tasks, len(p)), replace=False)
        q[chosen] = np.clip(p[chosen] + points / 100, 0, 1)
        return q

    return effect


def concentrated(tasks: int) -> Callable[[np.ndarray, np.random.Generator], np.ndarray]:
    def effect(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        q = p.copy()
        solved = np.flatnonzero(p > 0)
        q[rng.choice(solved, size=min(tasks, len(solved)), replace=False)] = 0
        return q

    return effect


EFFECTS = {
    "shift -6": shift(-6),
    "shift -4": shift(-4),
    "shift -3": shift(-3),
    "shift -2": shift(-2),
    "shift -1": shift(-1),
    "neutral": shift(0),
    "shift +1": shift(1),
    "shift +3": shift(3),
    "shift +4": shift(4),
    "shift +5": shift(5),
    "shift +10": shift(10),
    "halved": scale(0.5),
    "gone": scale(0.0),
    "3 tasks lost": concentrated(3),
    "2 tasks +40": concentrated_gain(2, 40),
    "3 tasks +40": concentrated_gain(3, 40),
}


# -- one decision ----------------------------------------------------------------------------


def draws(
    p: np.ndarray, q: np.ndarray, k: int, rho: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """k paired answers per task: (parent passes, candidate passes), each (tasks, k)."""
    u = rng.random((len(p), k))
    own = rng.random((len(p), k))
    shared = rng.random((len(p), k)) < rho
    return u < p[:, None], np.where(shared, u, own) < q[:, None]


def _rows(ids: list[str], passed: np.ndarray) -> list[dict[str, Any]]:
    return [{"id": i, "language": "x", "passed": bool(v)} for i, v in zip(ids, passed, strict=True)]


def decide_once(
    kind: str,
    rule: AuditConfig | GateConfig,
    p: np.ndarray,
    q: np.ndarray,
    profile: Profile,
    rho: float,
    rng: np.random.Generator,
) -> tuple[bool, int]:
    """One simulated gate or audit through the project's decision code: (kept, generations)."""
    ids = [f"t{i}" for i in range(len(p))]
    greedy_p, greedy_c = draws(p, q, 1, profile.rho_greedy if rho else 0.0, rng)
    comparison = compare(_rows(ids, greedy_p[:, 0]), _rows(ids, greedy_c[:, 0]))
    choose = guard.audit_sample_ids if kind == "audit" else guard.gate_sample_ids
    wanted = choose(rule, comparison, ids)
    sides: dict[str, dict[str, list[bool]]] = {"parent": {}, "candidate": {}}
    if wanted:
        index = [int(i[1:]) for i in wanted]
        sp, sc = draws(p[index], q[index], rule.confirm_samples, rho, rng)
        sides = {
            "parent": {i: row.tolist() for i, row in zip(wanted, sp, strict=True)},
            "candidate": {i: row.tolist() for i, row in zip(wanted, sc, strict=True)},
        }
    if kind == "audit":
        kept, _evidence = guard.audit_verdict(rule, comparison, sides, ids)
    else:
        kept, _reasons, _evidence = guard.gate_verdict(rule, comparison, sides, ids)
    return kept, 2 * len(ids) + 2 * rule.confirm_samples * len(wanted)


def oc_point(
    kind: str,
    rule: AuditConfig | GateConfig,
    profile: Profile,
    rho: float,
    effect: Callable[[np.ndarray, np.random.Generator], np.ndarray],
    reps: int,
    seed: int,
) -> dict[str, Any]:
    """P(keep) for one rule, profile, rho and effect over `reps` simulated decisions."""
    rng = np.random.default_rng(seed)
    p = profile.audit if kind == "audit" else profile.validation
    kept = generations = 0
    true = 0.0
    for _ in range(reps):
        q = effect(p, rng)
        true += float(np.mean(q - p))
        ok, cost = decide_once(kind, rule, p, q, profile, rho, rng)
        kept += ok
        generations += cost
    low, high = wilson(kept, reps)
    return {
        "true_points": 100 * true / reps,
        "keep": kept / reps,
        "low": low,
        "high": high,
        "generations": generations / reps,
    }


# -- the rules compared ----------------------------------------------------------------------


def audit_rules(profile: str) -> dict[str, AuditConfig]:
    """The audit rules compared on a profile: the old ones, and the paired rule at the
    sample counts and margins its preset can afford."""
    rules = {
        "strict": AuditConfig(rule="strict"),
        "confirmed k8": AuditConfig(rule="confirmed", confirm_samples=8),
    }
    grid = [(2, 2), (4, 2), (8, 2)] if profile.startswith("gpu") else [
        (4, 3), (4, 4), (4, 5), (8, 3), (8, 4), (8, 5)
    ]  # fmt: skip
    for k, margin in grid:
        rules[f"paired k{k} m{margin}"] = AuditConfig(
            rule="paired", confirm_samples=k, margin=margin / 100
        )
    return rules


def gate_rules(profile: str) -> dict[str, GateConfig]:
    """The gate rules compared on a profile (greedy, greedy + samples of the flips, paired)."""
    rules = {
        "greedy": GateConfig(),
        "greedy+confirm k8": GateConfig(confirm_samples=8),
    }
    for k in (8, 16, 32) if profile.startswith("gpu") else (2, 4, 8):
        rules[f"paired k{k}"] = GateConfig(rule="paired", confirm_samples=k)
    return rules


def table(kind: str, rules: dict[str, Any], profile: Profile, rho: float, reps: int, seed: int):
    """Markdown lines: one row per rule, one column per effect (P(keep) [interval])."""
    effects = (
        EFFECTS
        if kind == "audit"
        else {
            name: EFFECTS[name]
            for name in (
                "shift -3",
                "neutral",
                "shift +1",
                "shift +3",
                "shift +4",
                "shift +5",
                "shift +10",
            )
        }
    )
    results: dict[str, dict[str, Any]] = {}
    for name, rule in rules.items():
        results[name] = {
            effect: oc_point(kind, rule, profile, rho, fn, reps, seed)
            for effect, fn in effects.items()
        }
    first = next(iter(results.values()))
    header = " | ".join(f"{e} ({first[e]['true_points']:+.1f})" for e in effects)
    lines = [
        f"{kind} of {profile.name} ({len(profile.audit if kind == 'audit' else profile.validation)}"
        f" tasks, rho {rho:.2f}): P(keep) [95% interval], true effect in points",
        "",
        f"| rule | generations | {header} |",
        "|---|---|" + "---|" * len(effects),
    ]
    for name, row in results.items():
        cells = " | ".join(
            f"{100 * r['keep']:.0f}% [{100 * r['low']:.0f}, {100 * r['high']:.0f}]"
            for r in row.values()
        )
        cost = max(r["generations"] for r in row.values())
        lines.append(f"| {name} | {cost:.0f} | {cells} |")
    return lines, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=Path, help="bench/guard_inputs.py's JSON (cpu-demo)")
    parser.add_argument("--reps", type=int, default=300, help="simulated decisions per point")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--profiles", nargs="*", default=None, help="subset of cpu-demo, gpu, gpu-flat"
    )
    parser.add_argument("--json", type=Path, help="also write every point here")
    args = parser.parse_args()
    started = time.monotonic()
    lines: list[str] = []
    everything: dict[str, Any] = {}
    for profile in profiles(args.inputs, args.seed):
        if args.profiles and profile.name not in args.profiles:
            continue
        for rho in sorted({profile.rho, 0.0}, reverse=True):
            for kind, rules in (
                ("gate", gate_rules(profile.name)),
                ("audit", audit_rules(profile.name)),
            ):
                found, results = table(kind, rules, profile, rho, args.reps, args.seed)
                lines += [*found, ""]
                everything[f"{profile.name} rho {rho:.2f} {kind}"] = results
                print("\n".join(found), file=sys.stderr, flush=True)
    lines.append(
        f"{args.reps} simulated decisions per cell, seed {args.seed}, "
        f"{time.monotonic() - started:.0f} s."
    )
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1) + "\n")
    record("bench/decision_sim.py: operating characteristics of the gate and audit rules", lines)


if __name__ == "__main__":
    main()
