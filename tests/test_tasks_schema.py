"""The Task schema: derived ids, a stable JSON round-trip, and refusal of edited tasks."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from codeloop.tasks.schema import Case, FunctionSpec, Provenance, Task, make_task

PROVENANCE = Provenance(dataset="unit", revision="r1", source_row_sha256="a" * 64, license="MIT")


def sample(**changes: object) -> Task:
    fields: dict[str, object] = {
        "family": "unit/add",
        "language": "python",
        "kind": "stdio",
        "statement": "Read a and b from standard input. Print only a + b.",
        "cases": [Case(input="1 2\n", output="3\n")],
        "public_cases": [Case(input="2 2\n", output="4\n")],
        "provenance": PROVENANCE,
    }
    fields.update(changes)
    return make_task(**fields)  # type: ignore[arg-type]


def test_json_round_trip_is_stable() -> None:
    task = sample(split=None).with_split("dev")
    text = json.dumps(task.to_json(), sort_keys=True)
    again = Task.model_validate(json.loads(text))
    assert again == task
    assert json.dumps(again.to_json(), sort_keys=True) == text


def test_id_depends_on_content_family_and_language_only() -> None:
    base = sample()
    assert sample().id == base.id
    assert len(base.id) == 32
    assert sample(language="go").id != base.id
    assert sample(family="unit/other").id != base.id
    assert sample(cases=[Case(input="1 2\n", output="4\n")]).id != base.id
    assert sample(checker="tokens").id != base.id
    moved = sample(split="test", tier=2)
    assert moved.id == base.id
    elsewhere = Provenance(dataset="x", revision="y", source_row_sha256="b" * 64, license="Z")
    assert sample(provenance=elsewhere).id == base.id


def test_edited_content_is_refused_naming_the_task() -> None:
    record = sample().to_json()
    record["cases"][0]["output"] = "4\n"
    with pytest.raises(ValidationError, match=record["id"]):
        Task.model_validate(record)


def test_missing_id_is_derived() -> None:
    record = sample().to_json()
    expected = record.pop("id")
    assert Task.model_validate(record).id == expected


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"surprise": 1}, "Extra inputs are not permitted"),
        ({"checker": "exact"}, "checker must be"),
        ({"checker": "float:1e999"}, "unknown checker"),  # no tolerance the sandbox takes
        ({"split": "holdout"}, "split"),
        ({"language": "cobol"}, "language"),
    ],
)
def test_bad_fields_are_refused(change: dict[str, object], message: str) -> None:
    record = {**sample().to_json(), **change}
    with pytest.raises(ValidationError, match=message):
        Task.model_validate(record)


def test_float_checker_is_accepted() -> None:
    assert sample(checker="float:1e-6").checker == "float:1e-6"


def test_kinds_need_their_tests() -> None:
    with pytest.raises(ValidationError, match="at least one hidden case"):
        sample(cases=[])
    with pytest.raises(ValidationError, match="needs `function` tests"):
        sample(kind="function", cases=[])
    spec = FunctionSpec(entry_point="f", tests="assert f() == 1\n")
    task = sample(kind="function", cases=[], public_cases=[], function=spec)
    assert task.function == spec
