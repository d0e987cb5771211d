"""What the guard's error rates hang on, measured on a real round: how alike two models'
answers are, and how pass rates spread over tasks.

Reads a finished round of a session run with `gate.rule = "paired"` and
`audit.rule = "paired"` (every validation and audit task sampled on both sides with
the same seeds; `--measure` in bench/decision_sim.py's docs says how such a round is
made), and reports, for the validation set and the audit:

- the greedy answers: each side's pass rate, the share of tasks where parent and
  candidate wrote the same text, and the flips (gained, lost);
- the seeded samples: each side's pass rate, the share of same-seed pairs with the same
  text (a "shared draw": the candidate's answer is the parent's), the outcome
  correlation (1 - observed discordant pairs / those expected if the sides drew apart),
  and how the discordant pairs spread over tasks;
- every task's parent sample pass rate (the profile bench/decision_sim.py draws from).

The result goes to `--out` (JSON, the simulator's input) and to bench/RESULTS.md.
Nothing here asks a model or runs a program: it reads the round's saved answers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import mean
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import record

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


def measure_set(folder: Path, name: str) -> dict[str, Any]:
    """One set's measurements from the round's saved answers and verdicts."""
    spec = SETS[name]
    greedy = [store.read(folder / path)["attempts"] for path in spec["greedy"]]
    rows = [store.read(folder / path)["rows"] for path in spec["rows"]]
    ids = [row["id"] for row in rows[0]]
    passed = [{row["id"]: bool(row["passed"]) for row in side} for side in rows]
    samples = folder / spec["samples"]
    sampled = [
        {row["id"]: row["passes"] for row in store.read(samples / f"{side}.json")["rows"]}
        for side in ("parent", "candidate")
    ]
    texts = [
        store.read(samples / f"{spec['samples']}-{side}-attempt.json")["attempts"]
        for side in ("parent", "candidate")
    ]
    missing = [task_id for task_id in ids if task_id not in sampled[0]]
    if missing:
        raise SystemExit(
            f"{samples}: {len(missing)} of {len(ids)} {name} tasks were not sampled (e.g. "
            f"{missing[0]}); measure a round run with the paired rules"
        )
    k = len(sampled[0][ids[0]])
    same_text = same_pairs = discordant = expected = 0.0
    per_task_discordant: list[int] = []
    for task_id in ids:
        p, c = sampled[0][task_id], sampled[1][task_id]
        for index in range(k):
            key = f"confirm-{index}"
            same_text += _same(texts[0][task_id][key], texts[1][task_id][key])
        same_pairs += k
        here = sum(a != b for a, b in zip(p, c, strict=True))
        per_task_discordant.append(here)
        discordant += here
        rate_p, rate_c = sum(p) / k, sum(c) / k
        expected += k * (rate_p * (1 - rate_c) + rate_c * (1 - rate_p))
    gained = sum(passed[1][i] and not passed[0][i] for i in ids)
    lost = sum(passed[0][i] and not passed[1][i] for i in ids)
    return {
        "tasks": len(ids),
        "samples": k,
        "greedy_pass_rate": [mean(side[i] for i in ids) for side in passed],
        "greedy_same_text": mean(
            _same(greedy[0][i]["greedy"], greedy[1][i]["greedy"]) for i in ids
        ),
        "greedy_gained": gained,
        "greedy_lost": lost,
        "sample_pass_rate": [mean(sum(side[i]) / k for i in ids) for side in sampled],
        "sample_same_text": same_text / same_pairs,
        "outcome_correlation": 1 - discordant / expected if expected else None,
        "discordant_pairs": int(discordant),
        "tasks_with_discordance": sum(d > 0 for d in per_task_discordant),
        "largest_task_share_of_discordance": max(per_task_discordant) / discordant
        if discordant
        else 0.0,
        "parent_rates": [sum(sampled[0][i]) / k for i in ids],
        "candidate_rates": [sum(sampled[1][i]) / k for i in ids],
        "languages": [row["language"] for row in rows[0]],
    }


def _lines(found: dict[str, Any]) -> list[str]:
    lines = [
        f"Round {found['round']} of {found['session']} (decision: {found['decision']}).",
        "",
        "| set | tasks | k | greedy pass parent / candidate | greedy same text | gained / lost "
        "| sample pass parent / candidate | sample same text | outcome correlation "
        "| discordant pairs (tasks) | tasks at rate 0 / 1 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in SETS:
        s = found[name]
        rates = s["parent_rates"]
        corr = s["outcome_correlation"]
        lines.append(
            f"| {name} | {s['tasks']} | {s['samples']} | {100 * s['greedy_pass_rate'][0]:.1f}% / "
            f"{100 * s['greedy_pass_rate'][1]:.1f}% | {100 * s['greedy_same_text']:.0f}% | "
            f"{s['greedy_gained']} / {s['greedy_lost']} | {100 * s['sample_pass_rate'][0]:.1f}% / "
            f"{100 * s['sample_pass_rate'][1]:.1f}% | {100 * s['sample_same_text']:.0f}% | "
            f"{'-' if corr is None else f'{corr:.2f}'} | {s['discordant_pairs']} "
            f"({s['tasks_with_discordance']}) | {sum(r == 0 for r in rates)} / "
            f"{sum(r == 1 for r in rates)} |"
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
