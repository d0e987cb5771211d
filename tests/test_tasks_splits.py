"""Family-disjoint splits: a property test over seeds and fractions, and the pool's refusals."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.config import CurriculumSource, SessionConfig, SplitFractions
from codeloop.errors import IntegrityError
from codeloop.tasks.curriculum import Curriculum
from codeloop.tasks.pool import draw
from codeloop.tasks.schema import Problem
from codeloop.tasks.splits import assign_split, check_pool


@cache
def curriculum(seed: int) -> tuple[Problem, ...]:
    config = CurriculumSource(kind="curriculum", variants=2)
    return tuple(Curriculum(config, seed, ["python", "rust", "go"]).problems())


class Fixed:
    """A source over already-rendered problems (the real curriculum's, cached for speed)."""

    kind = "curriculum"

    def __init__(self, problems: tuple[Problem, ...]) -> None:
        self._problems = problems

    def problems(self) -> Iterator[Problem]:
        return iter(self._problems)

    def manifest(self) -> dict[str, object]:
        return {"kind": self.kind}


@st.composite
def fractions(draw_value: st.DrawFn) -> SplitFractions:
    train = draw_value(st.floats(0, 1))
    dev = draw_value(st.floats(0, 1 - train))
    return SplitFractions(train=train, dev=dev, test=max(0.0, 1 - train - dev))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 3),
    salt=st.text(min_size=1, max_size=12),
    split_fractions=fractions(),
)
def test_no_family_crosses_splits(seed: int, salt: str, split_fractions: SplitFractions) -> None:
    config = SessionConfig.model_validate(
        {"seed": seed, "tasks": {"salt": salt, "splits": split_fractions.model_dump()}}
    )
    problems = draw(
        config, [Fixed(curriculum(seed % 2))], 10_000, used_ids=set(), closed_keys=set()
    )
    tasks = [task for problem in problems for task in problem.tasks]
    assert tasks
    check_pool(tasks)  # raises if any family is in two splits
    by_family: dict[str, set[str]] = {}
    for task in tasks:
        by_family.setdefault(task.family, set()).add(str(task.split))
    assert all(len(splits) == 1 for splits in by_family.values())
    for name in ("train", "dev", "test"):
        if getattr(split_fractions, name) == 0:
            assert all(name not in splits for splits in by_family.values())


def test_split_is_stable_and_follows_the_salt() -> None:
    fractions_ = SplitFractions()
    names = [f"family-{index}" for index in range(400)]
    first = [assign_split(name, "a", fractions_) for name in names]
    assert first == [assign_split(name, "a", fractions_) for name in names]
    assert first != [assign_split(name, "b", fractions_) for name in names]
    share = first.count("train") / len(names)
    assert 0.6 < share < 0.8


def test_pool_refuses_a_family_in_two_splits_naming_it() -> None:
    problem = curriculum(0)[0]
    one, two = problem.tasks[0].with_split("train"), problem.tasks[1].with_split("dev")
    with pytest.raises(IntegrityError, match=f"family '{problem.family}' is in two splits"):
        check_pool([one, two], "batch-000009")


def test_pool_refuses_a_duplicate_id_naming_it() -> None:
    task = curriculum(0)[0].tasks[0].with_split("train")
    with pytest.raises(IntegrityError, match=f"task {task.id} .* appears twice"):
        check_pool([task, task])
    with pytest.raises(IntegrityError, match="has no split"):
        check_pool([curriculum(0)[0].tasks[0]])
