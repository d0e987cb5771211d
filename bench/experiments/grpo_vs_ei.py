"""GRPO or expert iteration? Held-out pass@1 of each on the same completion budget.

Expert iteration is round 1 of a cpu-demo session that bench/learning.py made: the
round's train tasks, a greedy answer and the seeded samples of each, and the
verified ones trained on (its candidate adapter). Two GRPO arms (`codeloop.reward.grpo`:
TRL's GRPOTrainer rewarded by the sandbox, `--scoring`, groups of `--num-generations`)
get the same number of sampled completions: steps = completions / (prompts_per_step *
num_generations), with the preset's LoRA shape and learning rate:
  - "GRPO": from the base model, a new adapter;
  - "expert iteration, then GRPO": from expert iteration's adapter (its budget is
    expert iteration's completions plus the same number again, stated in the entry).
The base model and every adapter are then evaluated greedily, side by side in this
run, on the session's fixed development set and on the non-curriculum held-out
problems (bench/learning.py's evaluation). Appends one entry to bench/RESULTS.md: the
scores, the budget, each arm's wall time, its mean reward per step and the share of
groups without reward spread (no advantage: GRPO learns nothing from them), in all
and step by step.

    .venv/bin/python -m bench.experiments.grpo_vs_ei [--session sessions/bench-learning-N] \
        [--round 1] [--num-generations 8] [--prompts-per-step 1] [--scoring fraction] \
        [--contract-score 0.1] [--arms base expert-iteration]

Slow on CPU: each GRPO step generates prompts_per_step x num_generations answers
and backpropagates through them, and the 240-completion budget of a cpu-demo round
is 30 such steps.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench import devset
from bench.learning import cells, evaluate, pooled
from bench.results import record
from codeloop import store
from codeloop.config import load
from codeloop.loop.common import PHASES
from codeloop.models import hf_folder, resolve
from codeloop.reward import grpo
from codeloop.tasks.schema import Task

ARMS = {"base": "GRPO", "expert-iteration": "expert iteration, then GRPO"}
"""`--arms` name: the arm's name in the entry (GRPO from the base model, or from expert
iteration's adapter)."""


def expert_iteration(folder: Path) -> tuple[int, float]:
    """Completions the round's collect drew, and the wall seconds of collect to train."""
    attempts = store.read(folder / "collect-attempt.json")["attempts"]
    drawn = sum(len(tried) for tried in attempts.values())
    stamps = [(folder / f"{phase}.json").stat().st_mtime for phase in PHASES]
    first = PHASES.index("collect")
    # collect, export and train; baseline (between them) is evaluation, not learning
    seconds = (
        stamps[PHASES.index("export")]
        - stamps[first - 1]
        + stamps[PHASES.index("train")]
        - stamps[PHASES.index("baseline")]
    )
    return drawn, seconds


def per_step(report: dict, key: str) -> str:
    """One value of grpo.json's per-step log (`key`) per step; "-" where TRL logged none."""
    values = [entry.get(key) for entry in report["rewards"]]
    return " ".join("-" if v is None else f"{v:.2f}" for v in values) or "none logged"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--session",
        type=Path,
        default=None,
        help="a bench/learning.py session (default: the newest under sessions/)",
    )
    parser.add_argument("--round", type=int, default=1)
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--prompts-per-step", type=int, default=1)
    parser.add_argument("--scoring", choices=["pass", "fraction"], default="fraction")
    parser.add_argument(
        "--contract-score", type=float, default=0.0, help="codeloop.reward's contract term w"
    )
    parser.add_argument("--out", type=Path, default=None, help="GRPO adapters' parent folder")
    parser.add_argument(
        "--arms",
        nargs="+",
        choices=list(ARMS),
        default=list(ARMS),
        help="the GRPO arms to train (each costs the whole budget again)",
    )
    args = parser.parse_args()

    if args.session is None:
        found = sorted(
            (Path(__file__).resolve().parents[2] / "sessions").glob("bench-learning-*"),
            key=lambda path: path.stat().st_mtime,
        )
        if not found:
            print("bench/grpo_vs_ei.py: skipped: no bench/learning.py session under sessions/")
            print("  (run bench/learning.py first, or pass --session)")
            return
        args.session = found[-1]
    session = args.session.resolve()
    config = load(session / "config.toml")
    folder = session / f"round-{args.round:06d}"
    if not (folder / "finish.json").exists():
        raise SystemExit(f"{folder}: round not finished")
    ei_adapter = folder / "adapter"
    if not (ei_adapter / "adapter_model.safetensors").is_file():
        raise SystemExit(f"{ei_adapter}: no weights (a rejected round's are deleted)")
    drawn, ei_seconds = expert_iteration(folder)
    per_step = args.num_generations * args.prompts_per_step
    steps = max(1, round(drawn / per_step))
    out = args.out or session.parent / f"{session.name}-grpo-{args.round:06d}"
    model = str(hf_folder(resolve(config.engine.model)))

    def grpo_arm(folder: Path, adapter: Path | None) -> tuple[dict, float]:
        """Train (or resume, or read back) one GRPO arm; its report and wall seconds."""
        started = time.monotonic()
        if (folder / "grpo.json").exists():  # trained by an earlier run of this script
            report = store.read(folder / "grpo.json")
            return report, float(report.get("step_seconds", "nan"))
        report = grpo.train(
            config,
            model,
            folder,
            steps=steps,
            num_generations=args.num_generations,
            prompts_per_step=args.prompts_per_step,
            max_completion_length=config.engine.max_tokens,
            learning_rate=config.train.learning_rate,
            temperature=config.round.sample_temperature,
            save_steps=max(1, steps // 4),
            resume=any(folder.glob("checkpoint-*")),
            scoring=args.scoring,
            contract_score=args.contract_score,
            adapter=adapter,
        )
        seconds = time.monotonic() - started
        if report.get("step_seconds") and seconds < report["step_seconds"]:
            # resumed from a checkpoint: this run's time is only part of it, and TRL's
            # per-step times (restored with the checkpoint) cover every step
            seconds = report["step_seconds"]
        return report, seconds

    starts = {"base": None, "expert-iteration": ei_adapter}
    reports = {
        ARMS[arm]: grpo_arm(out / f"from-{arm}", starts[arm]) for arm in ARMS if arm in args.arms
    }
    adapters = {"base": None, "expert iteration": ei_adapter}
    adapters |= {ARMS[arm]: out / f"from-{arm}" for arm in ARMS if arm in args.arms}

    languages = list(config.tasks.languages)
    fixed = [Task.model_validate(t) for t in store.read(session / "development.json")["tasks"]]
    held = devset.tasks(languages)
    rows = []
    for name, adapter in adapters.items():
        dev, other = evaluate(config, adapter, fixed), evaluate(config, adapter, held)
        rows.append((name, dev, other))
        print(f"{name}: dev {pooled(dev):.1f}% non-curriculum {pooled(other):.1f}%", flush=True)

    lines = [
        f"session {session.name}, round {args.round}; budget {drawn} sampled completions per "
        f"arm (expert iteration: collect's greedy answers and samples; GRPO: {steps} steps x "
        f"{args.prompts_per_step} prompts x {args.num_generations} generations, scoring "
        f"{args.scoring}, contract term {args.contract_score}, "
        f"lr {config.train.learning_rate}, LoRA r={config.train.rank}, "
        f"temperature {config.round.sample_temperature}; expert iteration, then GRPO: "
        f"{2 * drawn} in all).",
        "",
        "| model | wall s (collect+export+train / GRPO) | fixed dev set | non-curriculum | "
        "groups without spread | non-curriculum per language |",
        "|---|---|---|---|---|---|",
    ]
    seconds = {"base": "-", "expert iteration": f"{ei_seconds:.0f}"}
    spread = {"base": "-", "expert iteration": "-"}
    for name, (report, wall) in reports.items():
        seconds[name] = f"{wall:.0f}"
        shares = [e["zero_std"] for e in report["rewards"] if e.get("zero_std") is not None]
        spread[name] = f"{sum(shares) / len(shares):.0%}" if shares else "not logged"
    for name, dev, other in rows:
        lines.append(
            f"| {name} | {seconds[name]} | {pooled(dev):.1f}% | {pooled(other):.1f}% | "
            f"{spread[name]} | {cells(other, languages)} |"
        )
    for name, (report, _wall) in reports.items():
        for key, what in (
            ("reward", "mean reward"),
            ("zero_std", "share of groups without spread"),
        ):
            lines += ["", f"{name}: {what} per step: {per_step(report, key)}"]
    record("GRPO vs expert iteration, same completion budget (bench/grpo_vs_ei.py)", lines)


if __name__ == "__main__":
    main()
