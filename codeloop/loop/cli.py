"""`codeloop run`, `codeloop phase` and `codeloop status`."""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from codeloop import config as session_config
from codeloop import store
from codeloop.errors import CodeloopError
from codeloop.loop.common import PHASES, install_stop_handler, status
from codeloop.loop.launcher import EXIT_CRASH, Launcher, die_with_launcher, open_session

out = Console()
DEFAULT_SESSION = Path("sessions/default")


def run(
    config: Path | None = typer.Option(None, "--config", "-c", help="Session config TOML."),
    preset: str | None = typer.Option(None, "--preset", "-p", help="cpu-demo or gpu."),
    session: Path = typer.Option(DEFAULT_SESSION, "--session", "-s", help="Session folder."),
    rounds: int = typer.Option(1, "--rounds", min=1, help="Complete rounds 1..N."),
) -> None:
    """Run loop rounds; run it again after a crash or pause and it continues."""
    chosen = session_config.resolve(config, preset) if (config or preset) else None
    paths = open_session(session, chosen)
    out.print(f"session {paths.root}: rounds 1..{rounds}")
    code = Launcher(paths).run(rounds)
    if code:
        raise typer.Exit(code)
    current = status(paths)
    out.print(f"done: retained adapter {current.get('retained_adapter') or 'base model'}")


def phase(
    session: Path = typer.Option(..., "--session", help="Session folder."),
    number: int = typer.Option(..., "--round", min=1, help="Round number."),
    name: str = typer.Option(..., "--phase", help=f"One of: {', '.join(PHASES)}."),
    resume: bool = typer.Option(False, "--resume", help="Continue partial work."),
) -> None:
    """Run one phase of one round (the launcher calls this)."""
    from codeloop.loop.phases import run_phase

    die_with_launcher()
    install_stop_handler()
    try:
        ran = run_phase(session, number, name, resume)
    except CodeloopError:
        raise
    except Exception:  # a crash: the launcher restarts the phase with --resume
        traceback.print_exc()
        sys.exit(EXIT_CRASH)
    out.print(f"round {number} {name}: {'done' if ran else 'already done'}")


def show_status(
    session: Path = typer.Option(DEFAULT_SESSION, "--session", "-s", help="Session folder."),
) -> None:
    """Round, phase, progress, heartbeat age, retained adapter, and the history."""
    paths = store.SessionPaths(session)
    if not paths.config.exists():
        raise CodeloopError(f"{paths.root}: not a codeloop session (no config.toml)")
    current = status(paths)
    rounds = paths.rounds()
    out.print(f"session {paths.root.resolve()}")
    out.print(f"retained adapter: {current.get('retained_adapter') or 'base model'}")
    if rounds:
        number = rounds[-1]
        folder = paths.round(number)
        done = [p for p in PHASES if (folder / f"{p}.json").exists()]
        beat = store.read_progress(folder)
        line = f"round {number}: {len(done)}/{len(PHASES)} phases done"
        if beat:
            age = store.heartbeat_age(beat)
            line += (
                f"; last heartbeat: {beat['phase']} {beat['completed']}/{beat['total']}, "
                f"{age:.0f} s ago"
            )
        if paths.pause_file.exists():
            line += " (PAUSE file present)"
        out.print(line)
    history = current.get("history", [])
    if history:
        table = Table(title="history")
        for column in ("round", "accepted", "decision", "retained adapter"):
            table.add_column(column)
        for entry in history:
            table.add_row(
                str(entry["round"]),
                "yes" if entry["accepted"] else "no",
                entry["decision"],
                entry["retained_adapter"] or "base model",
            )
        out.print(table)
    out.print(f"checked at {time.strftime('%Y-%m-%d %H:%M:%S')}")
