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
  breadth    the recipe rows, at most one per (language, family): many rows of one
             family (three "x + K" tasks) teach that family's shape, not the contract.
With `--parent ADAPTER` every variant trains on from that adapter (as a round's
candidate does from the retained model) and the parent is the first row. With
`--audit ROUND` the stdio tasks of that round's audit (audit-tasks.json) are scored
too, to see which training keeps what the parent passed there.
A variant may carry its own schedule: `recipe@lr=5e-5`, `recipe@steps=8` (learning
rate, optimizer steps). `--cache FILE` keeps scores by adapter sha256 and task set
between runs (the parent need not be measured again).
With `--max-epochs 2,8` every variant is also trained once per epoch cap (few rows
at a low cap make only a few optimizer steps). Base and every adapter are then
evaluated greedy, with the inference recipe, on
tier-1 development tasks (never trained on) and on held-out problems that are no
curriculum family (bench/devset.py). Appends a table to bench/RESULTS.md.

    .venv/bin/python -m bench.experiments.train_prompt --rows sessions/S/round-000004/train.jsonl
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench import devset
from bench.learning import cells, evaluate, pooled, verdicts
from bench.results import record
from bench.shared import dev_tasks
from codeloop import recipe, store
from codeloop.config import load_preset
from codeloop.engines.base import adapter_sha256
from codeloop.store import sha256_json
from codeloop.tasks.schema import Task
from codeloop.train.trainer import TrainRequest, run


def task_families(rows_path: Path) -> dict[str, str]:
    """task id -> family, from the tasks.json of every round beside `rows_path`."""
    families = {}
    for tasks in rows_path.resolve().parent.parent.glob("round-*/tasks.json"):
        for task in store.read(tasks)["train"]:
            families[task["id"]] = task["family"]
    return families


def variant_rows(rows: list[dict], variant: str, families: dict[str, str]) -> list[dict]:
    """`rows` with their conversation rebuilt for `variant` (answers unchanged)."""
    if variant == "recipe":
        return rows
    if variant == "breadth":
        seen, kept = set(), []
        for row in rows:
            key = (row["language"], families.get(row["task_id"], row["task_id"]))
            if key not in seen:
                seen.add(key)
                kept.append(row)
        return kept
    out = []
    for row in rows:
        turns = row["messages"]
        out.append({**row, "messages": [turns[0], *turns[-2:]]})
    return out


def train(
    rows: list[dict],
    folder: Path,
    preset,
    steps: int,
    learning_rate: float,
    max_epochs: float,
    parent: Path | None = None,
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
            initial_adapter=parent,
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


def audit_verdicts(preset, adapter: Path | None, tasks: list[Task]) -> set[str]:
    """Ids of the audit tasks the model passes, greedy."""
    if not tasks:
        return set()
    return {task.id for task, ok in zip(tasks, verdicts(preset, adapter, tasks), strict=True) if ok}


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
    parser.add_argument("--parent", type=Path, default=None, help="adapter to train on from")
    parser.add_argument(
        "--audit",
        type=Path,
        default=None,
        help="a round folder: also score its audit's stdio tasks",
    )
    parser.add_argument("--no-dev", action="store_true", help="skip the tier-1 development tasks")
    parser.add_argument("--cache", type=Path, default=None, help="JSON file of scores to reuse")
    args = parser.parse_args()
    if args.rows is None:
        args.rows = newest_rows(Path(__file__).resolve().parents[2] / "sessions")
        if args.rows is None:
            print("bench/train_prompt.py: skipped: no round with 8+ verified rows under sessions/")
            print("  (run bench/learning.py first, or pass --rows a round's train.jsonl)")
            return
    preset = load_preset("cpu-demo")
    languages = list(preset.tasks.languages)
    rows = [json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()]
    dev = [task for task, _ in dev_tasks(languages, 1, preset.tasks.salt, preset.tasks.splits)]
    if args.no_dev:
        dev = []
    audit = []
    if args.audit:
        audit = [
            Task.model_validate(task)
            for task in store.read(args.audit / "audit-tasks.json")["tasks"]
            if task["kind"] == "stdio"
        ]
    families = task_families(args.rows)
    held = [t for t in devset.tasks(languages)]
    names = sorted({t.family for t in held})[: args.heldout]
    held = [t for t in held if t.family in names]
    epochs = [float(e) for e in (args.max_epochs or str(preset.train.max_epochs)).split(",")]
    runs: list[tuple[str, str, float]] = [("parent" if args.parent else "base", "base", 0.0)]
    for variant in args.variants.split(","):
        for max_epochs in epochs:
            label = variant if len(epochs) == 1 else f"{variant}, max_epochs {max_epochs:g}"
            runs.append((label, variant, max_epochs))
    cache = store.read(args.cache, {}) if args.cache and args.cache.exists() else {}
    task_set = sha256_json(
        [recipe.PROMPT_VERSION, [t.id for t in dev], [t.id for t in held], [t.id for t in audit]]
    )

    def scores(adapter: Path | None) -> tuple[dict, dict, set[str]]:
        key = f"{adapter_sha256(adapter) if adapter else 'base'}:{task_set}"
        if key not in cache:
            dev_score = evaluate(preset, adapter, dev) if dev else {}
            held_score = evaluate(preset, adapter, held)
            cache[key] = [dev_score, held_score, sorted(audit_verdicts(preset, adapter, audit))]
            if args.cache:
                store.write_json(args.cache, cache)
        dev_score, held_score, passed = cache[key]
        return dev_score, held_score, set(passed)

    results = []
    with tempfile.TemporaryDirectory(prefix="train-prompt-") as scratch:
        for number, (label, variant, max_epochs) in enumerate(runs):
            started = time.monotonic()
            adapter, loss = args.parent, "-"
            if variant != "base":
                folder = Path(scratch) / str(number)
                name, *options = variant.split("@")
                schedule = dict(option.split("=", 1) for option in options)
                trained_rows = variant_rows(rows, name, families)
                adapter, report = train(
                    trained_rows,
                    folder,
                    preset,
                    int(schedule.get("steps", args.steps)),
                    float(schedule.get("lr", args.learning_rate)),
                    max_epochs,
                    args.parent,
                )
                loss = (
                    f"{report['first_loss']:.3f} -> {report['last_loss']:.3f} "
                    f"({report.get('steps', '?')} steps, {len(trained_rows)} rows)"
                )
            dev_score, held_score, audit_passed = scores(adapter)
            seconds = time.monotonic() - started
            print(
                f"{label}: dev {pooled(dev_score):.1f}% held-out {pooled(held_score):.1f}%"
                f" audit {sorted(audit_passed)}",
                flush=True,
            )
            results.append((label, loss, dev_score, held_score, audit_passed, seconds))
    parent_audit = results[0][4]
    lines = [
        f"rows: {args.rows} ({len(rows)} verified rows, sha256 "
        f"{store.sha256_file(args.rows)[:12]}); LoRA r{preset.train.rank}, lr "
        f"{args.learning_rate}, at most {args.steps} steps and max_epochs as labelled, seed {preset.seed}; greedy, "
        f"inference recipe {recipe.PROMPT_VERSION}.",
        f"dev: {len(dev)} tier-1 development tasks; held-out: {len(held)} tasks "
        f"({len(names)} non-curriculum problems x {len(languages)} languages)."
        + (f" Trained on from parent {args.parent}." if args.parent else "")
        + (
            f" Audit: the {len(audit)} stdio tasks of {args.audit}/audit-tasks.json"
            " (gained/lost against the first row)."
            if audit
            else ""
        ),
        "",
        "| trained under | loss first -> last | dev pass@1 | held-out pass@1 | audit passed"
        " (gained/lost) | dev per language | held-out per language | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for variant, loss, dev_score, held_score, audit_passed, seconds in results:
        gained, lost = len(audit_passed - parent_audit), len(parent_audit - audit_passed)
        lines.append(
            f"| {variant} | {loss} | {pooled(dev_score):.1f}% | {pooled(held_score):.1f}% | "
            f"{len(audit_passed)}/{len(audit)} (+{gained}/-{lost}) | "
            f"{cells(dev_score, languages)} | {cells(held_score, languages)} | {seconds:.0f} |"
        )
    record("Training conversation and schedule (bench/train_prompt.py)", lines)


if __name__ == "__main__":
    main()
