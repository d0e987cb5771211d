"""`codeloop check` and `codeloop doctor`: the sandbox from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from codeloop import config as session_config
from codeloop.errors import CodeloopError, ConfigError
from codeloop.sandbox import dispatch, languages, pool
from codeloop.sandbox.language import version_of
from codeloop.sandbox.languages import LANGUAGES
from codeloop.sandbox.request import Check, CheckRequest

out = Console()
err = Console(stderr=True)


_NEEDS_PROMPT = ", ".join(sorted(name for name, lang in LANGUAGES.items() if lang.needs_prompt))
"""The languages whose function tests need `--prompt` (`Language.needs_prompt`)."""


def _sandbox_settings(config: Path | None) -> session_config.SandboxConfig:
    return session_config.load(config).sandbox if config else session_config.SandboxConfig()


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} file not found") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: {what} file is not valid JSON: {error}") from None


def _read_batch(path: Path) -> list[tuple[str, CheckRequest]]:
    """Parse IN.jsonl; every bad line is reported with its number."""
    items: list[tuple[str, CheckRequest]] = []
    problems: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ConfigError(f"{path}: batch file not found") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            identity = str(row.pop("id"))
            items.append((identity, CheckRequest.model_validate(row)))
        except KeyError:
            problems.append(f"line {number}: missing field 'id'")
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            problems.append(f"line {number}: {where + ': ' if where else ''}{first['msg']}")
        except ValueError as error:
            problems.append(f"line {number}: {str(error).splitlines()[0]}")
    if problems:
        raise ConfigError(f"{path}: bad batch lines:\n  " + "\n  ".join(problems[:20]))
    return items


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
    )


def check(
    language: str | None = typer.Option(None, "--language", "-l", help="Program language."),
    program: Path | None = typer.Option(None, "--program", help="Program source file."),
    cases: Path | None = typer.Option(
        None, "--cases", help='JSON list of {"input", "output"} test cases.'
    ),
    test: Path | None = typer.Option(None, "--test", help="Test program (function-level task)."),
    prompt: Path | None = typer.Option(
        None,
        "--prompt",
        help="With --test: trusted code declaring the function under test (needed for "
        f"{_NEEDS_PROMPT}: the test is compiled apart from the solution).",
    ),
    entry_point: str | None = typer.Option(
        None, "--entry-point", help="With --test: the function under test."
    ),
    checker: str = typer.Option("lines", "--checker", help="lines, tokens or float:EPS."),
    batch: Path | None = typer.Option(None, "--batch", help="JSONL of checks to run."),
    output: Path | None = typer.Option(None, "--out", help="Where --batch writes its results."),
    workers: int | None = typer.Option(None, "--workers", min=1, help="Parallel checks."),
    config: Path | None = typer.Option(None, "--config", "-c", help="Take [sandbox] from here."),
) -> None:
    """Check a program in the sandbox, or a whole batch (--batch IN.jsonl --out OUT.jsonl)."""
    settings = _sandbox_settings(config)
    workers = workers or settings.workers
    if batch is not None:
        if output is None:
            raise ConfigError("--batch needs --out OUT.jsonl")
        _check_batch(batch, output, workers, settings)
        return
    if language is None or program is None or (cases is None) == (test is None):
        raise ConfigError("give --language and --program, and either --cases or --test")
    try:
        source = program.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{program}: program file not found") from None
    fields: dict[str, Any] = {
        "language": language,
        "program": source,
        "checker": checker,
        "limits": settings.limits,
    }
    if test is not None:
        fields["test"] = test.read_text(encoding="utf-8")
        if prompt is not None:
            fields["prompt"] = prompt.read_text(encoding="utf-8")
        if entry_point is not None:
            fields["entry_point"] = entry_point
    else:
        fields["cases"] = _read_json(cases, "cases")  # type: ignore[arg-type]
    try:
        request = CheckRequest.model_validate(fields)
    except ValidationError as error:
        raise ConfigError(f"bad check request: {error}") from None
    result = dispatch.check_many([request], workers=1, backend=settings.backend)[0]
    _print_check(result)
    if result.status == "environment_error":
        raise typer.Exit(3)
    if not result.passed:
        raise typer.Exit(1)


def _print_check(result: Check) -> None:
    colour = "green" if result.passed else "red"
    out.print(
        f"[bold {colour}]{result.status}[/]  compile {result.compile_ms:.0f} ms, "
        f"run {result.run_ms:.0f} ms, cases {result.cases_passed}/{result.cases_total}, "
        f"peak memory {result.peak_memory_kib or '?'} KiB, backend {result.backend}"
    )
    if result.feedback:
        out.print(result.feedback, markup=False, highlight=False)


def _check_batch(
    batch: Path, output: Path, workers: int | None, settings: session_config.SandboxConfig
) -> None:
    items = _read_batch(batch)
    for _identity, request in items:
        if request.limits is None:
            request.limits = settings.limits
    output.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    with output.open("w", encoding="utf-8") as handle, _progress() as progress:
        task = progress.add_task("checking", total=len(items))

        def done(index: int, result: Check) -> None:
            row = {"id": items[index][0], **result.summary()}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            handle.flush()
            counts[result.status] = counts.get(result.status, 0) + 1
            progress.advance(task)

        dispatch.check_many(
            [r for _i, r in items], workers=workers, backend=settings.backend, on_done=done
        )
    summary = ", ".join(f"{status} {count}" for status, count in sorted(counts.items()))
    out.print(f"{len(items)} checks -> {output}: {summary or 'nothing to check'}")


def doctor(
    config: Path | None = typer.Option(None, "--config", "-c", help="Take [sandbox] from here."),
) -> None:
    """Check each language's toolchain and the sandbox on this machine."""
    settings = _sandbox_settings(config)
    out.print(f"sandbox: {pool.describe(settings.backend)}")
    # Every home's own hello program: a language is checked as soon as it is registered.
    homes = languages.HOMES
    requests = [
        CheckRequest(
            language=home.language.name,
            program=home.hello,
            limits=settings.limits,
            cases=[{"input": "hello\n", "output": "hello\n"}],
        )
        for home in homes
    ]
    results = dispatch.check_many(requests, workers=settings.workers, backend=settings.backend)
    table = Table(title="codeloop doctor")
    for column in ("language", "toolchain", "sandbox", "to fix"):
        table.add_column(column)
    broken = 0
    for home, result in zip(homes, results, strict=True):
        version = version_of(home.language)
        fix = ""
        if not result.passed:
            broken += 1
            fix = home.language.install if version.startswith("missing") else result.feedback
        state = "[green]works[/]" if result.passed else f"[red]{result.status}[/]"
        table.add_row(home.language.name, version, state, fix[:200])
    out.print(table)
    if broken:
        raise CodeloopError(f"{broken} language(s) cannot be checked here; see 'to fix' above")
