"""`codeloop train`: fine-tune a LoRA adapter on a verified `train.jsonl`.

Settings come from the session config (`--config`, `--preset`, or the cpu-demo
preset) and may be overridden by flags; overrides are validated like the config
file, so a bad flag gets the same `train.rank: ...` message as a bad TOML value.
torch and transformers are imported only when the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from codeloop import config as session_config

FLAGS = {
    "max_steps": "train.steps_per_round",
    "max_epochs": "train.max_epochs",
    "learning_rate": "train.learning_rate",
    "rank": "train.rank",
    "alpha": "train.alpha",
    "dropout": "train.dropout",
    "target_modules": "train.target_modules",
    "batch_size": "train.batch_size",
    "gradient_accumulation": "train.gradient_accumulation",
    "save_steps": "train.save_steps",
    "max_length": "export.max_length",
    "min_examples": "export.min_examples",
    "min_per_language": "export.min_per_language",
    "precision": "engine.precision",
    "languages": "tasks.languages",
}
"""The flags that override a config value: flag -> table.key."""


def _overrides(flags: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The FLAGS that were given, as config values grouped by table (`--rank 8` ->
    train/rank); comma lists (`--languages`, `--target-modules` other than all-linear)
    split."""
    tables: dict[str, dict[str, Any]] = {}
    for flag, value in flags.items():
        if value is None:
            continue
        if flag == "languages" or (flag == "target_modules" and value != "all-linear"):
            value = [name.strip() for name in value.split(",") if name.strip()]
        table, key = FLAGS[flag].split(".")
        tables.setdefault(table, {})[key] = value
    return tables


def train(
    dataset: Path = typer.Option(..., "--dataset", help="train.jsonl written by export."),
    output: Path = typer.Option(..., "--output", help="Adapter folder to write (adapter/)."),
    manifest: Path | None = typer.Option(
        None, "--manifest", help="Manifest of the dataset; default: DATASET.manifest.json."
    ),
    base: str | None = typer.Option(
        None,
        "--base",
        help="Base model: bundled name, GGUF file or HF folder (train.base_model, engine.model).",
    ),
    initial_adapter: Path | None = typer.Option(
        None, "--initial-adapter", help="Parent adapter folder to continue training from."
    ),
    resume: bool = typer.Option(
        False, "--resume", help="Continue from the latest complete checkpoint in OUTPUT."
    ),
    pause_file: Path | None = typer.Option(
        None, "--pause-file", help="If this file exists, checkpoint and exit 0 at the next step."
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="Session config TOML file."),
    preset: str | None = typer.Option(None, "--preset", "-p", help="Bundled preset."),
    seed: int | None = typer.Option(None, "--seed", help="Seed (default: the config's seed)."),
    languages: str | None = typer.Option(
        None, "--languages", help="Comma-separated languages that need min-per-language rows."
    ),
    max_steps: int | None = typer.Option(None, "--max-steps", help="train.steps_per_round"),
    max_epochs: float | None = typer.Option(None, "--max-epochs", help="train.max_epochs"),
    learning_rate: float | None = typer.Option(None, "--learning-rate", help="train.learning_rate"),
    rank: int | None = typer.Option(None, "--rank", help="train.rank"),
    alpha: float | None = typer.Option(None, "--alpha", help="train.alpha"),
    dropout: float | None = typer.Option(None, "--dropout", help="train.dropout"),
    target_modules: str | None = typer.Option(
        None, "--target-modules", help="train.target_modules: all-linear or comma-separated."
    ),
    batch_size: int | None = typer.Option(None, "--batch-size", help="train.batch_size"),
    gradient_accumulation: int | None = typer.Option(
        None, "--gradient-accumulation", help="train.gradient_accumulation"
    ),
    save_steps: int | None = typer.Option(None, "--save-steps", help="train.save_steps"),
    max_length: int | None = typer.Option(None, "--max-length", help="export.max_length"),
    min_examples: int | None = typer.Option(None, "--min-examples", help="export.min_examples"),
    min_per_language: int | None = typer.Option(
        None, "--min-per-language", help="export.min_per_language"
    ),
    precision: str | None = typer.Option(None, "--precision", help="engine.precision"),
    gradient_checkpointing: bool = typer.Option(
        False, "--gradient-checkpointing", help="Trade compute for memory (large models)."
    ),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads for torch."),
) -> None:
    """Fine-tune a LoRA adapter on verified rows (resumable, pausable)."""
    tables = _overrides({flag: value for flag, value in locals().items() if flag in FLAGS})
    resolved = session_config.with_values(
        session_config.resolve(config, preset), tables, "command-line options"
    )
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    from codeloop.train.trainer import TrainRequest, run

    outcome = run(
        TrainRequest(
            dataset=dataset,
            manifest=manifest,
            output=output,
            base=base or resolved.train.base_model or resolved.engine.model,
            train=resolved.train,
            export=resolved.export,
            languages=list(resolved.tasks.languages),
            seed=resolved.seed if seed is None else seed,
            initial_adapter=initial_adapter,
            resume=resume,
            pause_file=pause_file,
            precision=resolved.engine.precision,
            gradient_checkpointing=gradient_checkpointing,
        )
    )
    print(outcome.message, flush=True)
