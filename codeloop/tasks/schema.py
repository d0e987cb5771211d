"""The Task: one problem in one language, with its hidden and public tests.

A task's `id` is derived from what the model is asked and how it is checked
(family, language, statement, cases, checker, function tests), never from where
it was read or which split it landed in. Two sources that yield the same problem
therefore yield the same id, a changed test changes the id, and a stored task
whose content no longer matches its id is refused on load.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from codeloop.config import LANGUAGES, Language
from codeloop.sandbox.request import parse_checker
from codeloop.store import sha256_json

Split = Literal["train", "dev", "test"]
SPLITS: tuple[str, ...] = ("train", "dev", "test")
Kind = Literal["stdio", "function"]
_CHECKER = re.compile(r"^(lines|tokens|float:(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)$")
ID_LENGTH = 32
"""Hex digits of sha256 kept in a task id (128 bits: collisions are not a concern)."""


class Model(BaseModel):
    """Base of the task records: unknown keys are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Case(Model):
    """One test: the whole standard input and the expected standard output."""

    input: str
    output: str


class Program(Model):
    """A complete program in one language (a reference solution)."""

    language: Language
    code: str = Field(min_length=1)


class FunctionSpec(Model):
    """How a `function` task is checked: the completion is joined with test code.

    The task's `statement` is the code prompt the completion continues (as in
    HumanEval); `tests` is hidden, `public_tests` may be shown to the model.
    """

    entry_point: str = Field(min_length=1)
    declaration: str = ""
    tests: str = Field(min_length=1)
    public_tests: str = ""


class Provenance(Model):
    """Where a task came from, so a row of training data can be traced to its origin."""

    dataset: str = Field(min_length=1)
    revision: str = Field(min_length=1)
    source_row_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    license: str = Field(min_length=1)


def content_of(
    *,
    family: str,
    language: str,
    kind: str,
    statement: str,
    cases: list[Case] | list[dict[str, str]],
    public_cases: list[Case] | list[dict[str, str]],
    checker: str,
    function: FunctionSpec | dict[str, Any] | None,
) -> dict[str, Any]:
    """The fields a task id is derived from, as plain JSON values."""

    def plain(value: Any) -> Any:
        return value.model_dump(mode="json") if isinstance(value, BaseModel) else value

    return {
        "family": family,
        "language": language,
        "kind": kind,
        "statement": statement,
        "cases": [plain(case) for case in cases],
        "public_cases": [plain(case) for case in public_cases],
        "checker": checker,
        "function": plain(function),
    }


def task_id(**content: Any) -> str:
    """The id of a task with this content (see `content_of` for the keywords)."""
    return sha256_json(content_of(**content))[:ID_LENGTH]


class Task(Model):
    """One problem in one language (each field says what it holds).

    `split` is None until the pool assigns it from the family (see `splits.py`).
    `references` are solutions the pool runs to prove the tests are right; they
    are never shown to the model and are not part of the id.
    """

    id: str = Field(pattern=rf"^[0-9a-f]{{{ID_LENGTH}}}$")
    family: str = Field(min_length=1)
    split: Split | None = None
    language: Language
    kind: Kind
    statement: str = Field(min_length=1)
    cases: list[Case] = Field(default_factory=list)
    public_cases: list[Case] = Field(default_factory=list)
    checker: str = "lines"
    function: FunctionSpec | None = None
    tier: int | None = Field(None, ge=1, le=4)
    references: list[Program] = Field(default_factory=list)
    provenance: Provenance

    @model_validator(mode="before")
    @classmethod
    def _fill_id(cls, data: Any) -> Any:
        """A record without an id (a hand-written JSONL line) gets the derived one."""
        if isinstance(data, dict) and "id" not in data:
            try:
                content = _content_keys(data)
                if isinstance(content["function"], dict):
                    # With its defaults filled in, as the id is checked after validation.
                    content["function"] = FunctionSpec.model_validate(content["function"])
                data = {**data, "id": task_id(**content)}
            except (KeyError, TypeError, ValidationError):
                return data  # missing fields are reported by the field validation
        return data

    @field_validator("checker")
    @classmethod
    def _known_checker(cls, value: str) -> str:
        if not _CHECKER.match(value):
            raise ValueError("checker must be 'lines', 'tokens' or 'float:EPS' (e.g. float:1e-6)")
        parse_checker(value)  # and one the sandbox takes (float:1e999 is no tolerance)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        if self.kind == "stdio":
            if self.function is not None:
                raise ValueError(f"task {self.id}: a stdio task has no `function` tests")
            if not self.cases:
                raise ValueError(f"task {self.id}: a stdio task needs at least one hidden case")
        elif self.function is None:
            raise ValueError(f"task {self.id}: a function task needs `function` tests")
        expected = self.derived_id()
        if self.id != expected:
            raise ValueError(
                f"task {self.id} (family {self.family}, {self.language}): its content does not "
                f"match its id (content gives {expected}); the task was edited after it was made"
            )
        return self

    def derived_id(self) -> str:
        """The id this task's content gives."""
        return task_id(
            family=self.family,
            language=self.language,
            kind=self.kind,
            statement=self.statement,
            cases=self.cases,
            public_cases=self.public_cases,
            checker=self.checker,
            function=self.function,
        )

    def with_split(self, split: str) -> Task:
        """A copy placed in `split` (the id does not change)."""
        return self.model_copy(update={"split": split})

    def to_json(self) -> dict[str, Any]:
        """The task as plain JSON values; `Task.model_validate` reads it back unchanged."""
        return self.model_dump(mode="json")


def _content_keys(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "family": data["family"],
        "language": data["language"],
        "kind": data["kind"],
        "statement": data["statement"],
        "cases": list(data.get("cases", [])),
        "public_cases": list(data.get("public_cases", [])),
        "checker": data.get("checker", "lines"),
        "function": data.get("function"),
    }


def make_task(
    *,
    family: str,
    language: str,
    kind: str,
    statement: str,
    provenance: Provenance,
    cases: list[Case] | None = None,
    public_cases: list[Case] | None = None,
    checker: str = "lines",
    function: FunctionSpec | None = None,
    tier: int | None = None,
    references: list[Program] | None = None,
    split: str | None = None,
) -> Task:
    """Build a task with its derived id."""
    cases = list(cases or [])
    public_cases = list(public_cases or [])
    identity = task_id(
        family=family,
        language=language,
        kind=kind,
        statement=statement,
        cases=cases,
        public_cases=public_cases,
        checker=checker,
        function=function,
    )
    return Task(
        id=identity,
        family=family,
        split=split,
        language=language,
        kind=kind,
        statement=statement,
        cases=cases,
        public_cases=public_cases,
        checker=checker,
        function=function,
        tier=tier,
        references=list(references or []),
        provenance=provenance,
    )


@dataclass
class Problem:
    """One problem of a source, before validation: its tasks (one per language) and references.

    The pool validates a problem once, by running the references of its first task
    on the cases that every one of its tasks shares, and keeps or drops all of its
    tasks together. `fixed_split` pins benchmark problems to `test` whatever the
    family hash says; `skip_reason` marks a row the source could read but not use.
    """

    key: str
    family: str
    tasks: list[Task] = field(default_factory=list)
    fixed_split: str | None = None
    skip_reason: str | None = None


def language_names() -> tuple[str, ...]:
    """The language names codeloop knows, in their canonical order."""
    return LANGUAGES
