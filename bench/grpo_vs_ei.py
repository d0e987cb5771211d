"""GRPO or expert iteration? Held-out pass@1 of each on the same completion budget.

Expert iteration is round 1 of a cpu-demo session that bench/learning.py made: the
round's train tasks, a greedy answer and the seeded samples of each, and the
verified ones trained on (its candidate adapter). GRPO (`codeloop.reward.grpo`: TRL's
GRPOTrainer rewarded by the sandbox) gets the same number of sampled completions
from the same base model: steps = completions / (prompts_per_step * num_generations),
with the preset's LoRA shape and learning rate. The base model and both adapters are
then evaluated greedily, side by side in this run, on the session's fixed
development set and on the non-curriculum held-out problems (bench/learning.py's
evaluation). Appends one entry to bench/RESULTS.md: both scores, the budget, each
method's wall time and GRPO's mean reward per step.

    .venv/bin/python bench/grpo_vs_ei.py [--session sessions/bench-learning-N] \
        [--round 1] [--num-generations 4] [--prompts-per-step 2]

Slow on CPU: each GRPO step generates prompts_per_step x num_generations answers
and backpropagates through them, and the 240-completion budget of a cpu-demo round
is 30 such steps.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout
from learning import cells, evaluate, pooled
from results import record

from codeloop import store
from codeloop.config import load
from codeloop.loop.common import PHASES
from codeloop.models import hf_folder, resolve
from codeloop.reward import grpo
from codeloop.tasks.schema import Task


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--session",
        type=Path,
        default=None,
        help="a bench/learning.py session (default: the newest under sessions/)",
    )
    parser.add_argument("--round", type=int, default=1)
    parser.add_argument("--num-generations", type=int, default=4)
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="GRPO adapter folder")
    args = parser.parse_args()

    if args.session is None:
        found = sorted(
            (Path(__file__).resolve().parent.parent / "sessions").glob("bench-learning-*"),
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
    started = time.monotonic()
    if (out / "grpo.json").exists():  # trained by an earlier run of this script
        report = store.read(out / "grpo.json")
        grpo_seconds = float(report.get("step_seconds", "nan"))
    else:
        report = grpo.train(
            config,
            model,
            out,
            steps=steps,
            num_generations=args.num_generations,
            prompts_per_step=args.prompts_per_step,
            max_completion_length=config.engine.max_tokens,
            learning_rate=config.train.learning_rate,
            temperature=config.round.sample_temperature,
            save_steps=max(1, steps // 4),
            resume=any(out.glob("checkpoint-*")),
        )
        grpo_seconds = time.monotonic() - started
        if report.get("step_seconds") and grpo_seconds < report["step_seconds"]:
            # resumed from a checkpoint: this run's time is only part of it, and TRL's
            # per-step times (restored with the checkpoint) cover every step
            grpo_seconds = report["step_seconds"]

    languages = list(config.tasks.languages)
    fixed = [Task.model_validate(t) for t in store.read(session / "development.json")["tasks"]]
    held = heldout.tasks(languages)
    rows = []
    for name, adapter in (("base", None), ("expert iteration", ei_adapter), ("GRPO", out)):
        dev, other = evaluate(config, adapter, fixed), evaluate(config, adapter, held)
        rows.append((name, dev, other))
        print(f"{name}: dev {pooled(dev):.1f}% non-curriculum {pooled(other):.1f}%", flush=True)

    rewards = " ".join(f"{entry['reward']:.2f}" for entry in report["rewards"])
    lines = [
        f"session {session.name}, round {args.round}; budget {drawn} sampled completions each "
        f"(expert iteration: collect's greedy answers and samples; GRPO: {steps} steps x "
        f"{args.prompts_per_step} prompts x {args.num_generations} generations, lr "
        f"{config.train.learning_rate}, LoRA r={config.train.rank}, temperature "
        f"{config.round.sample_temperature}).",
        "",
        "| model | wall s (collect+export+train / GRPO) | fixed dev set | non-curriculum | "
        "non-curriculum per language |",
        "|---|---|---|---|---|",
    ]
    seconds = {"base": "-", "expert iteration": f"{ei_seconds:.0f}", "GRPO": f"{grpo_seconds:.0f}"}
    for name, dev, other in rows:
        lines.append(
            f"| {name} | {seconds[name]} | {pooled(dev):.1f}% | {pooled(other):.1f}% | "
            f"{cells(other, languages)} |"
        )
    lines += ["", f"GRPO mean reward per step: {rewards or 'none logged'}"]
    record("GRPO vs expert iteration, same completion budget (bench/grpo_vs_ei.py)", lines)


if __name__ == "__main__":
    main()
