"""The `codeloop` command.

Errors the user can act on (`CodeloopError`) are printed as one plain message and
exit 1 (2 for commands not built yet); `--debug` shows the traceback too. Each
subcommand of DESIGN.md exists from day one; those whose issue is still open say
so and exit 2 instead of pretending to work.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from codeloop import __version__
from codeloop import config as session_config
from codeloop.errors import CodeloopError, NotImplementedYet

app = typer.Typer(
    name="codeloop",
    help="Verified self-training for code models: train only on answers that passed real tests.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
config_app = typer.Typer(help="Show, check and document session configs.", no_args_is_help=True)
data_app = typer.Typer(help="Build and inspect task pools.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(data_app, name="data")

out = Console()
err = Console(stderr=True)
_state = {"debug": os.environ.get("CODELOOP_DEBUG") == "1"}

# Subcommands whose owning issue is not done yet: name -> (group, what it will do, issue).
_PLANNED: dict[tuple[str | None, str], tuple[str, int]] = {
    (None, "run"): ("Run loop rounds: prepare, collect, export, train, evaluate, gate, audit.", 7),
    (None, "phase"): ("Run one phase of one round (the launcher calls this).", 7),
    (None, "status"): ("Show a session's round, phase, progress and history.", 7),
    (None, "report"): ("Write the HTML report of a session.", 7),
    (None, "verify"): ("Re-verify a session's saved answers and artifact hashes.", 7),
    (None, "check"): ("Check a program against test cases in the sandbox.", 3),
    (None, "doctor"): ("Check toolchains, sandbox and engines on this machine.", 3),
    (None, "eval"): ("Evaluate samples on a benchmark suite (HumanEval, HumanEval-X).", 3),
    (None, "train"): ("Fine-tune a LoRA adapter on verified rows.", 6),
    (None, "export-dataset"): ("Export a session's verified training rows.", 7),
    ("data", "sources"): ("List the task sources.", 4),
    ("data", "build"): ("Build a validated pool batch from a source.", 4),
    ("data", "show"): ("Show one task.", 4),
    ("data", "stats"): ("Tasks per language, split, tier and family.", 4),
}


def _register_planned() -> None:
    """Register each planned subcommand as an honest stub that exits 2."""
    for (group, name), (summary, issue) in _PLANNED.items():
        target = data_app if group == "data" else app
        full = f"codeloop {group + ' ' if group else ''}{name}"

        def stub(
            ctx: typer.Context, _full: str = full, _issue: int = issue
        ) -> None:  # args are accepted and ignored
            raise NotImplementedYet(f"{_full}: not implemented yet (issue {_issue})")

        target.command(
            name=name,
            help=f"{summary} (not implemented yet)",
            context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        )(stub)


def _version(value: bool) -> None:
    if value:
        out.print(f"codeloop {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors."),
) -> None:
    """Verified self-training for code models."""
    _state["debug"] = _state["debug"] or debug


ConfigOption = typer.Option(None, "--config", "-c", help="Session config TOML file.")
PresetOption = typer.Option(None, "--preset", "-p", help="Bundled preset: cpu-demo or gpu.")


@config_app.command("show")
def config_show(
    config: Path | None = ConfigOption,
    preset: str | None = PresetOption,
) -> None:
    """Print the full config (defaults filled in) of a file or preset as TOML."""
    resolved = session_config.resolve(config, preset)
    out.print(session_config.dumps(resolved), markup=False, highlight=False, end="")


@config_app.command("check")
def config_check(path: Path = typer.Argument(..., help="Config TOML file to validate.")) -> None:
    """Validate a config file; lists every wrong field with its dotted path."""
    loaded = session_config.load(path)
    languages = ", ".join(loaded.tasks.languages)
    out.print(f"{path}: valid (engine {loaded.engine.kind}, languages {languages})")


@config_app.command("fields")
def config_fields() -> None:
    """Document every config field: dotted name, default and meaning."""
    table = Table(title="codeloop session config", show_lines=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("default")
    table.add_column("meaning")
    for name, default, description in session_config.field_docs():
        table.add_row(name, default, description)
    out.print(table)


@config_app.command("presets")
def config_presets() -> None:
    """List the bundled presets."""
    for name in session_config.preset_names():
        out.print(name)


_register_planned()


def main() -> None:
    """Entry point of the console script; turns `CodeloopError` into a message and exit code."""
    try:
        app()
    except CodeloopError as error:
        if _state["debug"]:
            raise
        err.print(f"error: {error}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(error.exit_code)
