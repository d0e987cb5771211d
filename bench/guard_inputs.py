"""What the guard's error rates hang on, measured on a real round: how alike two models'
answers are, and how pass rates spread over tasks.

Reads a finished round of a session, best one run with `audit.rule = "paired"` and
`round.audit_every = 1` (every audit task sampled on both sides with the same seeds;
with `gate.rule = "paired"` the validation tasks too), and reports, for the
validation set and the audit:

- the greedy answers: each side's pass rate, the share of tasks where parent and
  candidate wrote the same text, and the flips (gained, lost);
- the seeded samples: each side's pass rate, the share of same-seed pairs with the same
  text (a "shared draw": the candidate's answer is the parent's), the outcome
  correlation (1 - observed discordant pairs / those expected if the sides drew apart),
  and how the discordant pairs spread over tasks;
- the profile bench/decision_sim.py draws per-task pass probabilities from: a Beta
  fitted to the parent's sample counts (beta-binomial method of moments), where every
  task of the set was sampled.

The result goes to `--out` (JSON, the simulator's input) and to bench/RESULTS.md.
Nothing here asks a model or runs a program: it reads the round's saved answers.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from statistics import mean
from typing import Any

from bench.results import record
from codeloop import store
from codeloop.loop.collect import normalised

SETS = {
    "validation": {
        "greedy": ("baseline-attempt.json", "candidate-attempt.json"),
        "rows": ("baseline-rows.json", "candidate-rows.json"),
        "samples": "gate-confirm",
    },
    "audit": {
        "greedy": (
            "audit-parent/audit-parent-attempt.json",
            "audit-candidate/audit-candidate-attempt.json",
        ),
        "rows": ("audit-parent/rows.json", "audit-candidate/rows.json"),
        "samples": "audit-confirm",
    },
}


def _same(a: str, b: str) -> bool:
    return normalised(a) == normalised(b)


def beta_fit(counts: list[int], k: int) -> dict[str, float] | None:
    """Beta(a, b) of the per-task pass probabilities behind `counts` (passes of k samples
    per task), by the beta-binomial method of moments: the spread of the observed rates
    minus what k samples add by chance. None when nothing passed (no spread to fit)."""
    n = len(counts)
    rates = [c / k for c in counts]
    mu = sum(rates) / n
    if mu in (0.0, 1.0) or n < 2:
        return None
    variance = sum((r - mu) ** 2 for r in rates) / (n - 1)
    phi = (variance * k / (mu * (1 - mu)) - 1) / (k - 1) if k > 1 else 0.5
    phi = min(max(phi, 1e-3), 0.999)  # 1 / (a + b + 1): 0 = all alike, 1 = all 0 or 1
    total = 1 / phi - 1
    return {"a": mu * total, "b": (1 - mu) * total, "mean": mu, "phi": phi}


def _samples(folder: Path, spec: dict[str, Any]):
    """Each side's saved sample verdicts and answer texts of the set (empty when none)."""
    samples = folder / spec["samples"]
    if not (samples / "parent.json").exists():
        return [{}, {}], [{}, {}]
    sampled = [
        {row["id"]: row["passes"] for row in store.read(samples / f"{side}.json")["rows"]}
        for side in ("parent", "candidate")
    ]
    texts = [
        store.read(samples / f"{spec['samples']}-{side}-attempt.json")["attempts"]
        for side in ("parent", "candidate")
    ]
    return sampled, texts


def measure_set(folder: Path, name: str) -> dict[str, Any]:
    """One set's measurements from the round's saved answers and verdicts.

    Greedy figures cover every task; sample figures cover the tasks that were sampled
    (every one under the paired rules, only the greedy flips under the others), and the
    pass-rate profile is fitted only when every task was sampled."""
    spec = SETS[name]
    greedy = [store.read(folder / path)["attempts"] for path in spec["greedy"]]
    rows = [store.read(folder / path)["rows"] for path in spec["rows"]]
    ids = [row["id"] for row in rows[0]]
    passed = [{row["id"]: bool(row["passed"]) for row in side} for side in rows]
    sampled, texts = _samples(folder, spec)
    chosen = [task_id for task_id in ids if task_id in sampled[0]]
    k = len(sampled[0][chosen[0]]) if chosen else 0
    same_text = discordant = expected = 0.0
    per_task_discordant: list[int] = []
    for task_id in chosen:
        p, c = sampled[0][task_id], sampled[1][task_id]
        same_text += sum(
            _same(texts[0][task_id][f"confirm-{j}"], texts[1][task_id][f"confirm-{j}"])
            for j in range(k)
        )
        here = sum(a != b for a, b in zip(p, c, strict=True))
        per_task_discordant.append(here)
        discordant += here
        rate_p, rate_c = sum(p) / k, sum(c) / k
        expected += k * (rate_p * (1 - rate_c) + rate_c * (1 - rate_p))
    every = len(chosen) == len(ids)
    counts = [sum(sampled[0][i]) for i in chosen]
    return {
        "tasks": len(ids),
        "sampled_tasks": len(chosen),
        "samples": k,
        "greedy_pass_rate": [mean(side[i] for i in ids) for side in passed],
        "greedy_same_text": mean(
            _same(greedy[0][i]["greedy"], greedy[1][i]["greedy"]) for i in ids
        ),
        "greedy_gained": sum(passed[1][i] and not passed[0][i] for i in ids),
        "greedy_lost": sum(passed[0][i] and not passed[1][i] for i in ids),
        "sample_pass_rate": [mean(sum(side[i]) / k for i in chosen) for side in sampled]
        if chosen
        else None,
        "sample_same_text": same_text / (k * len(chosen)) if chosen else None,
        "outcome_correlation": 1 - discordant / expected if expected else None,
        "discordant_pairs": int(discordant),
        "tasks_with_discordance": sum(d > 0 for d in per_task_discordant),
        "largest_task_share_of_discordance": max(per_task_discordant) / discordant
        if discordant
        else 0.0,
        "parent_counts": counts if every else None,
        "candidate_counts": [sum(sampled[1][i]) for i in chosen] if every else None,
        "profile": beta_fit(counts, k) if every else None,
        "languages": [row["language"] for row in rows[0]],
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _lines(found: dict[str, Any]) -> list[str]:
    lines = [
        f"Round {found['round']} of {found['session']} (decision: {found['decision']}).",
        "",
        "| set | tasks (sampled) | k | greedy pass parent / candidate | greedy same text "
        "| gained / lost | sample pass parent / candidate | sample same text "
        "| outcome correlation | discordant pairs (tasks) | fitted profile |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in SETS:
        s = found[name]
        corr = s["outcome_correlation"]
        rates = s["sample_pass_rate"] or [None, None]
        fit = s["profile"]
        profile = "-" if fit is None else f"Beta({fit['a']:.2f}, {fit['b']:.2f})"
        lines.append(
            f"| {name} | {s['tasks']} ({s['sampled_tasks']}) | {s['samples']} | "
            f"{_pct(s['greedy_pass_rate'][0])} / {_pct(s['greedy_pass_rate'][1])} | "
            f"{_pct(s['greedy_same_text'])} | {s['greedy_gained']} / {s['greedy_lost']} | "
            f"{_pct(rates[0])} / {_pct(rates[1])} | {_pct(s['sample_same_text'])} | "
            f"{'-' if corr is None else f'{corr:.2f}'} | {s['discordant_pairs']} "
            f"({s['tasks_with_discordance']}) | {profile} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session", type=Path, required=True)
    parser.add_argument("--round", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True, help="JSON for bench/decision_sim.py")
    args = parser.parse_args()
    folder = args.session / store.round_name(args.round)
    finish = store.read(folder / "finish.json", {})
    found: dict[str, Any] = {
        "session": str(args.session),
        "round": args.round,
        "decision": finish.get("decision", "not finished"),
        "config": (args.session / "config.toml").read_text(),
    }
    for name in SETS:
        found[name] = measure_set(folder, name)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(found, indent=1) + "\n")
    record("bench/guard_inputs.py: what the guard hangs on, measured", _lines(found))


if __name__ == "__main__":
    main()
