"""How should verified answers be trained (conversation, epochs)? Side by side, one run.

The same verified rows (a round's train.jsonl: the model's own programs that passed)
train one LoRA adapter per variant, from the same seed and settings:
  recipe     the rows as inference sees them: contract system turn, the worked
             example turn, the task (the answer is already likely under this
             prompt, so the loss starts near zero and the update is small);
  contract   the contract system turn and the task, without the worked example
             (the example's effect is distilled into the weights: the loss is
             higher, and what is learnt is "read stdin, print only the answer"
             rather than "copy the example's shape").
With `--max-epochs 2,8` every variant is also trained once per epoch cap (few rows
at a low cap make only a few optimizer steps). Base and every adapter are then
evaluated greedy, with the inference recipe, on
tier-1 development tasks (never trained on) and on held-out problems that are no
curriculum family (bench/heldout.py). Appends a table to bench/RESULTS.md.

    .venv/bin/python bench/train_prompt.py --rows sessions/S/round-000004/train.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout
from learning import cells, evaluate, pooled
from prompts import dev_tasks
from results import record

from codeloop import recipe, store
from codeloop.config import load_preset
from codeloop.train.trainer import TrainRequest, run


def variant_rows(rows: list[dict], variant: str) -> list[dict]:
    """`rows` with their conversation rebuilt for `variant` (answers unchanged)."""
    if variant == "recipe":
        return rows
    out = []
    for row in rows:
        turns = row["messages"]
        out.append({**row, "messages": [turns[0], *turns[-2:]]})
    return out


def train(
    rows: list[dict], folder: Path, preset, steps: int, learning_rate: float, max_epochs: float
) -> tuple[Path, dict]:
    data = folder / "train.jsonl"
    store.write_text(data, "".join(json.dumps(row) + "\n" for row in rows))
    languages = {lang: sum(r["language"] == lang for r in rows) for lang in preset.tasks.languages}
    store.write_json(
        folder / "train.jsonl.manifest.json",
        {
            "split": "train",
            "verification": "local_execution",
            "rows": len(rows),
            "languages": languages,
            "dataset_sha256": store.sha256_file(data),
        },
    )
    settings = preset.train.model_copy(
        update={
            "steps_per_round": steps,
            "learning_rate": learning_rate,
            "max_epochs": max_epochs,
        }
    )
    export = preset.export.model_copy(update={"min_examples": 1, "min_per_language": 0})
    outcome = run(
        TrainRequest(
            dataset=data,
            manifest=folder / "train.jsonl.manifest.json",
            output=folder / "adapter",
            base=preset.engine.model,
            train=settings,
            export=export,
            languages=list(preset.tasks.languages),
            seed=preset.seed,
            precision=preset.engine.precision,
            echo=False,
        )
    )
    report = outcome.report
    print(
        f"  trained {outcome.steps} steps, loss {report.get('first_loss', float('nan')):.3f}"
        f" -> {report.get('last_loss', float('nan')):.3f}",
        flush=True,
    )
    return folder / "adapter", report


def newest_rows(sessions: Path) -> Path | None:
    """The newest train.jsonl under `sessions` with at least 8 rows, or None."""
    found = [
        path
        for path in sessions.glob("*/round-*/train.jsonl")
        if sum(1 for line in path.read_text().splitlines() if line.strip()) >= 8
    ]
    return max(found, key=lambda path: path.stat().st_mtime, default=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows",
        type=Path,
        default=None,
        help="a round's train.jsonl (default: the newest under sessions/ with 8 rows or more)",
    )
    parser.add_argument("--variants", default="recipe,contract")
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument(
        "--max-epochs",
        default=None,
        help="comma list of train.max_epochs to train each variant with (default: the preset's)",
    )
    parser.add_argument("--heldout", type=int, default=6, help="held-out problems (x languages)")
    args = parser.parse_args()
    if args.rows is None:
        args.rows = newest_rows(Path(__file__).resolve().parent.parent / "sessions")
        if args.rows is None:
            print("bench/train_prompt.py: skipped: no round with 8+ verified rows under sessions/")
            print("  (run bench/learning.py first, or pass --rows a round's train.jsonl)")
            return
    preset = load_preset("cpu-demo")
    languages = list(preset.tasks.languages)
    rows = [json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()]
    dev = [task for task, _ in dev_tasks(languages, 1, preset.tasks.salt, preset.tasks.splits)]
    held = [t for t in heldout.tasks(languages)]
    names = sorted({t.family for t in held})[: args.heldout]
    held = [t for t in held if t.family in names]
    epochs = [float(e) for e in (args.max_epochs or str(preset.train.max_epochs)).split(",")]
    runs: list[tuple[str, str, float]] = [("base", "base", 0.0)]
    for variant in args.variants.split(","):
        for max_epochs in epochs:
            label = variant if len(epochs) == 1 else f"{variant}, max_epochs {max_epochs:g}"
            runs.append((label, variant, max_epochs))
    results = []
    with tempfile.TemporaryDirectory(prefix="train-prompt-") as scratch:
        for number, (label, variant, max_epochs) in enumerate(runs):
            started = time.monotonic()
            adapter, loss = None, "-"
            if variant != "base":
                folder = Path(scratch) / str(number)
                adapter, report = train(
                    variant_rows(rows, variant),
                    folder,
                    preset,
                    args.steps,
                    args.learning_rate,
                    max_epochs,
                )
                loss = (
                    f"{report['first_loss']:.3f} -> {report['last_loss']:.3f} "
                    f"({report.get('steps', '?')} steps)"
                )
            dev_score = evaluate(preset, adapter, dev)
            held_score = evaluate(preset, adapter, held)
            seconds = time.monotonic() - started
            print(f"{label}: dev {pooled(dev_score):.1f}% held-out {pooled(held_score):.1f}%")
            results.append((label, loss, dev_score, held_score, seconds))
    lines = [
        f"rows: {args.rows} ({len(rows)} verified rows, sha256 "
        f"{store.sha256_file(args.rows)[:12]}); LoRA r{preset.train.rank}, lr "
        f"{args.learning_rate}, at most {args.steps} steps and max_epochs as labelled, seed {preset.seed}; greedy, "
        f"inference recipe {recipe.PROMPT_VERSION}.",
        f"dev: {len(dev)} tier-1 development tasks; held-out: {len(held)} tasks "
        f"({len(names)} non-curriculum problems x {len(languages)} languages).",
        "",
        "| trained under | loss first -> last | dev pass@1 | held-out pass@1 | dev per language"
        " | held-out per language | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for variant, loss, dev_score, held_score, seconds in results:
        lines.append(
            f"| {variant} | {loss} | {pooled(dev_score):.1f}% | {pooled(held_score):.1f}% | "
            f"{cells(dev_score, languages)} | {cells(held_score, languages)} | {seconds:.0f} |"
        )
    record("Training conversation and schedule (bench/train_prompt.py)", lines)


if __name__ == "__main__":
    main()
