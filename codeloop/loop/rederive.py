"""Tasks rebuilt from their sources, to compare with the tasks a session recorded.

A task's id is the hash of its content, so an edited task is refused, but a forger who
recomputes the id (`schema.task_id`) and replaces it everywhere makes an edited task
that every hash agrees with: one train task cut down to its first hidden case passed
`verify --recheck`. What a forger cannot change is where the task came from: the
curriculum is a pure function of (seed, family, variant), and the bundled suites are
files shipped with codeloop. So `verify` rebuilds each recorded task from the session
config's sources, split and salt, and compares the two byte for byte (canonical JSON,
hidden tests included).

A recorded task is found in its source by what no honest edit changes: its family, its
language and its source row's sha256 (`Provenance.source_row_sha256`). A task that is
found and differs fails; one that claims a source the session has but that source
cannot give fails too. A task whose source cannot be rebuilt offline (a Hugging Face
dataset, HumanEval-X from the hub) is named as not re-derivable: it is taken on trust,
never reported as rebuilt.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from codeloop.config import (
    CurriculumSource,
    HFSource,
    HumanEvalXSource,
    SessionConfig,
)
from codeloop.errors import CodeloopError
from codeloop.tasks import curriculum
from codeloop.tasks.schema import Problem, Task
from codeloop.tasks.sources import open_source
from codeloop.tasks.splits import assign_split

Key = tuple[str, str, str]
"""(family, language, source row sha256): where a task sits in its source."""


def key_of(task: dict[str, Any]) -> Key:
    """Where a recorded task claims to come from (empty parts when it does not say)."""
    provenance = task.get("provenance") if isinstance(task.get("provenance"), dict) else {}
    return (
        str(task.get("family", "")),
        str(task.get("language", "")),
        str(provenance.get("source_row_sha256", "")),
    )


def canonical(value: Any) -> str:
    """The bytes two tasks are compared by (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Judgement:
    """One recorded task against its source: `same`, `differs`, `missing` or `trust`."""

    outcome: str
    detail: str = ""


@dataclass
class _Offline:
    """The session's sources that can be rebuilt here, and those that cannot (why)."""

    curriculum: list[CurriculumSource] = field(default_factory=list)
    others: list[tuple[int, Any]] = field(default_factory=list)
    untrusted: list[str] = field(default_factory=list)


class Rederiver:
    """Rebuilds the tasks of one session config on demand (each source at most once;
    for the curriculum only the families asked about, every configured variant)."""

    def __init__(self, config: SessionConfig) -> None:
        self.config = config
        self.sources = _Offline()
        for index, source in enumerate(config.tasks.sources):
            if isinstance(source, CurriculumSource):
                self.sources.curriculum.append(source)
            elif isinstance(source, HFSource) or (
                isinstance(source, HumanEvalXSource) and source.path == "hub"
            ):
                self.sources.untrusted.append(
                    f"tasks.sources.{index} ({source.kind}) cannot be rebuilt offline"
                )
            else:
                self.sources.others.append((index, source))
        self._families: dict[str, dict[Key, dict[str, Any]]] = {}
        self._others: dict[Key, dict[str, Any]] | None = None

    def _split(self, problem: Problem) -> str:
        return problem.fixed_split or assign_split(
            problem.family, self.config.tasks.salt, self.config.tasks.splits
        )

    def _index(self, problems: Iterable[Problem], into: dict[Key, dict[str, Any]]) -> None:
        for problem in problems:
            split = self._split(problem)
            for task in problem.tasks:
                rebuilt = task.with_split(split).to_json()
                into[key_of(rebuilt)] = rebuilt

    def _family(self, name: str) -> dict[Key, dict[str, Any]]:
        """Every variant of curriculum family `name` the session's curriculum sources give."""
        if name not in self._families:
            found: dict[Key, dict[str, Any]] = {}
            try:
                family = curriculum.family_by_name(name)
            except KeyError:
                family = None
            for source in self.sources.curriculum:
                if family is None or family.tier not in source.tiers:
                    continue
                languages = list(self.config.tasks.languages)
                self._index(
                    (
                        curriculum.render_problem(family, variant, self.config.seed, languages)
                        for variant in range(source.variants)
                    ),
                    found,
                )
            self._families[name] = found
        return self._families[name]

    def _other(self) -> dict[Key, dict[str, Any]]:
        """Every task of the offline non-curriculum sources (bundled suites, local files);
        a source that fails to open is named as not re-derivable."""
        if self._others is None:
            self._others = {}
            for index, source in self.sources.others:
                where = f"tasks.sources.{index}"
                try:
                    opened = open_source(
                        source,
                        seed=self.config.seed,
                        languages=self.config.tasks.languages,
                        where=where,
                    )
                    self._index(opened.problems(), self._others)
                except (CodeloopError, OSError, ValueError) as error:
                    self.sources.untrusted.append(f"{where} ({source.kind}): {error}")
        return self._others

    def judge(self, recorded: dict[str, Any]) -> Judgement:
        """Whether `recorded` is, byte for byte, the task its source gives."""
        key = key_of(recorded)
        family = key[0]
        is_curriculum = family.startswith("curriculum/") and bool(self.sources.curriculum)
        index = self._family(family) if is_curriculum else self._other()
        rebuilt = index.get(key)
        if rebuilt is None:
            if self.sources.untrusted and not is_curriculum:
                return Judgement("trust", "; ".join(self.sources.untrusted))
            return Judgement(
                "missing",
                f"no source of the session gives a task of family {family} in {key[1]} "
                f"from source row {key[2][:12]}",
            )
        if canonical(recorded) == canonical(rebuilt):
            return Judgement("same")
        fields = sorted(
            k for k in set(recorded) | set(rebuilt) if recorded.get(k) != rebuilt.get(k)
        )
        return Judgement("differs", f"differs from its source in {', '.join(fields)}")


def audit_tasks(config: SessionConfig) -> list[dict[str, Any]]:
    """The audit's task list as its definition fixes it (`audit.suites`, `audit.limit`),
    the way the audit phase wrote audit-tasks.json."""
    from codeloop.evaluate.suites import suite_tasks

    tasks: list[Task] = []
    for name in config.audit.suites:
        full = suite_tasks(config, name)
        tasks += full[: config.audit.limit] if config.audit.limit else full
    return [task.to_json() for task in tasks]
