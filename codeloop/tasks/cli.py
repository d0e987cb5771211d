"""`codeloop data ...`: build and inspect task pools."""

from __future__ import annotations

import typer

from codeloop.cli_stubs import planned

app = typer.Typer(help="Build and inspect task pools.", no_args_is_help=True)

for _name, _summary in {
    "sources": "List the task sources.",
    "build": "Build a validated pool batch from a source.",
    "show": "Show one task.",
    "stats": "Tasks per language, split, tier and family.",
}.items():
    planned(app, _name, _summary, 4, f"codeloop data {_name}")
