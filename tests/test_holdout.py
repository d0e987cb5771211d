"""The clean held-out test set (bench/holdout.py): size, freezing, distinctness, statistics."""

from __future__ import annotations

import random

import pytest

from bench import devset
from codeloop import recipe
from codeloop.config import LANGUAGES
from codeloop.tasks import clean as holdout
from codeloop.tasks.curriculum import families
from codeloop.tasks.validate import trivial_pass


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def test_at_least_60_problems_with_distinct_names_and_statements() -> None:
    names = [problem[0] for problem in holdout.PROBLEMS]
    statements = [_normal(problem[1]) for problem in holdout.PROBLEMS]
    assert len(holdout.PROBLEMS) >= 60
    assert len(set(names)) == len(names)
    assert len(set(statements)) == len(statements)


def test_the_frozen_hash_holds_and_an_edit_is_refused(monkeypatch) -> None:
    assert holdout.current_sha256() == holdout.FROZEN_SHA256
    rendered = holdout.tasks(["python"])
    assert len(rendered) == len(holdout.PROBLEMS)
    name, statement, inputs, reference = holdout.PROBLEMS[0]
    edited = [(name, statement + " ", inputs, reference), *holdout.PROBLEMS[1:]]
    monkeypatch.setattr(holdout, "PROBLEMS", edited)
    with pytest.raises(RuntimeError, match="frozen"):
        holdout.tasks(["python"])


def test_every_problem_renders_in_all_eight_languages_with_the_same_cases() -> None:
    rendered = holdout.tasks(LANGUAGES)
    assert len(rendered) == len(holdout.PROBLEMS) * len(LANGUAGES)
    assert len({task.id for task in rendered}) == len(rendered)
    for index, problem in enumerate(holdout.PROBLEMS):
        block = rendered[index * len(LANGUAGES) : (index + 1) * len(LANGUAGES)]
        assert [task.language for task in block] == list(LANGUAGES)
        assert {task.family for task in block} == {holdout.FAMILY_PREFIX + problem[0]}
        assert all(task.cases == block[0].cases and task.split == "test" for task in block)


@pytest.mark.parametrize("problem", holdout.PROBLEMS, ids=lambda problem: problem[0])
def test_every_problem_has_4_to_6_cases_that_no_trivial_program_passes(problem) -> None:
    cases = holdout.cases(problem)
    assert 4 <= len(cases) <= 6
    assert len({case.input for case in cases}) == len(cases)
    # one constant answer (say YES) cannot pass every case
    assert len({case.output for case in cases}) >= 2
    [task] = [task for task in holdout.tasks(["python"]) if task.family.endswith(problem[0])]
    assert trivial_pass(task) is None


def _curriculum_statements() -> set[str]:
    found = set()
    for family in families():
        for draw in range(40):
            found.add(_normal(family.statement(family.params(random.Random(draw)))))
    return found


def test_no_statement_is_a_curriculum_heldout_or_worked_example_statement() -> None:
    taken = _curriculum_statements()
    taken |= {_normal(problem[1]) for problem in devset.PROBLEMS}
    taken.add(_normal(recipe.WORKED_PROBLEM))
    taken_names = {family.name for family in families()} | {p[0] for p in devset.PROBLEMS}
    for name, statement, _inputs, _reference in holdout.PROBLEMS:
        assert _normal(statement) not in taken, name
        assert name not in taken_names, name


def _verdicts(solved: set[int], languages: int = 1) -> list[bool]:
    return [index in solved for index in range(len(holdout.PROBLEMS)) for _ in range(languages)]


def test_paired_interval_excludes_zero_for_a_clear_gain() -> None:
    count = len(holdout.PROBLEMS)
    before, after = _verdicts(set()), _verdicts(set(range(20)))
    result = holdout.paired_interval(before, after)
    assert result["difference"] == pytest.approx(100.0 * 20 / count)
    assert result["before"] == 0.0 and result["after"] == pytest.approx(100.0 * 20 / count)
    assert 0.0 < result["low"] <= result["difference"] <= result["high"]
    assert result["problems"] == count and result["level"] == 0.95
    # a fixed seed: the same data give the same interval
    assert holdout.paired_interval(before, after) == result


def test_paired_interval_contains_zero_for_no_change() -> None:
    same = _verdicts({1, 5, 9}, languages=3)
    unchanged = holdout.paired_interval(same, same)
    assert unchanged["difference"] == unchanged["low"] == unchanged["high"] == 0.0
    # as many problems gained as lost: no change on the whole, an interval around 0
    before, after = _verdicts(set(range(10)), 2), _verdicts(set(range(10, 20)), 2)
    shuffled = holdout.paired_interval(before, after)
    assert shuffled["difference"] == pytest.approx(0.0)
    assert shuffled["low"] < 0.0 < shuffled["high"]


def test_paired_interval_groups_the_languages_of_a_problem() -> None:
    # two problems of 3 languages: the first gains 3 tasks, the second none
    result = holdout.paired_interval(
        [False] * 6, [True, True, True, False, False, False], problems=2, resamples=2000
    )
    assert result["difference"] == pytest.approx(50.0)
    assert result["low"] == pytest.approx(0.0) and result["high"] == pytest.approx(100.0)
    with pytest.raises(ValueError):
        holdout.paired_interval([False] * 5, [False] * 5, problems=2)
    with pytest.raises(ValueError):
        holdout.paired_interval([False] * 6, [False] * 4, problems=2)


def test_distinct_solved_counts_problems_solved_in_any_language() -> None:
    rendered = holdout.tasks(["python", "c", "go"])
    verdicts = [False] * len(rendered)
    assert holdout.distinct_solved(rendered, verdicts) == 0
    verdicts[0] = verdicts[1] = verdicts[2] = True  # problem 0 in every language
    verdicts[5] = True  # problem 1 in go
    verdicts[len(rendered) - 1] = True  # the last problem in go
    assert holdout.distinct_solved(rendered, verdicts) == 3
    with pytest.raises(ValueError):
        holdout.distinct_solved(rendered, verdicts[:-1])


def test_kin_names_real_problems_and_holds_its_frozen_hash() -> None:
    names = {problem[0] for problem in holdout.PROBLEMS}
    assert set(holdout.KIN) <= names
    assert all(reason.strip() for reason in holdout.KIN.values())
    assert holdout.kin_sha256() == holdout.KIN_SHA256
    assert holdout.kin_names() == set(holdout.KIN)
    # the label is separate from the set: the set's own hash still holds
    assert holdout.current_sha256() == holdout.FROZEN_SHA256


@pytest.mark.parametrize(
    "edit",
    [
        lambda kin: kin.pop("xor"),
        lambda kin: kin.update({"next-even": "a new label"}),
        lambda kin: kin.update({"xor": kin["xor"] + "."}),
    ],
    ids=["dropped", "added", "reworded"],
)
def test_an_edited_kin_label_is_refused(monkeypatch, edit) -> None:
    edited = dict(holdout.KIN)
    edit(edited)
    monkeypatch.setattr(holdout, "KIN", edited)
    with pytest.raises(RuntimeError, match="KIN"):
        holdout.kin_names()
    with pytest.raises(RuntimeError, match="KIN"):
        holdout.non_kin(holdout.tasks(["python"]))


def test_non_kin_keeps_the_other_problems_and_their_interval() -> None:
    rendered = holdout.tasks(["python", "c"])
    kept = holdout.non_kin(rendered)
    rest = len(holdout.PROBLEMS) - len(holdout.KIN)
    assert len(kept) == 2 * rest
    assert {task.family.removeprefix(holdout.FAMILY_PREFIX) for task in kept}.isdisjoint(
        holdout.KIN
    )
    # a gain only on kin problems is no gain on the non-kin subset
    before = [False] * len(rendered)
    after = holdout.kin_mask(rendered)
    whole = holdout.paired_interval(before, after)
    unlike = holdout.non_kin_interval(rendered, before, after)
    assert whole["difference"] == pytest.approx(100.0 * len(holdout.KIN) / len(holdout.PROBLEMS))
    assert unlike["difference"] == unlike["low"] == unlike["high"] == 0.0
    assert unlike["problems"] == rest and unlike["tasks"] == 2 * rest
    gained = holdout.non_kin_interval(rendered, before, [not kin for kin in after])
    assert gained["difference"] == pytest.approx(100.0)


def _outputs(reference, inputs: list[str]) -> list[str | None]:
    found = []
    for text in inputs:
        try:
            found.append(reference(text))
        except Exception:  # another input format: no match
            found.append(None)
    return found


def _known_references() -> dict[str, object]:
    """Every curriculum family (a few draws of its parameters), devset.py and the worked
    example, as whole input -> whole output without newline."""
    found: dict[str, object] = {}
    for family in families():
        for draw in range(12):
            params = family.params(random.Random(draw))
            found[f"{family.name} {params!r}"] = lambda text, f=family, p=params: f.solve(text, p)
    for name, _statement, _inputs, reference in devset.PROBLEMS:
        found[f"devset {name}"] = reference
    found["worked example"] = lambda text: str(2 * int(text.split()[0]) + int(text.split()[1]))
    return found


def _small(text: str) -> bool:
    # tier 2-4 references loop up to n (factorial, pascal-row, ...) and to-base never ends on
    # a negative n: run them only where every integer is in 0..1000
    return all(0 <= int(token) <= 1000 for token in text.split() if token.lstrip("-").isdigit())


def test_no_known_reference_passes_every_case_of_a_non_kin_problem() -> None:
    """More than statements: a program written for a curriculum family, a devset.py
    problem or the worked example must fail some case of every non-kin problem."""
    references = _known_references()
    tiers = {family.name: family.tier for family in families()}
    caught = {}
    for name, _statement, inputs, reference in holdout.PROBLEMS:
        want = [reference(text) for text in inputs]
        for label, known in references.items():
            family = label.split()[0]
            if tiers.get(family, 1) > 1 and not all(map(_small, inputs)):
                continue
            if _outputs(known, inputs) == want:
                caught.setdefault(name, label)
    assert set(caught) <= set(holdout.KIN), {n: caught[n] for n in set(caught) - set(holdout.KIN)}
    # the check has teeth: count-digits is line-length, and its cases cannot tell them apart
    assert caught["count-digits"].startswith("line-length")
