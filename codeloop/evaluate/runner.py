"""The one runner: check every answer of any suite, write results and a bound summary.

`run` is the single path from answers to the sandbox and to disk, whatever the
suite: each answer becomes an `Entry` (its check, from the suite registry), every
check goes through the evaluator (`evaluate.scoring.check_requests`), and
`DIR/results.jsonl` gets one line per answer in the order given, so a reader can
zip it with its input. `DIR/summary.json` carries the counts and a binding (the
data or tasks, the answers, toolchains, limits, sandbox, codeloop version) so that
two evaluations are compared only when they ran under the same conditions. With
`weak`, it also lists in `weak_tasks` the tasks whose test a trivial program passes
(`evaluate.weak`; null when not checked). Model-written code runs only inside the
sandbox workers.

What differs between the two kinds of answers is only how they are tallied, each
kind in the summary fields its users have always read (a `Batch` per kind):

- `AnswerBatch`: replies to a suite's codeloop tasks (a model's, or a samples
  file's). Per language pass@1 and the unbiased pass@k for every k in 1, 2, 5, 10,
  ... up to n (Chen et al., 2021), pooled pass@k, macro pass@1, statuses. A check
  the machine failed stops the run (`SandboxEnvironmentError`), as in a round;
  `task_errors` lists the tasks whose own test gave no verdict (`Check.task_error`):
  their answers count as not passed, with status `environment_error`.
- `SampleBatch`: HumanEval(-X) samples in their official formats, scored as the
  official harnesses do: per language totals and pass@1 (the mean over tasks of the
  passed fraction), macro pass@1, where the sandbox time went, and the first verdict
  of each sample as it is (no re-run: see `check_requests`).
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from codeloop import __version__, store
from codeloop.config import SandboxConfig, SandboxLimits
from codeloop.evaluate import humaneval, scoring, suites
from codeloop.evaluate import weak as weakness
from codeloop.evaluate.answers import Answers
from codeloop.evaluate.data import Problems
from codeloop.evaluate.humaneval import Sample
from codeloop.sandbox import Check, CheckRequest, describe
from codeloop.sandbox.languages import HOMES, toolchain_version
from codeloop.tasks.schema import Task

PASS_AT = (1, 2, 5, 10, 20, 50, 100)


def composition_sha256() -> dict[str, str]:
    """Hashes of the code that turns an answer into a check: HumanEval(-X)'s composition,
    the function-test machinery and each language home that composes function tests
    (one hash over its folder's files, trusted box assets included), keyed by path."""
    package = Path(humaneval.__file__).parents[1]
    files = [package / "evaluate" / "humaneval.py"]
    files += [package / "sandbox" / name for name in ("function_tests.py", "testbuild.py")]
    found = {str(path.relative_to(package)): store.sha256_file(path) for path in files}
    for home in HOMES:
        if home.compose_test is None:
            continue
        folder = Path(home.__file__).parent
        parts = sorted(
            path for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts
        )
        found[str(folder.relative_to(package))] = store.sha256_json(
            {str(path.relative_to(folder)): store.sha256_file(path) for path in parts}
        )
    return found


@dataclass(frozen=True)
class Entry:
    """One answer made ready for the sandbox, and what its results.jsonl line carries."""

    task_id: str
    language: str
    request: CheckRequest | None
    """None: the answer has no code to run (it fails without a run)."""
    details: dict[str, Any] = field(default_factory=dict)
    """Fields of its line before the verdict (a task's family, the sample index)."""
    answer: str | None = None
    """The answer's text, the last field of its line (None: not written)."""

    def result(self, check: Check) -> dict[str, Any]:
        """Its results.jsonl line."""
        row = {"task_id": self.task_id, "language": self.language, **self.details}
        row |= {"passed": check.passed, "status": check.status, "feedback": check.feedback}
        return row if self.answer is None else row | {"answer": self.answer}


@dataclass
class Evaluation:
    """What one run produced: a result row per answer and the summary."""

    results: list[dict[str, Any]]
    summary: dict[str, Any]


class Batch(ABC):
    """The answers of one run: how they become checks and how their verdicts are tallied."""

    judged: ClassVar[bool]
    """Whether environment errors are re-run and judged, and a broken machine stops the run."""

    def __init__(self, name: str) -> None:
        self.name = name
        """The suite's name, as summary.json records it."""

    @abstractmethod
    def entries(self, sandbox: SandboxConfig) -> list[Entry]:
        """Every answer to check, in the order results.jsonl lists them."""

    @abstractmethod
    def weak_candidates(self, entries: list[Entry]) -> list[tuple[str, Task]]:
        """The evaluated tasks, labelled as summary.json names them, for `evaluate.weak`."""

    @abstractmethod
    def tally(
        self, entries: list[Entry], results: list[dict[str, Any]], checks: list[Check]
    ) -> dict[str, Any]:
        """The summary's counts (the fields before `wall_s`)."""

    def notes(self, entries: list[Entry], checks: list[Check]) -> dict[str, Any]:
        """Summary fields after the weak tasks (none by default)."""
        return {}

    @abstractmethod
    def binding(
        self, entries: list[Entry], sandbox: SandboxConfig, results: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """What the run is bound to, for comparing two runs."""


def _toolchains(languages: list[str]) -> dict[str, str]:
    """The toolchain version of each language, so runs on other compilers are not compared."""
    return {language: toolchain_version(language) for language in languages}


class AnswerBatch(Batch):
    """Replies to a suite's codeloop tasks, n per task, scored with pass@k."""

    judged = True

    def __init__(self, suite: suites.Suite, tasks: list[Task], answers: Answers) -> None:
        super().__init__(suite.name)
        self.suite, self.tasks, self.answers = suite, tasks, answers

    def entries(self, sandbox: SandboxConfig) -> list[Entry]:
        found: list[Entry] = []
        sample_index: Counter[str] = Counter()
        for task in self.tasks:
            for text in self.answers.texts[task.id]:
                details = {"family": task.family, "sample": sample_index[task.id]}
                request = self.suite.check(task, text, sandbox)
                found.append(Entry(task.id, task.language, request, details, answer=text))
                sample_index[task.id] += 1
        return found

    def weak_candidates(self, entries: list[Entry]) -> list[tuple[str, Task]]:
        return [(task.id, task) for task in self.tasks]

    def _languages(self) -> list[str]:
        return list(dict.fromkeys(task.language for task in self.tasks))

    def tally(
        self, entries: list[Entry], results: list[dict[str, Any]], checks: list[Check]
    ) -> dict[str, Any]:
        flags: dict[str, dict[str, list[bool]]] = {}
        for row in results:
            flags.setdefault(row["language"], {}).setdefault(row["task_id"], []).append(
                row["passed"]
            )
        by_language = {}
        for language in self._languages():
            rows = [row for row in results if row["language"] == language]
            by_language[language] = {
                "tasks": len(flags[language]),
                "answers": len(rows),
                "passed": sum(row["passed"] for row in rows),
                **pass_at(flags[language]),
                "statuses": dict(Counter(row["status"] for row in rows)),
            }
        macro = [entry["pass@1"] for entry in by_language.values()]
        every_task = {tid: f for per in flags.values() for tid, f in per.items()}
        return {
            "tasks": len(self.tasks),
            "total": len(results),
            "passed": sum(row["passed"] for row in results),
            "languages": by_language,
            "pooled": pass_at(every_task),
            "macro_pass_at_1": round(sum(macro) / len(macro), 6) if macro else 0.0,
        }

    def notes(self, entries: list[Entry], checks: list[Check]) -> dict[str, Any]:
        erred = [entry.task_id for entry, c in zip(entries, checks, strict=True) if c.task_error]
        return {"task_errors": list(dict.fromkeys(erred))}

    def binding(
        self, entries: list[Entry], sandbox: SandboxConfig, results: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            "suite": self.name,
            "tasks_sha256": store.sha256_json([task.to_json() for task in self.tasks]),
            "answers": self.answers.binding,
            "toolchains": _toolchains(self._languages()),
            "limits": sandbox.limits.model_dump(mode="json"),
            "backend": sandbox.backend,
            "codeloop": __version__,
        }


class SampleBatch(Batch):
    """HumanEval(-X) samples in their official format, scored as the official harnesses do."""

    judged = False

    def __init__(
        self,
        benchmark: suites.Benchmark,
        problems: Problems,
        samples: list[Sample],
        languages: list[str],
        samples_binding: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(benchmark.name)
        self.benchmark, self.problems, self.samples = benchmark, problems, samples
        self.languages, self.samples_binding = languages, samples_binding or {}

    def entries(self, sandbox: SandboxConfig) -> list[Entry]:
        return [
            Entry(s.task_id, language, self.benchmark.sample_check(self.problems, s, sandbox))
            for s in self.samples
            if (language := self.benchmark.language(s.task_id)) in self.languages
        ]

    def weak_candidates(self, entries: list[Entry]) -> list[tuple[str, Task]]:
        return self.benchmark.function_tasks(self.problems, [entry.task_id for entry in entries])

    def _used(self, entries: list[Entry]) -> list[str]:
        return sorted({entry.language for entry in entries}, key=self.languages.index)

    def tally(
        self, entries: list[Entry], results: list[dict[str, Any]], checks: list[Check]
    ) -> dict[str, Any]:
        by_language, macro = summarize(results, self._used(entries))
        for language, entry in by_language.items():
            # Where a run's time went, per language (summed over workers): compiling, running.
            mine = [c for e, c in zip(entries, checks, strict=True) if e.language == language]
            entry["compile_s"] = round(sum(c.compile_ms for c in mine) / 1000, 2)
            entry["run_s"] = round(sum(c.run_ms for c in mine) / 1000, 2)
        return {
            "total": len(results),
            "passed": sum(row["passed"] for row in results),
            "languages": by_language,
            "macro_pass_at_1": macro,
            "skipped_samples": len(self.samples) - len(entries),
        }

    def binding(
        self, entries: list[Entry], sandbox: SandboxConfig, results: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            "suite": self.name,
            "data": {"source": self.problems.source, "sha256": self.problems.sha256},
            "samples": self.samples_binding,
            "toolchains": _toolchains(self._used(entries)),
            "limits": sandbox.limits.model_dump(mode="json"),
            "sandbox": describe(sandbox.backend) if results else sandbox.backend,
            "backend": sandbox.backend,
            "composition_sha256": composition_sha256(),
            "codeloop": __version__,
        }


def pass_at(flags: dict[str, list[bool]]) -> dict[str, float]:
    """Mean unbiased pass@k over tasks ({task id: verdicts}) for every k in PASS_AT up to n."""
    n = min((len(f) for f in flags.values()), default=0)
    found: dict[str, float] = {}
    for k in PASS_AT:
        if k > n or not flags:
            break
        rates = [scoring.pass_at_k(len(f), sum(f), k) for f in flags.values()]
        found[f"pass@{k}"] = round(sum(rates) / len(rates), 6)
    return found


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


def run(
    batch: Batch,
    out: Path,
    sandbox: SandboxConfig,
    *,
    on_start: Callable[[int], None] | None = None,
    on_done: Callable[[int, Check], None] | None = None,
    weak: bool = False,
) -> Evaluation:
    """Check every answer of `batch`, write DIR/results.jsonl and DIR/summary.json.

    `on_start` hears how many checks there are, `on_done` each finished one. With
    `weak`, the evaluated tasks' trivial programs are checked too (one more batch,
    after the answers') and the tasks one passes are listed.
    """
    entries = batch.entries(sandbox)
    if on_start is not None:
        on_start(len(entries))
    started = time.monotonic()
    requests = [entry.request for entry in entries]
    checks = scoring.check_requests(requests, sandbox, on_done=on_done, rerun=batch.judged)
    if batch.judged:
        scoring.require_verdicts([(e.task_id, e.language) for e in entries], checks)
    wall_s = time.monotonic() - started
    weak_found = weakness.weak_tasks(batch.weak_candidates(entries), sandbox) if weak else None
    results = [entry.result(check) for entry, check in zip(entries, checks, strict=True)]
    summary = {
        "suite": batch.name,
        **batch.tally(entries, results, checks),
        "wall_s": round(wall_s, 2),
        "weak_tasks": None if weak_found is None else list(weak_found),
        "weak_task_programs": weak_found,
        **batch.notes(entries, checks),
        "binding": batch.binding(entries, sandbox, results),
    }
    out.mkdir(parents=True, exist_ok=True)
    store.write_text(
        out / "results.jsonl",
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in results),
    )
    store.write_json(out / "summary.json", summary)
    return Evaluation(results=results, summary=summary)


def evaluate(
    suite: str,
    problems: Problems,
    samples: list[Sample],
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
    """Check a benchmark's `samples` (those of `languages`) in its official format: `run`."""
    batch = SampleBatch(suites.benchmark(suite), problems, samples, languages, samples_binding)
    sandbox = SandboxConfig(limits=limits or SandboxLimits()).model_copy(
        update={"workers": workers, "backend": backend}
    )
    return run(batch, out, sandbox, on_start=on_start, on_done=on_done, weak=weak)


def score(
    suite: str,
    tasks: list[Task],
    answers: Answers,
    out: Path,
    sandbox: SandboxConfig,
    *,
    on_done: Callable[[int, Check], None] | None = None,
    weak: bool = False,
) -> dict[str, Any]:
    """Check replies to `tasks` and return the summary: `run`. `suite` names the run in
    summary.json: a registered suite, or a label for tasks listed elsewhere (an audit's)."""
    batch = AnswerBatch(suites.Listed(suite, tasks), tasks, answers)
    return run(batch, out, sandbox, on_done=on_done, weak=weak).summary
