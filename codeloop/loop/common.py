"""What every phase of a round shares: where its files are, its config, and how it stops.

A phase is killed at any instant and run again with `--resume`; everything it
needs to continue is on disk, written atomically. A SIGTERM (or the session's
pause file) asks it to stop at the next safe point: after the model call or
training step under way has been saved.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from codeloop import store
from codeloop.config import SessionConfig
from codeloop.errors import CodeloopError, IntegrityError
from codeloop.tasks.schema import Task

PHASES: tuple[str, ...] = (
    "prepare",
    "collect",
    "export",
    "baseline",
    "train",
    "candidate",
    "gate",
    "audit-parent",
    "audit-candidate",
    "finish",
)
EXIT_PAUSED = 75
"""Exit code of a phase that stopped cleanly on request (SIGTERM or the pause file)."""


class Paused(CodeloopError):
    """A phase stopped at a safe point because it was asked to."""

    exit_code = EXIT_PAUSED


_stop = {"requested": False}

FAILPOINTS_ENV = "CODELOOP_FAILPOINTS"
"""Tests only: a folder of marker files naming points where a phase dies once."""


def failpoint(name: str) -> None:
    """Die here by SIGKILL, once, when $CODELOOP_FAILPOINTS holds a file `name`.

    Phases that do their work in a blink (finish) cannot be killed in the middle from
    outside reliably; the chaos test plants a failpoint between two of their writes
    instead, and the launcher's crash-restart path must then give the same result.
    """
    folder = os.environ.get(FAILPOINTS_ENV)
    if not folder:
        return
    marker = Path(folder) / name
    try:
        marker.unlink()
    except FileNotFoundError:
        return
    os.kill(os.getpid(), signal.SIGKILL)


def install_stop_handler() -> None:
    """SIGTERM/SIGINT set a flag; phases check it between model calls."""

    def request(_signum: int, _frame: Any) -> None:
        _stop["requested"] = True

    signal.signal(signal.SIGTERM, request)
    signal.signal(signal.SIGINT, request)


@dataclass
class Round:
    """One round of one session."""

    session: store.SessionPaths
    config: SessionConfig
    number: int

    @property
    def folder(self) -> Path:
        return self.session.round(self.number)

    def path(self, name: str) -> Path:
        return self.folder / name

    def progress(self, phase: str, completed: int = 0, total: int = 0, **extra: Any) -> None:
        store.write_progress(self.folder, phase, completed, total, round=self.number, **extra)

    def stop_requested(self) -> bool:
        """A stop was asked for: SIGTERM/SIGINT, or the session's pause file exists."""
        return _stop["requested"] or self.session.pause_file.exists()

    def check_stop(self) -> None:
        """Raise `Paused` if a stop was asked for (signal or the session's pause file)."""
        if self.stop_requested():
            raise Paused(f"round {self.number}: paused at a safe point; run again to continue")

    def phase_done(self, phase: str) -> bool:
        return self.path(f"{phase}.json").exists()

    def result(self, phase: str) -> dict[str, Any]:
        return store.read(self.path(f"{phase}.json"))

    @cached_property
    def assigned(self) -> dict[str, Any]:
        """tasks.json, after checking it is the file prepare wrote."""
        tasks_file = self.path("tasks.json")
        expected = self.result("prepare")["tasks_sha256"]
        if store.sha256_file(tasks_file) != expected:
            raise IntegrityError(
                f"{tasks_file}: the assigned train and validation tasks changed after prepare "
                "(sha256 differs from prepare.json); restore the file or start a new round"
            )
        return store.read(tasks_file)

    def tasks(self, part: str) -> list[Task]:
        return [Task.model_validate(task) for task in self.assigned[part]]

    @property
    def parent(self) -> str | None:
        """The retained adapter this round starts from, relative to the session folder."""
        return self.assigned.get("parent")

    @property
    def parent_path(self) -> str | None:
        """The parent adapter as a path to load (None: the base model)."""
        return None if self.parent is None else str(self.session.root / self.parent)

    @property
    def candidate_adapter(self) -> Path:
        return self.path("adapter")


def status(session: store.SessionPaths) -> dict[str, Any]:
    """The session's status.json (retained adapter and history), created empty if missing."""
    return store.read(session.status, {"retained_adapter": None, "history": []})
