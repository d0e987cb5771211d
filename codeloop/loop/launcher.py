"""The launcher: `codeloop run` runs each phase of each round as its own process.

A phase that crashes is restarted with `--resume`, up to `round.max_phase_restarts`
times; a phase that fails with a codeloop error (a broken binding, a bad config)
is not, since running it again would fail the same way. SIGINT/SIGTERM or the
session's PAUSE file are passed on to the phase, which stops at its next safe
point (after the model call or training step under way has been saved); the
launcher then exits and the next `codeloop run` continues where it stopped. If
the launcher itself is killed, its phase dies with it (parent-death signal), so
two processes never work on one round.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from codeloop import config as session_config
from codeloop import store
from codeloop.errors import CodeloopError, ConfigError
from codeloop.loop.common import EXIT_PAUSED, PHASES, status

LAUNCHER_ENV = "CODELOOP_LAUNCHER_PID"
EXIT_CRASH = 70
"""Exit code of a phase that failed unexpectedly (worth a restart with --resume)."""


def die_with_launcher() -> None:
    """Called by a phase process: die if the launcher that started it dies."""
    launcher = os.environ.get(LAUNCHER_ENV)
    if not launcher:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != int(launcher):
        os._exit(EXIT_CRASH)


@contextlib.contextmanager
def session_lock(paths: store.SessionPaths) -> Iterator[None]:
    """One launcher per session at a time."""
    paths.root.mkdir(parents=True, exist_ok=True)
    with open(paths.root / ".launcher.lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"{paths.root}: another codeloop run is using this session") from None
        yield


def open_session(root: Path, config: session_config.SessionConfig | None) -> store.SessionPaths:
    """Create the session folder with its config, or check a given config against it."""
    paths = store.SessionPaths(root.resolve())
    if paths.config.exists():
        saved = session_config.load(paths.config)
        if config is not None and config != saved:
            raise ConfigError(
                f"{paths.config}: this session was started with another config; run without "
                "--config/--preset to continue it, or choose a new --session folder"
            )
    else:
        if config is None:
            config = session_config.load_preset("cpu-demo")
        paths.root.mkdir(parents=True, exist_ok=True)
        store.write_text(paths.config, session_config.dumps(config))
    if not paths.status.exists():
        store.write_json(paths.status, status(paths))
    return paths


class Launcher:
    def __init__(self, paths: store.SessionPaths, console: Console | None = None) -> None:
        self.paths = paths
        self.config = session_config.load(paths.config)
        self.console = console or Console(stderr=True)
        self.child: subprocess.Popen[bytes] | None = None
        self.stopping = False

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stopping = True
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signal.SIGTERM)

    def _spawn(self, number: int, phase: str, resume: bool, progress: Progress) -> int:
        folder = self.paths.round(number)
        folder.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "codeloop",
            "phase",
            "--session",
            str(self.paths.root),
            "--round",
            str(number),
            "--phase",
            phase,
        ]
        if resume:
            command.append("--resume")
        env = {**os.environ, LAUNCHER_ENV: str(os.getpid())}
        bar = progress.add_task(f"round {number} {phase}", total=None)
        with open(folder / "phases.log", "ab") as log:
            log.write(f"\n== {phase}{' --resume' if resume else ''}\n".encode())
            log.flush()
            self.child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
            while self.child.poll() is None:
                if self.paths.pause_file.exists() and not self.stopping:
                    self._on_signal(signal.SIGTERM, None)
                beat = store.read(folder / store.PROGRESS_FILE, None)
                if beat and beat.get("phase") == phase and beat.get("total"):
                    progress.update(bar, completed=beat["completed"], total=beat["total"])
                time.sleep(0.2)
        code = self.child.returncode
        self.child = None
        progress.update(bar, completed=1, total=1, visible=False)
        return code

    def _tail(self, number: int) -> str:
        log = self.paths.round(number) / "phases.log"
        lines = log.read_text(errors="replace").splitlines()[-15:] if log.exists() else []
        return "\n".join(lines)

    def run(self, rounds: int) -> int:
        """Complete rounds 1..`rounds`; 0 when done, EXIT_PAUSED when paused."""
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            with (
                session_lock(self.paths),
                Progress(
                    TextColumn("[bold]{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    console=self.console,
                    transient=True,
                ) as progress,
            ):
                for number in range(1, rounds + 1):
                    for phase in PHASES:
                        if (self.paths.round(number) / f"{phase}.json").exists():
                            continue
                        code = self._run_phase(number, phase, progress)
                        if code:
                            return code
                    self._report(number)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return 0

    def _run_phase(self, number: int, phase: str, progress: Progress) -> int:
        beat = store.read(self.paths.round(number) / store.PROGRESS_FILE, None)
        resume = bool(beat and beat.get("phase") == phase)
        for attempt in range(self.config.round.max_phase_restarts + 1):
            if self.stopping:
                return EXIT_PAUSED
            code = self._spawn(number, phase, resume or attempt > 0, progress)
            if code == 0:
                return 0
            if code == EXIT_PAUSED or self.stopping:
                self.console.print(
                    f"paused in round {number}, phase {phase}; "
                    "run the same command again to continue"
                )
                return EXIT_PAUSED
            if code == 1:
                raise CodeloopError(f"round {number} phase {phase} failed:\n{self._tail(number)}")
            self.console.print(
                f"round {number} phase {phase} crashed (exit {code}); "
                f"restarting with --resume ({attempt + 1})"
            )
        raise CodeloopError(
            f"round {number} phase {phase} kept crashing after "
            f"{self.config.round.max_phase_restarts} restarts:\n{self._tail(number)}"
        )

    def _report(self, number: int) -> None:
        finish = store.read(self.paths.round(number) / "finish.json")
        self.console.print(
            f"round {number}: {finish['decision']} "
            f"(retained adapter: {finish['retained_adapter'] or 'base model'})"
        )
