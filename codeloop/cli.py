"""The `codeloop` command.

Errors the user can act on (`CodeloopError`) are printed as one plain message and
a non-zero exit code; `--debug` shows the traceback too.
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
from codeloop.errors import CodeloopError
from codeloop.evaluate.cli import eval_command
from codeloop.evaluate.guard_cli import app as guard_app
from codeloop.loop import cli as loop_cli
from codeloop.reward.grpo import grpo_command
from codeloop.sandbox import cli as sandbox_cli
from codeloop.serve import cli as serve_cli
from codeloop.tasks.cli import app as data_app
from codeloop.train.cli import train as train_command
from codeloop.train.determinism import use_reproducible_math

app = typer.Typer(
    name="codeloop",
    help="Verified self-training for code models: train only on answers that passed real tests.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
config_app = typer.Typer(help="Show, check and document session configs.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(data_app, name="data")
app.add_typer(guard_app, name="guard")
app.command("run")(loop_cli.run)
app.command("phase", hidden=True)(loop_cli.phase)  # the launcher's; bench scripts call it
app.command("status")(loop_cli.show_status)
app.command("verify", cls=loop_cli.SessionCommand)(loop_cli.verify)
app.command("export-dataset", cls=loop_cli.SessionCommand)(loop_cli.export_dataset)
app.command("report")(loop_cli.report)
app.command("check")(sandbox_cli.check)
app.command("doctor")(sandbox_cli.doctor)
app.command("serve")(serve_cli.serve)
app.command("train")(train_command)
app.command("grpo")(grpo_command)

out = Console()
err = Console(stderr=True)
_state = {"debug": os.environ.get("CODELOOP_DEBUG") == "1"}

app.command("eval")(eval_command)


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


def main() -> None:
    """Entry point of the console script; turns `CodeloopError` into a message and exit code."""
    use_reproducible_math()  # before any command loads torch (train, engines)
    try:
        app()
    except CodeloopError as error:
        if _state["debug"]:
            raise
        err.print(f"error: {error}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(error.exit_code)
