"""Honest stubs for subcommands whose issue is not done yet: they exist, and exit 2."""

from __future__ import annotations

import typer

from codeloop.errors import NotImplementedYet


def planned(app: typer.Typer, name: str, summary: str, issue: int, full: str) -> None:
    """Register `name` on `app` as a command that accepts any arguments and exits 2."""

    def stub(ctx: typer.Context) -> None:
        raise NotImplementedYet(f"{full}: not implemented yet (issue {issue})")

    app.command(
        name=name,
        help=f"{summary} (not implemented yet)",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(stub)
