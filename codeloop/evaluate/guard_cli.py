"""`codeloop guard rates`: a preset's guard error rates, computed now (not copied).

Each claim of `presets/NAME.claims.toml` is simulated through the decision code
(`evaluate/operating.py`) and printed with its 95% interval and whether it holds.
Results are cached by the fingerprint of everything they depend on (the preset, its
claims and measured inputs, the decision code), so `make demo` prints them at once
after the first time.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from codeloop.evaluate import operating

app = typer.Typer(help="The keep/discard guard: its computed error rates.", no_args_is_help=True)


def _cache() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "codeloop"


@app.command("rates")
def rates(
    preset: str = typer.Option("cpu-demo", "--preset", help="The preset whose claims to compute."),
    fresh: bool = typer.Option(False, "--fresh", help="Compute again, ignoring the cache."),
) -> None:
    """Print the preset's stated guard rates as computed by the simulator now."""
    if not operating.claims_path(preset).is_file():
        raise typer.BadParameter(f"preset {preset!r} states no guard rates (no claims file)")
    found = operating.compute(preset) if fresh else operating.cached(preset, _cache())
    Console().print(rates_table(preset, found))
    if not all(rate.holds for rate in found):
        raise typer.Exit(1)


def rates_table(preset: str, found: list[operating.Rate]) -> Table:
    """The computed rates as printed, one row per claim and case."""
    table = Table(title=f"The guard of preset {preset}: computed error rates")
    for column in ("claim", "rate", "95% interval", "stated", "holds", "samples/side"):
        table.add_column(column)
    for rate in found:
        spent = "" if rate.samples_per_side is None else f"{rate.samples_per_side:.1f}"
        table.add_row(
            escape(rate.claim),  # "[profile]" or "[run]" is text, not Rich markup
            f"{100 * rate.rate:.1f}%",
            f"[{100 * rate.low:.1f}, {100 * rate.high:.1f}]",
            rate.bound,
            "yes" if rate.holds else "NO",
            spent,
        )
    return table
