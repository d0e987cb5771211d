"""Run a suite: check every sample in the sandbox, write results and a bound summary.

`DIR/results.jsonl` has one line per sample in the samples file's order, so a
reader can zip it with its input; `DIR/summary.json` carries the counts and a
binding (data sha256, samples sha256, toolchains, limits, sandbox, composition
code) so that two evaluations are compared only when they ran under the same
conditions. With `weak`, it also lists in `weak_tasks` the evaluated tasks whose
test a trivial program passes (`evaluate.weak`; null when not checked). Model-written
code runs only inside the sandbox workers.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop import __version__, store
from codeloop.config import SandboxConfig, SandboxLimits
from codeloop.errors import ConfigError
from codeloop.evaluate import suites
from codeloop.evaluate import weak as weakness
from codeloop.evaluate.data import Problems, language_of
from codeloop.sandbox import Check, CheckRequest, check_many, describe
from codeloop.sandbox.languages import toolchain_version

_COMPOSITION_FILES = (
    Path(suites.__file__),
    Path(suites.__file__).parents[1] / "sandbox" / "function_tests.py",
)


@dataclass
class Evaluation:
    """What one run produced: a result row per sample and the summary."""

    results: list[dict[str, Any]]
    summary: dict[str, Any]


def read_samples(path: Path, suite: str) -> list[suites.Sample]:
    """The samples file, in order; each bad line is named with what it lacks."""
    if not path.is_file():
        raise ConfigError(f"--samples {path}: file not found")
    wanted = suites.sample_field(suite)
    samples: list[suites.Sample] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as error:
            raise ConfigError(f"{path}:{number}: not JSON ({error})") from None
        if not isinstance(row, dict) or not isinstance(row.get("task_id"), str):
            raise ConfigError(f"{path}:{number}: needs a string field task_id")
        text = row.get(wanted)
        if not isinstance(text, str):
            raise ConfigError(
                f"{path}:{number}: needs a string field {wanted!r} (the official {suite} "
                f'sample format is {{"task_id", "{wanted}"}})'
            )
        samples.append(suites.Sample(task_id=row["task_id"], text=text))
    return samples


def _language(suite: str, task_id: str) -> str:
    return language_of(task_id) if suite == "humaneval-x" else "python"


def summarize(results: list[dict[str, Any]], languages: list[str]) -> tuple[dict[str, Any], float]:
    """Per-language totals and pass@1 (mean over tasks of the passed fraction of samples)."""
    by_language: dict[str, Any] = {}
    macro: list[float] = []
    for language in languages:
        rows = [row for row in results if row["language"] == language]
        per_task: dict[str, list[bool]] = {}
        for row in rows:
            per_task.setdefault(row["task_id"], []).append(row["passed"])
        pass_at_1 = (
            sum(sum(flags) / len(flags) for flags in per_task.values()) / len(per_task)
            if per_task
            else 0.0
        )
        by_language[language] = {
            "total": len(rows),
            "passed": sum(row["passed"] for row in rows),
            "tasks": len(per_task),
            "pass_at_1": round(pass_at_1, 6),
            "statuses": dict(Counter(row["status"] for row in rows)),
        }
        if rows:
            macro.append(pass_at_1)
    return by_language, round(sum(macro) / len(macro), 6) if macro else 0.0


def evaluate(
    suite: str,
    problems: Problems,
    samples: list[suites.Sample],
    out: Path,
    *,
    languages: list[str],
    workers: int | None = None,
    backend: str = "bwrap",
    limits: SandboxLimits | None = None,
    samples_binding: dict[str, Any] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_done: Callable[[int, Check], None] | None = None,
    weak: bool = False,
) -> Evaluation:
    """Check `samples` (those of `languages`) and write DIR/results.jsonl and DIR/summary.json.

    With `weak`, the trivial programs of every evaluated task are checked too
    (one more batch, after the samples') and the tasks one passes are listed.
    """
    if suite not in suites.SUITES:
        raise ConfigError(f"--suite {suite}: unknown; choose {' or '.join(suites.SUITES)}")
    limits = limits or SandboxLimits()
    kept = [s for s in samples if _language(suite, s.task_id) in languages]
    jobs = [suites.make_job(suite, problems, sample) for sample in kept]
    requests = [
        CheckRequest(
            language=job.language,
            program=job.program,
            test=job.test,
            prompt=job.prompt,
            entry_point=job.entry_point,
            limits=limits,
        )
        for job in jobs
    ]
    if on_start is not None:
        on_start(len(requests))
    started = time.monotonic()
    checks = check_many(requests, workers=workers, backend=backend, on_done=on_done)
    wall_s = time.monotonic() - started
    weak_found = None
    if weak:
        sandbox = SandboxConfig(workers=workers, backend=backend, limits=limits)  # type: ignore[arg-type]
        labelled = weakness.benchmark_tasks(suite, problems, [job.task_id for job in jobs])
        weak_found = weakness.weak_tasks(labelled, sandbox)
    results = [
        {
            "task_id": job.task_id,
            "language": job.language,
            "passed": check.passed,
            "status": check.status,
            "feedback": check.feedback,
        }
        for job, check in zip(jobs, checks, strict=True)
    ]
    used = sorted({job.language for job in jobs}, key=languages.index)
    by_language, macro = summarize(results, used)
    for language, entry in by_language.items():
        # Where a run's time went, per language (summed over workers): compiling, running.
        mine = [c for job, c in zip(jobs, checks, strict=True) if job.language == language]
        entry["compile_s"] = round(sum(c.compile_ms for c in mine) / 1000, 2)
        entry["run_s"] = round(sum(c.run_ms for c in mine) / 1000, 2)
    summary = {
        "suite": suite,
        "total": len(results),
        "passed": sum(row["passed"] for row in results),
        "languages": by_language,
        "macro_pass_at_1": macro,
        "skipped_samples": len(samples) - len(kept),
        "wall_s": round(wall_s, 2),
        "weak_tasks": None if weak_found is None else list(weak_found),
        "weak_task_programs": weak_found,
        "binding": {
            "suite": suite,
            "data": {"source": problems.source, "sha256": problems.sha256},
            "samples": samples_binding or {},
            "toolchains": {language: toolchain_version(language) for language in used},
            "limits": limits.model_dump(mode="json"),
            "sandbox": describe(backend) if results else backend,
            "backend": backend,
            "composition_sha256": {
                path.name: store.sha256_file(path) for path in _COMPOSITION_FILES
            },
            "codeloop": __version__,
        },
    }
    out.mkdir(parents=True, exist_ok=True)
    store.write_text(
        out / "results.jsonl",
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in results),
    )
    store.write_json(out / "summary.json", summary)
    return Evaluation(results=results, summary=summary)
