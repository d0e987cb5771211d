"""The session commands: `run`, `status`, `verify`, `export-dataset`, `report`, and the
internal `phase` (hidden from the help: the launcher runs it).

Every one of them names its session folder with `--session`/`-s` (default
sessions/default). `verify` and `export-dataset` also still take it positionally,
the older form: hidden from their help, and it warns.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

import typer
from rich.console import Console
from typer.core import TyperCommand

from codeloop import config as session_config
from codeloop import store
from codeloop.errors import CodeloopError, ConfigError
from codeloop.loop import display
from codeloop.loop.common import PHASES, install_stop_handler, status
from codeloop.loop.launcher import (
    EXIT_CRASH,
    Launcher,
    die_with_launcher,
    open_session,
    phase_lock,
)

out = Console()
DEFAULT_SESSION = Path("sessions/default")


class SessionCommand(TyperCommand):
    """A command whose hidden arguments (the deprecated positional session) stay out of
    its usage line too, not only out of its help's argument list."""

    def collect_usage_pieces(self, ctx: typer.Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if not getattr(param, "hidden", False):
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


def _session(option: Path | None, positional: Path | None, command: str) -> Path:
    """The session folder of `--session`, or of the deprecated positional form."""
    if positional is None:
        return option or DEFAULT_SESSION
    if option is not None and option != positional:
        raise ConfigError(f"codeloop {command}: two sessions, {positional} and --session {option}")
    typer.echo(
        f"codeloop {command}: a positional session folder is deprecated; "
        f"use --session {positional}",
        err=True,
    )
    return positional


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
    session: Path = typer.Option(..., "--session", "-s", help="Session folder."),
    number: int = typer.Option(..., "--round", min=1, help="Round number."),
    name: str = typer.Option(..., "--phase", help=f"One of: {', '.join(PHASES)}."),
    resume: bool = typer.Option(False, "--resume", help="Continue partial work."),
) -> None:
    """Run one phase of one round (the launcher calls this)."""
    from codeloop.loop.phases import run_phase

    die_with_launcher()
    install_stop_handler()
    try:
        with phase_lock(store.SessionPaths(session.resolve())):
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
    """Every round's table (pass@1, gate, decision), and the heartbeat of an unfinished one."""
    paths = store.SessionPaths(session)
    if not paths.config.exists():
        raise CodeloopError(f"{paths.root}: not a codeloop session (no config.toml)")
    current = status(paths)
    rounds = paths.rounds()
    out.print(f"session {paths.root.resolve()}", highlight=False)
    out.print(f"retained adapter: {current.get('retained_adapter') or 'base model'}")
    if not rounds:
        out.print("no round started yet")
    for number in rounds:
        folder = paths.round(number)
        done = display.phases_done(folder)
        line = f"round {number}: {len(done)}/{len(PHASES)} phases done"
        if number == rounds[-1] and paths.pause_file.exists():
            line += " (PAUSE file present)"
        out.print()
        out.print(line, highlight=False)
        out.print(display.round_view(folder))
        beat = store.read_progress(folder)
        if beat and "finish" not in done:
            totals = display.phase_totals(folder, beat.get("phase", ""))
            out.print(
                f"last heartbeat: {display.heartbeat_line(beat, totals)}, "
                f"{store.heartbeat_age(beat):.0f} s ago",
                highlight=False,
            )
    out.print(f"checked at {time.strftime('%Y-%m-%d %H:%M:%S')}")


def verify(
    session_option: Path | None = typer.Option(
        None, "--session", "-s", help=f"Session folder (default {DEFAULT_SESSION})."
    ),
    recheck: bool = typer.Option(
        False,
        "--recheck",
        help="Also run every training row's program, and every recorded validation, audit and "
        "confirmation answer, again in the sandbox.",
    ),
    positional: Path | None = typer.Argument(None, hidden=True, metavar="SESSION"),
) -> None:
    """Recompute a session's recorded sha256s and re-check its invariants; exit 1 on any
    violation."""
    from rich.table import Table

    from codeloop.loop.verify import verify_session

    session = _session(session_option, positional, "verify")
    findings = verify_session(session, recheck=recheck)
    table = Table(title=f"codeloop verify {session}")
    for column in ("round", "check", "result", "detail"):
        table.add_column(column)
    grouped: dict[tuple[int | None, str], list] = {}
    for finding in findings:
        grouped.setdefault((finding.round, finding.check), []).append(finding)
    for (number, check), items in grouped.items():
        failed = [f for f in items if not f.ok]
        result = "[red]VIOLATED[/]" if failed else "[green]ok[/]"
        detail = "; ".join(f.detail for f in failed[:3]) + (
            f" (+{len(failed) - 3} more)" if len(failed) > 3 else ""
        )
        count = f" ({len(items)})" if len(items) > 1 and not failed else ""
        table.add_row("-" if number is None else str(number), check + count, result, detail)
    out.print(table)
    violations = sum(not f.ok for f in findings)
    if violations:
        out.print(f"[red]{violations} violation(s)[/]")
        raise typer.Exit(1)
    out.print(f"[green]every check holds[/] ({len(findings)} checks)")


def export_dataset(
    session_option: Path | None = typer.Option(
        None, "--session", "-s", help=f"Session folder (default {DEFAULT_SESSION})."
    ),
    out: Path = typer.Option(..., "--out", help="New folder for the dataset."),
    positional: Path | None = typer.Argument(None, hidden=True, metavar="SESSION"),
) -> None:
    """Write a session's verified training rows as a Hugging Face dataset folder (parquet
    and a dataset card); refused when `codeloop verify` finds a violation."""
    from codeloop.loop.dataset import export_dataset as write

    session = _session(session_option, positional, "export-dataset")
    summary = write(session, out)
    languages = ", ".join(f"{lang} {n}" for lang, n in summary["languages"].items())
    Console().print(
        f"wrote {summary['rows']} verified rows ({languages}) to {out}; "
        f"load with datasets.load_dataset({str(out)!r})",
        highlight=False,
    )


def report(
    session: Path = typer.Option(DEFAULT_SESSION, "--session", "-s", help="Session folder."),
) -> None:
    """Write SESSION/report.html: curves, decisions, tasks gained and lost (offline page)."""
    from codeloop.loop.report import write_report

    path = write_report(session)
    out.print(f"report: {path.resolve()}", highlight=False)
