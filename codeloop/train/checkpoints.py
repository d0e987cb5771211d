"""Checkpoints a crashed or paused run resumes from, and what binds them to their inputs.

The Trainer writes a checkpoint folder file by file, so a run killed mid-save
leaves a folder that looks like a checkpoint but is not one. codeloop writes a
marker (`codeloop-checkpoint.json`, atomically) into each folder only after the
Trainer finished saving it; a folder without the marker is incomplete and is
removed before resuming. The marker also carries the run's binding (dataset
sha256, base model, parent adapter, every training setting), so `--resume` on
different inputs is refused instead of silently mixing two runs.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from codeloop import store
from codeloop.errors import IntegrityError

MARKER = "codeloop-checkpoint.json"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def checkpoint_folders(output: Path) -> list[tuple[int, Path]]:
    """(step, folder) of every `checkpoint-N` folder in `output`, ascending by step."""
    if not output.is_dir():
        return []
    found = []
    for child in output.iterdir():
        match = _CHECKPOINT.match(child.name)
        if match and child.is_dir():
            found.append((int(match.group(1)), child))
    return sorted(found)


def write_marker(folder: Path, binding: dict[str, Any], step: int, train_seconds: float) -> None:
    """Mark a checkpoint folder complete; called after the Trainer saved everything in it."""
    store.write_json(
        folder / MARKER,
        {
            "binding_sha256": store.sha256_json(binding),
            "binding": binding,
            "step": step,
            "train_seconds": train_seconds,
        },
    )


def latest_complete(output: Path) -> tuple[Path, dict[str, Any]] | None:
    """The newest checkpoint with a marker, and the marker; None when there is none."""
    for _step, folder in reversed(checkpoint_folders(output)):
        marker = store.read(folder / MARKER, None)
        if marker is not None:
            return folder, marker
    return None


def remove_incomplete(output: Path) -> list[Path]:
    """Delete checkpoint folders without a marker (a save cut short); returns them."""
    removed = []
    for _step, folder in checkpoint_folders(output):
        if not (folder / MARKER).is_file():
            shutil.rmtree(folder)
            removed.append(folder)
    return removed


def remove_all(output: Path) -> None:
    """Delete every checkpoint folder, once the final adapter is written."""
    for _step, folder in checkpoint_folders(output):
        shutil.rmtree(folder)


def check_binding(folder: Path, marker: dict[str, Any], binding: dict[str, Any]) -> None:
    """Refuse to resume a checkpoint written for other inputs or settings, naming them."""
    if marker.get("binding_sha256") == store.sha256_json(binding):
        return
    saved = marker.get("binding") or {}
    differ = sorted(
        key for key in binding.keys() | saved.keys() if binding.get(key) != saved.get(key)
    )
    raise IntegrityError(
        f"{folder}: this checkpoint belongs to a run with other inputs or settings "
        f"(differ: {', '.join(differ) or 'binding'}); resume with the original ones, "
        "or delete the checkpoint folders to start over"
    )
