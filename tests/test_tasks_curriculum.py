"""The built-in curriculum: size, determinism, plain I/O contracts, and right references."""

from __future__ import annotations

import contextlib
import io
import sys
from collections import Counter

import pytest

from codeloop.config import LANGUAGES, CurriculumSource
from codeloop.tasks.curriculum import Curriculum, families, render_problem


def run_reference(program: str, stdin: str) -> str:
    """Run a reference program text in-process, as `python program.py < stdin` would."""
    captured = io.StringIO()
    saved = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(captured):
            exec(compile(program, "<reference>", "exec"), {"__name__": "__main__"})
    finally:
        sys.stdin = saved
    return captured.getvalue()


def test_at_least_80_families_in_4_tiers() -> None:
    found = families()
    tiers = Counter(family.tier for family in found)
    assert len(found) >= 80
    assert set(tiers) == {1, 2, 3, 4}
    assert min(tiers.values()) >= 15
    assert len({family.name for family in found}) == len(found)


@pytest.mark.parametrize("family", families(), ids=lambda family: family.name)
def test_reference_program_matches_the_in_process_reference(family: object) -> None:
    """The program text the sandbox runs must print exactly the expected outputs."""
    for variant in (0, 1):
        problem = render_problem(family, variant, seed=11, languages=["python"])  # type: ignore[arg-type]
        task = problem.tasks[0]
        assert 1 <= len(task.public_cases) <= 3
        assert len(task.cases) >= 1
        # no constant program can pass: the hidden outputs differ
        assert len({case.output for case in task.cases}) >= 2
        program = task.references[0].code
        for case in [*task.cases, *task.public_cases]:
            assert case.output.endswith("\n") and case.output.strip()
            assert run_reference(program, case.input) == case.output


def test_deterministic_from_the_seed() -> None:
    config = CurriculumSource(kind="curriculum", tiers=[1, 2], variants=2)
    first = [t.id for p in Curriculum(config, 5, ["python", "c"]).problems() for t in p.tasks]
    again = [t.id for p in Curriculum(config, 5, ["python", "c"]).problems() for t in p.tasks]
    other = [t.id for p in Curriculum(config, 6, ["python", "c"]).problems() for t in p.tasks]
    assert first == again
    assert len(set(first)) == len(first)
    assert set(first) != set(other)


def test_variants_differ_and_render_in_every_language() -> None:
    config = CurriculumSource(kind="curriculum", tiers=[3], variants=4)
    problems = list(Curriculum(config, 3407, list(LANGUAGES)).problems())
    per_family: dict[str, set[str]] = {}
    for problem in problems:
        assert [task.language for task in problem.tasks] == list(LANGUAGES)
        assert len({task.id for task in problem.tasks}) == len(LANGUAGES)
        # the cases are the same in every language of one problem
        assert len({str(task.cases) for task in problem.tasks}) == 1
        per_family.setdefault(problem.family, set()).add(str(problem.tasks[0].cases))
    assert all(len(variants) == 4 for variants in per_family.values())


def test_tier_1_statements_are_the_bare_problem_and_the_recipe_adds_the_language() -> None:
    from codeloop import recipe

    config = CurriculumSource(kind="curriculum", tiers=[1], variants=1)
    titles = {family.title for family in families()}
    for problem in Curriculum(config, 1, ["java", "go"]).problems():
        java, go = problem.tasks
        assert java.statement == go.statement  # the language is the recipe's job
        assert "Print only" in java.statement and java.tier == 1
        assert not any(java.statement.startswith(title + "\n") for title in titles)
        assert "Write a complete" not in java.statement
        java_turns, go_turns = recipe.messages(java), recipe.messages(go)
        assert (
            "Java" in java_turns[0]["content"] and "public class Main" in java_turns[2]["content"]
        )
        assert "Go" in go_turns[0]["content"] and "package main" in go_turns[2]["content"]
    names = {family.name for family in families() if family.tier == 1}
    assert {"exclaim-line", "sum-two"} <= names
