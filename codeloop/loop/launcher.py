"""The launcher: `codeloop run` runs each phase of each round as its own process.

A phase that crashes is restarted with `--resume`, up to `round.max_phase_restarts`
times; a phase that fails with a codeloop error (a broken binding, a bad config)
is not, since running it again would fail the same way. SIGINT/SIGTERM or the
session's PAUSE file are passed on to the phase, which stops at its next safe
point (after the model call or training step under way has been saved); the
launcher then exits and the next `codeloop run` continues where it stopped. If
the launcher itself is killed, its phase dies with it (parent-death signal), so
two processes never work on one round.

What the user sees (on stderr): while a phase runs, a live bar per phase with the
per-language passed counts of its heartbeat; when a phase ends, one plain line of
what it found; when a round ends, its table (display.round_view). Without a
terminal (CI, a pipe) there is no live part, only those lines and tables.
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
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from codeloop import config as session_config
from codeloop import store
from codeloop.errors import CodeloopError, ConfigError
from codeloop.loop import digest, display, origin
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
def _held(path: Path, busy: str) -> Iterator[None]:
    """An exclusive flock on `path` for the block; ConfigError(busy) when another holds it
    (the kernel drops the lock with its holder, so a killed process never leaves it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(busy) from None
        yield


def session_lock(paths: store.SessionPaths) -> contextlib.AbstractContextManager[None]:
    """One launcher per session at a time."""
    return _held(
        paths.root / ".launcher.lock", f"{paths.root}: another codeloop run is using this session"
    )


def phase_lock(paths: store.SessionPaths) -> contextlib.AbstractContextManager[None]:
    """One phase process per session at a time: the launcher runs them one by one, and a
    second `codeloop phase` started by hand (or by a bench whose parent was killed while
    its phase ran on) would otherwise write the same files at once (two prepares gave a
    pool that holds a task twice)."""
    return _held(
        paths.root / ".phase.lock",
        f"{paths.root}: another codeloop phase is running in this session; wait for it or stop it",
    )


def open_session(
    root: Path,
    config: session_config.SessionConfig | None,
    made_from: dict[str, Any] | None = None,
) -> store.SessionPaths:
    """Create the session folder with its config, or check a given config against it.

    `made_from` (`loop/origin.py`: a preset with its overrides, or a user's file) is
    recorded beside a new config so that `codeloop verify` can rebuild it; without it a
    new session's config is recorded as taken on trust (the caller did not say where it
    came from), except the default preset's, recorded here.
    """
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
            made_from = origin.from_preset("cpu-demo", config)
        paths.root.mkdir(parents=True, exist_ok=True)
        origin.record(
            paths.root,
            made_from or origin.on_trust("made by a caller that did not record its origin"),
        )
        store.write_text(paths.config, session_config.dumps(config))
    if not paths.status.exists():
        store.write_json(paths.status, status(paths))
    return paths


class _PhaseProgress(Progress):
    """Rich's progress bars with the running phase's per-language table below them."""

    detail: RenderableType | None = None

    def get_renderables(self) -> Iterable[RenderableType]:
        yield self.make_tasks_table(self.tasks)
        if self.detail is not None:
            yield self.detail


class LiveView:
    """The launcher's display of one phase at a time, fed from the phase's heartbeat.

    The live part (bar, tasks done / total, passed so far per language) is drawn only
    on a real terminal and is transient; the plain line printed when a phase ends is
    what stays on screen and what a log or CI run gets.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = console.is_terminal and not console.is_dumb_terminal
        self.progress = _PhaseProgress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[note]}", style="dim"),
            console=console,
            transient=True,
            disable=not self.live,
        )
        self.bar: Any = None
        self.totals: dict[str, int] = {}

    def __enter__(self) -> LiveView:
        self.progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.progress.stop()

    def begin(self, number: int, phase: str, folder: Path) -> None:
        """A phase process starts: a fresh bar, and its tasks per language for the table."""
        self.bar = self.progress.add_task(f"round {number} {phase}", total=None, note="")
        self.totals = display.phase_totals(folder, phase)
        self.progress.detail = None

    def beat(self, beat: Mapping[str, Any]) -> None:
        """Show a heartbeat of the running phase."""
        note = beat.get("task") or (f"now {beat['language']}" if beat.get("language") else "")
        self.progress.update(
            self.bar, completed=beat["completed"], total=beat["total"] or None, note=note
        )
        table = display.heartbeat_table(beat, self.totals)
        if table is not None:  # keep the last counts once the final heartbeat drops them
            self.progress.detail = table

    def end(self, number: int, phase: str, folder: Path, code: int) -> None:
        """The phase process exited; a finished phase leaves one line of what it found."""
        if self.bar is not None:
            self.progress.remove_task(self.bar)
            self.bar = None
        self.progress.detail = None
        if code == 0:
            try:
                line = display.phase_line(folder, phase)
            except CodeloopError:  # a display must never stop the run; the next phase checks
                line = f"{phase}: done"
            self.console.print(f"round {number} {line}", highlight=False)


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

    def _command(self, number: int, phase: str, resume: bool) -> list[str]:
        """The phase process's command line."""
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
        return command

    def _spawn(self, number: int, phase: str, resume: bool, view: LiveView) -> int:
        folder = self.paths.round(number)
        folder.mkdir(parents=True, exist_ok=True)
        command = self._command(number, phase, resume)
        env = {**os.environ, LAUNCHER_ENV: str(os.getpid())}
        view.begin(number, phase, folder)
        with open(folder / "phases.log", "ab") as log:
            log.write(f"\n== {phase}{' --resume' if resume else ''}\n".encode())
            log.flush()
            self.child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
            while self.child.poll() is None:
                if self.paths.pause_file.exists() and not self.stopping:
                    self._on_signal(signal.SIGTERM, None)
                beat = store.read(folder / store.PROGRESS_FILE, None)
                if beat and beat.get("phase") == phase and beat.get("total"):
                    view.beat(beat)
                time.sleep(0.2)
        code = self.child.returncode
        self.child = None
        view.end(number, phase, folder, code)
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
            with session_lock(self.paths), LiveView(self.console) as view:
                for number in range(1, rounds + 1):
                    for phase in PHASES:
                        if (self.paths.round(number) / f"{phase}.json").exists():
                            continue
                        code = self._run_phase(number, phase, view)
                        if code:
                            return code
                    self.console.print(display.round_view(self.paths.round(number)))
                    self._print_digest(number)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return 0

    def _print_digest(self, number: int) -> None:
        """The round's root digest over the whole chain (`loop/digest.py`): saved outside
        the session, it shows any later rewrite (`codeloop verify --expect-digest`)."""
        value = digest.round_digest(self.paths.root, number)
        if value is not None:
            self.console.print(
                f"round {number} digest {value} (save it; codeloop verify --session "
                f"{self.paths.root} --expect-digest {value} checks it later)",
                highlight=False,
                soft_wrap=True,
            )

    def _paused(self, number: int, phase: str) -> int:
        self.console.print(
            f"paused in round {number}, phase {phase}; run the same command again to continue"
        )
        return EXIT_PAUSED

    def _run_phase(self, number: int, phase: str, view: LiveView) -> int:
        beat = store.read(self.paths.round(number) / store.PROGRESS_FILE, None)
        resume = bool(beat and beat.get("phase") == phase)
        for attempt in range(self.config.round.max_phase_restarts + 1):
            if self.stopping:
                return self._paused(number, phase)
            code = self._spawn(number, phase, resume or attempt > 0, view)
            if code == 0:
                return 0
            if code == EXIT_PAUSED or self.stopping:
                return self._paused(number, phase)
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
