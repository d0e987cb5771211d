"""balanced_order: any prefix is balanced across languages and families; order is canonical."""

from __future__ import annotations

import random
from collections import Counter

from codeloop.config import LANGUAGES, CurriculumSource
from codeloop.tasks.curriculum import Curriculum
from codeloop.tasks.order import balanced_order


def tasks() -> list:
    config = CurriculumSource(kind="curriculum", tiers=[1, 2], variants=2)
    return [t for p in Curriculum(config, 7, list(LANGUAGES)).problems() for t in p.tasks]


def test_every_prefix_is_balanced_across_languages() -> None:
    ordered = balanced_order(tasks())
    for size in range(1, len(ordered) + 1):
        counts = Counter(task.language for task in ordered[:size])
        spread = [counts.get(language, 0) for language in LANGUAGES]
        assert max(spread) - min(spread) <= 1


def test_families_rotate_within_a_language() -> None:
    ordered = balanced_order(tasks())
    python = [task.family for task in ordered if task.language == "python"]
    families = len(set(python))
    assert len(set(python[:families])) == families  # each family once before any repeats
    first_round = [task.family for task in ordered[: len(LANGUAGES)]]
    assert len(set(first_round)) > 1  # languages do not all start with one family


def test_canonical_whatever_the_input_order_and_n() -> None:
    base = tasks()
    shuffled = list(base)
    random.Random(3).shuffle(shuffled)
    assert [t.id for t in balanced_order(base)] == [t.id for t in balanced_order(shuffled)]
    assert [t.id for t in balanced_order(base, 10)] == [t.id for t in balanced_order(base)[:10]]
    assert balanced_order(base, 0) == []
    assert balanced_order([]) == []


def test_successive_draws_continue_the_round_robin_across_rounds() -> None:
    # Rounds draw from one pool: the second draw must reach the families the first did
    # not, not restart the round-robin over what is left (which gives every round the
    # same few families per language, at their next variant).
    pool = tasks()
    per_round = 3 * len(LANGUAGES)
    first = balanced_order(pool, per_round)
    second = balanced_order(pool, per_round, exclude={t.id for t in first})
    assert not {t.id for t in first} & {t.id for t in second}
    for language in LANGUAGES:
        before = {t.family for t in first if t.language == language}
        after = {t.family for t in second if t.language == language}
        assert len(before) == len(after) == 3
        assert not before & after, (language, before, after)
    # Restarting over the remaining tasks would repeat round 1's families.
    restarted = balanced_order([t for t in pool if t not in first], per_round)
    assert {t.family for t in restarted} == {t.family for t in first}
    # Excluding is skipping: the order of what is left is the pool's own.
    rest = balanced_order(pool, exclude={t.id for t in first})
    assert [t.id for t in rest] == [t.id for t in balanced_order(pool) if t not in first]
