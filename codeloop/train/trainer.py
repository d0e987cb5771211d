"""One LoRA SFT run: checked rows in, `adapter/` and `adapter/training.json` out.

The run is a function of its binding (dataset sha256, base model, parent adapter,
seed, every setting), so it can stop at any instant and be resumed to the same
weights. TRL's `SFTTrainer` does the optimisation; codeloop hands it rows that are
already tokenized and labelled (`encode_rows`), in an order fixed up front
(`schedule.plan`), so the answer-only loss and the data order never depend on
TRL's dataset preparation or on global random state.

Heavy imports (torch, transformers, peft, trl) happen inside `run`, so that the
CLI and `import codeloop.train` stay fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop import store
from codeloop.config import ExportConfig, TrainConfig
from codeloop.engines.base import adapter_sha256
from codeloop.errors import ConfigError, IntegrityError
from codeloop.train import checkpoints, schedule
from codeloop.train.dataset import Dataset, check_counts, load_dataset
from codeloop.train.determinism import use_reproducible_math
from codeloop.train.encode import Encoded, encode_rows
from codeloop.train.model import ModelSource, resolve_dtype, resolve_model

TRAINING_FILE = "training.json"
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


@dataclass
class TrainRequest:
    """Everything one run needs; the CLI builds it from flags and the session config."""

    dataset: Path
    output: Path
    base: str
    train: TrainConfig
    export: ExportConfig
    languages: list[str]
    seed: int
    manifest: Path | None = None
    initial_adapter: Path | None = None
    resume: bool = False
    pause_file: Path | None = None
    precision: str = "auto"
    gradient_checkpointing: bool = False
    echo: bool = True


@dataclass
class TrainOutcome:
    """How a run ended: `completed`, `paused` or `already-done`."""

    status: str
    output: Path
    steps: int
    max_steps: int
    message: str
    report: dict[str, Any] = field(default_factory=dict)


def _say(request: TrainRequest, line: str) -> None:
    if request.echo:
        print(line, flush=True)


def lora_settings(train: TrainConfig) -> dict[str, Any]:
    """The LoRA part of the config, in PEFT's spelling."""
    return {
        "r": train.rank,
        "lora_alpha": train.alpha,
        "lora_dropout": train.dropout,
        "target_modules": train.target_modules,
    }


def _binding(
    request: TrainRequest,
    dataset: Dataset,
    source: ModelSource,
    encoded: Encoded,
    plan: schedule.Plan,
    parent_sha256: str | None,
) -> dict[str, Any]:
    return {
        "dataset_sha256": dataset.sha256,
        "base_model": source.identity(),
        "initial_adapter_sha256": parent_sha256,
        "seed": request.seed,
        # where metrics are reported does not change the weights
        "train": request.train.model_dump(mode="json", exclude={"report_to"}),
        "max_length": request.export.max_length,
        "rows_used": len(encoded.examples),
        "steps": plan.steps,
        "dtype": resolve_dtype(request.precision),
        "gradient_checkpointing": request.gradient_checkpointing,
    }


def _finished(output: Path, dataset_sha256: str) -> dict[str, Any] | None:
    """The saved report if `output` already holds a finished adapter of this dataset."""
    report = store.read(output / TRAINING_FILE, None)
    if report is None:
        return None
    if report.get("dataset_sha256") != dataset_sha256:
        raise IntegrityError(
            f"{output / TRAINING_FILE}: this adapter was trained on dataset "
            f"{report.get('dataset_sha256')}, not {dataset_sha256}; use another --output"
        )
    if not all((output / name).is_file() for name in ADAPTER_FILES):
        raise IntegrityError(
            f"{output}: {TRAINING_FILE} exists but the adapter files are missing; "
            "delete the folder and train again"
        )
    return report


def _parent_sha256(parent: Path | None) -> str | None:
    """Identity of the parent adapter: its weights and config, as the engines hash it."""
    if parent is None:
        return None
    if not (parent / "adapter_config.json").is_file():
        raise ConfigError(f"{parent}: not a PEFT adapter folder (no adapter_config.json)")
    return adapter_sha256(parent)


def prepare(request: TrainRequest, dataset: Dataset) -> tuple[Any, Encoded]:
    """Check row counts and encode the rows; everything here can refuse before training."""
    limits = {
        "min_examples": request.export.min_examples,
        "min_per_language": request.export.min_per_language,
        "languages": request.languages,
    }
    check_counts(dataset.languages(), origin=str(dataset.path), **limits)
    from codeloop.train.model import load_tokenizer

    tokenizer = load_tokenizer(resolve_model(request.base))
    encoded = encode_rows(tokenizer, dataset.rows, request.export.max_length)
    _say(request, f"{dataset.path}: {encoded.report()}")
    note = f" after dropping {encoded.dropped_count} too long" if encoded.dropped else ""
    check_counts(encoded.languages(), origin=str(dataset.path), note=note, **limits)
    return tokenizer, encoded


def run(request: TrainRequest) -> TrainOutcome:
    """Train (or resume, or recognise as done) one adapter; see the module docstring."""
    use_reproducible_math()  # effective where torch is not loaded yet (a fresh process)
    try:
        return _run(request)
    finally:
        _leave_process_group()


def _leave_process_group() -> None:
    """Under torchrun, ranks leave together and destroy their process group.

    A rank that exits while rank 0 still writes the adapter, with its gloo group
    alive, can abort in the group's destructor ("terminate called without an active
    exception"), which torchrun reports as a failed run (seen once in `make test`).
    """
    dist = sys.modules.get("torch.distributed")  # a run that never trained imports none
    if dist is not None and dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def _run(request: TrainRequest) -> TrainOutcome:
    wall_start = time.monotonic()
    output = request.output
    dataset = load_dataset(request.dataset, request.manifest)
    done = _finished(output, dataset.sha256)
    if done is not None:
        return TrainOutcome(
            "already-done",
            output,
            done["steps"],
            done["steps"],
            f"{output}: already trained on this dataset ({done['steps']} steps); nothing to do",
            done,
        )
    tokenizer, encoded = prepare(request, dataset)
    source = resolve_model(request.base)
    train = request.train
    plan = schedule.plan(
        len(encoded.examples),
        seed=request.seed,
        # under torchrun each of WORLD_SIZE processes takes its own share of a step
        rows_per_step=train.batch_size * train.gradient_accumulation * _world_size(),
        max_steps=train.steps_per_round,
        max_epochs=train.max_epochs,
    )
    parent_sha256 = _parent_sha256(request.initial_adapter)
    binding = _binding(request, dataset, source, encoded, plan, parent_sha256)
    resume_from = _resume_point(request, output, binding)

    from codeloop.train import control, sft

    prior = float(resume_from[1]["train_seconds"]) if resume_from else 0.0
    run_control = control.RunControl(output, binding, request.pause_file, prior, request.echo)
    checkpoint = str(resume_from[0]) if resume_from else None
    trainer = _fit(request, source, tokenizer, encoded, plan, run_control, checkpoint)
    step = trainer.state.global_step
    if step < plan.steps:
        reason = run_control.paused_by or "training stopped early"
        return TrainOutcome(
            "paused",
            output,
            step,
            plan.steps,
            f"paused at step {step}/{plan.steps} ({reason}); checkpoint saved in "
            f"{output / f'checkpoint-{step}'}; run again with --resume to continue",
        )
    if not trainer.is_world_process_zero():  # the main process writes the adapter
        return TrainOutcome("completed", output, step, plan.steps, f"rank done at step {step}")
    report = _report(
        request,
        dataset,
        source,
        encoded,
        plan,
        binding,
        trainer,
        run_control,
        checkpoint,
        wall_start,
    )
    with sft.quiet_library_warnings():
        _save_adapter(trainer.model, output, report)
    checkpoints.remove_all(output)
    store.write_progress(output, "train", step, plan.steps, completed_run=True)
    return TrainOutcome(
        "completed",
        output,
        step,
        plan.steps,
        f"{output}: trained {step} steps, loss {report['first_loss']:.4f} -> "
        f"{report['last_loss']:.4f}, {report['tokens_per_s']:.1f} tokens/s",
        report,
    )


def _fit(
    request: TrainRequest,
    source: ModelSource,
    tokenizer: Any,
    encoded: Encoded,
    plan: schedule.Plan,
    run_control: Any,
    checkpoint: str | None,
) -> Any:
    """Build the trainer and train (from `checkpoint` when resuming); the trainer.

    Meanwhile SIGTERM only asks for a pause: one that arrives while the model loads
    takes effect after the first step, with a checkpoint, like any other."""
    from codeloop.train import control, sft

    guard = (
        control.sigterm_pauses(run_control)
        if threading.current_thread() is threading.main_thread()
        else contextlib.nullcontext()
    )
    with guard, sft.quiet_library_warnings():
        trainer = sft.build_trainer(request, source, tokenizer, encoded, plan, run_control)
        if checkpoint:
            _say(request, f"resuming from {checkpoint}")
        trainer.train(resume_from_checkpoint=checkpoint)
    return trainer


def _world_size() -> int:
    """Processes of a torchrun / accelerate launch (1 for a plain run)."""
    return max(1, int(os.environ.get("WORLD_SIZE", "1")))


def _resume_point(
    request: TrainRequest, output: Path, binding: dict[str, Any]
) -> tuple[Path, dict[str, Any]] | None:
    """The checkpoint to resume from, after refusing a mismatched or unasked-for resume."""
    latest = checkpoints.latest_complete(output)
    if not request.resume:
        if latest is not None or checkpoints.checkpoint_folders(output):
            raise IntegrityError(
                f"{output}: holds checkpoints of an earlier run; pass --resume to continue it, "
                "or delete the checkpoint folders to start over"
            )
        return None
    removed = checkpoints.remove_incomplete(output)
    for folder in removed:
        _say(request, f"removed incomplete checkpoint {folder}")
    if latest is None:
        _say(request, f"--resume: no checkpoint in {output}; starting from step 0")
        return None
    checkpoints.check_binding(latest[0], latest[1], binding)
    return latest


def _report(
    request: TrainRequest,
    dataset: Dataset,
    source: ModelSource,
    encoded: Encoded,
    plan: schedule.Plan,
    binding: dict[str, Any],
    trainer: Any,
    run_control: Any,
    resumed_from: str | None,
    wall_start: float,
) -> dict[str, Any]:
    import peft
    import torch
    import transformers
    import trl

    losses = [
        {"step": int(entry["step"]), "loss": float(entry["loss"])}
        for entry in trainer.state.log_history
        if "loss" in entry
    ]
    examples = [encoded.examples[index] for index in plan.order]
    tokens = sum(len(example.input_ids) for example in examples)
    train_seconds = run_control.train_seconds
    model = trainer.model
    return {
        "completed": True,
        "steps": trainer.state.global_step,
        "epochs": plan.epochs,
        "rows_per_step": plan.rows_per_step,
        "examples": len(examples),
        "loss": losses,
        "first_loss": losses[0]["loss"] if losses else float("nan"),
        "last_loss": losses[-1]["loss"] if losses else float("nan"),
        "tokens": tokens,
        "answer_tokens": sum(example.answer_tokens for example in examples),
        "tokens_per_s": tokens / train_seconds if train_seconds > 0 else 0.0,
        "train_seconds": train_seconds,
        "wall_seconds": time.monotonic() - wall_start,
        "seed": request.seed,
        "resumed_from": resumed_from,
        "dataset_sha256": dataset.sha256,
        "dataset": {
            "path": str(dataset.path),
            "manifest": str(dataset.manifest_path),
            "rows": len(dataset.rows),
            "rows_used": len(encoded.examples),
            "dropped_too_long": encoded.dropped_count,
            "dropped_task_ids": [task_id for task_id, _ in encoded.dropped],
            "max_length": encoded.max_length,
            "languages": encoded.languages(),
        },
        "base_model": {
            **source.identity(),
            "model_type": model.config.model_type,
            "parameters": sum(p.numel() for p in model.parameters()),
            "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "dtype": str(next(model.parameters()).dtype).removeprefix("torch."),
        },
        "initial_adapter": (
            {"path": str(request.initial_adapter), "sha256": binding["initial_adapter_sha256"]}
            if request.initial_adapter
            else None
        ),
        "lora": lora_settings(request.train),
        "train_config": request.train.model_dump(mode="json"),
        "binding_sha256": store.sha256_json(binding),
        "device": str(trainer.args.device),
        "host": platform.node(),
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "peft": peft.__version__,
            "trl": trl.__version__,
        },
    }


def _stable_config(data: bytes) -> bytes:
    """adapter_config.json with `target_modules` sorted.

    PEFT keeps target modules in a set and writes it in hash order, which changes
    from process to process; the same training must give the same file.
    """
    config = json.loads(data)
    if isinstance(config.get("target_modules"), list):
        config["target_modules"] = sorted(config["target_modules"])
    return (json.dumps(config, indent=2, sort_keys=True) + "\n").encode()


def _save_adapter(model: Any, output: Path, report: dict[str, Any]) -> None:
    """Write the adapter files atomically, then `training.json` last (it marks completion)."""
    for stale in output.glob(".adapter-*"):
        # What a run killed while writing left behind; it would sit beside the adapter.
        shutil.rmtree(stale, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=".adapter-", dir=output) as temp:
        model.save_pretrained(temp)
        for path in sorted(Path(temp).iterdir()):
            # PEFT also writes a generic README model card; training.json is the record.
            if path.is_file() and path.name != "README.md":
                data = path.read_bytes()
                if path.name == "adapter_config.json":
                    data = _stable_config(data)
                store.write_bytes(output / path.name, data)
    report["adapter_sha256"] = store.sha256_file(output / "adapter_model.safetensors")
    store.write_json(output / TRAINING_FILE, report)
