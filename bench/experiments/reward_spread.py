"""Which reward gives GRPO groups that differ? Real samples scored four ways.

GRPO learns only from a group whose rewards differ: a group of equal rewards has no
advantage. On a small model most groups of pass/fail rewards are all zeros
(bench/grpo_vs_ei.py at 453db2c: every group of 30 steps). This script measures, on
the model's own seeded samples, how often each scoring of `codeloop.reward` leaves a
group without spread, and what format alone earns under each:
  - the groups: for every task of the given rounds, the `sample-*` answers collect
    drew (the preset's sampling temperature, seeds per task: GRPO's groups, smaller);
  - the scorings: "pass" (1/0), "fraction" (the share of cases passed, every case
    run), and each with the contract term (`contract_score`, a program that builds and
    runs to a compared answer earns w);
  - format alone: every task also gets the prompt's worked example copied unchanged
    (a program in the right format and I/O shape that solves another problem), and
    the most any failing sample earned is reported, which must stay below 1.0.
Appends one entry to bench/RESULTS.md. Runs only sandbox checks (no model).

    .venv/bin/python -m bench.experiments.reward_spread --session DIR [--session DIR ...] \
        [--rounds 1 2 3] [--contract-score 0.1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench.results import record
from codeloop import recipe, store
from codeloop.config import load
from codeloop.reward import CodeReward
from codeloop.tasks.schema import Task


def groups(session: Path, rounds: list[int] | None) -> list[tuple[Task, list[str]]]:
    """(task, its sampled answers) for every task of the session's collected rounds."""
    found = []
    for folder in sorted(session.glob("round-*")):
        number = int(folder.name.split("-")[1])
        attempts_file = folder / "collect-attempt.json"
        if (rounds and number not in rounds) or not attempts_file.exists():
            continue
        train = store.read(folder / "tasks.json")["train"]
        tasks = {t["id"]: Task.model_validate(t) for t in train}
        for task_id, attempts in store.read(attempts_file)["attempts"].items():
            samples = [text for name, text in attempts.items() if name.startswith("sample-")]
            if task_id in tasks and len(samples) >= 2:
                found.append((tasks[task_id], samples))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session", type=Path, action="append", required=True)
    parser.add_argument("--rounds", type=int, nargs="*", default=None)
    parser.add_argument("--contract-score", type=float, default=0.1)
    args = parser.parse_args()
    found: list[tuple[Task, list[str]]] = []
    for session in args.session:
        found += groups(session.resolve(), args.rounds)
    if not found:
        raise SystemExit("no collected round with sampled answers in the given sessions")
    sandbox = load(args.session[0] / "config.toml").sandbox
    w = args.contract_score
    scorings = {
        "pass": CodeReward(scoring="pass", sandbox=sandbox),
        "fraction": CodeReward(scoring="fraction", sandbox=sandbox),
        f"pass + contract {w}": CodeReward(scoring="pass", contract_score=w, sandbox=sandbox),
        f"fraction + contract {w}": CodeReward(
            scoring="fraction", contract_score=w, sandbox=sandbox
        ),
    }
    texts, specs, owner = [], [], []
    for index, (task, samples) in enumerate(found):
        for text in samples:
            texts.append(text)
            specs.append({"task": task.model_dump(mode="json")})
            owner.append(index)
    worked = [
        recipe.fenced(recipe.WORKED_ANSWERS[task.language], task.language) for task, _ in found
    ]
    worked_specs = [{"task": task.model_dump(mode="json")} for task, _ in found]
    lines = [
        f"{len(found)} groups (tasks) of {len(texts)} sampled answers in all "
        f"({statistics.mean(len(s) for _, s in found):.1f} per group), from "
        + ", ".join(str(s) for s in args.session)
        + (f" rounds {args.rounds}" if args.rounds else ", every collected round")
        + "; the worked example copied is scored once per task.",
        "",
        "| scoring | groups without spread | mean reward | mean reward, passing / failing "
        "samples | most a failing sample earned | worked example copied: mean (max) | s |",
        "|---|---|---|---|---|---|---|",
    ]
    passed = None
    # CodeReward raises on an environment error (its default): every value below is a
    # verdict's reward, never an infrastructure failure read as 0
    for name, reward in scorings.items():
        started = time.monotonic()
        values = reward.score(texts, specs)
        copied = reward.score(worked, worked_specs)
        seconds = time.monotonic() - started
        if passed is None:  # the pass scoring's verdicts tell passing samples apart
            passed = [value == 1.0 for value in values]
        per_group: dict[int, list[float]] = {}
        for index, value in zip(owner, values, strict=True):
            per_group.setdefault(index, []).append(value)
        flat = sum(1 for group in per_group.values() if max(group) == min(group))
        right = [v for v, p in zip(values, passed, strict=True) if p]
        wrong = [v for v, p in zip(values, passed, strict=True) if not p]
        lines.append(
            f"| {name} | {flat}/{len(per_group)} ({flat / len(per_group):.0%}) | "
            f"{statistics.mean(values):.3f} | "
            f"{statistics.mean(right) if right else float('nan'):.3f} / "
            f"{statistics.mean(wrong) if wrong else float('nan'):.3f} | "
            f"{max(wrong) if wrong else float('nan'):.3f} | "
            f"{statistics.mean(copied):.3f} ({max(copied):.3f}) | {seconds:.0f} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        f"Passing samples: {sum(passed or [])} of {len(texts)}. A group without spread gives "
        "GRPO no advantage; the contract term pays a program that builds and runs to a "
        f"compared answer {w}, so one that runs but passes no case earns {w}, and the "
        "rest of any reward is cases passed.",
    ]
    record("Reward spread on the model's own samples (bench/reward_spread.py)", lines)


if __name__ == "__main__":
    main()
