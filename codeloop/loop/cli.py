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
from rich.table import Table
from typer.core import TyperCommand

from codeloop import config as session_config
from codeloop import store
from codeloop.errors import CodeloopError, ConfigError
from codeloop.loop import display, origin
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
    made_from = None
    if config is not None:
        made_from = origin.from_file(config)
    elif chosen is not None:
        made_from = origin.from_preset(preset or "cpu-demo", chosen)
    paths = open_session(session, chosen, made_from)
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


def _findings_table(session: Path, findings: list) -> Table:
    """verify's table: one row per (round, check); a failed or trusted one says why."""
    table = Table(title=f"codeloop verify {session}")
    for column in ("round", "check", "result", "detail"):
        table.add_column(column)
    grouped: dict[tuple[int | None, str], list] = {}
    for finding in findings:
        grouped.setdefault((finding.round, finding.check), []).append(finding)
    for (number, check), items in grouped.items():
        failed = [f for f in items if not f.ok]
        trusted = [f for f in items if f.trusted]
        shown = failed or trusted
        if failed:
            result = "[red]VIOLATED[/]"
        else:
            result = "[yellow]on trust[/]" if trusted else "[green]ok[/]"
        detail = "; ".join(f.detail for f in shown[:3]) + (
            f" (+{len(shown) - 3} more)" if len(shown) > 3 else ""
        )
        count = f" ({len(items)})" if len(items) > 1 and not shown else ""
        if trusted and not failed and len(items) > len(trusted):
            count = f" ({len(items) - len(trusted)} ok, {len(trusted)} on trust)"
        table.add_row("-" if number is None else str(number), check + count, result, detail)
    return table


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
    expect_digest: str | None = typer.Option(
        None,
        "--expect-digest",
        help="A round digest saved when it was printed: fail unless it is still one of "
        "the session's finished rounds' digests.",
    ),
    regenerate: int = typer.Option(
        0,
        "--regenerate",
        min=0,
        help="Also ask the recorded weights again for N recorded answers (picked at random, "
        "the seed printed; decisive ones likelier) and compare the text.",
    ),
    seed: int | None = typer.Option(
        None, "--seed", help="The seed of --regenerate's pick (default: a fresh one, printed)."
    ),
    positional: Path | None = typer.Argument(None, hidden=True, metavar="SESSION"),
) -> None:
    """Recompute a session's recorded sha256s, rebuild its config and tasks, and re-check
    its invariants; exit 1 on any violation. What cannot be re-derived is named as taken
    on trust."""
    from codeloop.loop.digest import digests
    from codeloop.loop.verify import verify_session

    session = _session(session_option, positional, "verify")
    if regenerate and seed is None:
        import secrets

        seed = secrets.randbelow(2**31)
    if regenerate:
        out.print(f"regenerate: {regenerate} answers picked with --seed {seed}", highlight=False)
    findings = verify_session(
        session,
        recheck=recheck,
        expect_digest=expect_digest,
        regenerate=regenerate,
        regenerate_seed=seed or 0,
    )
    out.print(_findings_table(session, findings))
    for number, value in digests(session).items():
        out.print(f"round {number} digest {value}", highlight=False)
    violations = sum(not f.ok for f in findings)
    on_trust = sum(f.trusted for f in findings)
    trust_note = f"; {on_trust} taken on trust, named above" if on_trust else ""
    if violations:
        out.print(f"[red]{violations} violation(s)[/]{trust_note}")
        raise typer.Exit(1)
    out.print(f"[green]every check holds[/] ({len(findings) - on_trust} checks{trust_note})")


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
