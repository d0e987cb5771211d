"""Balanced task order: any prefix covers the languages and families as evenly as possible.

Rounds take the first N tasks of the pool; if the order followed the sources, a
round could be all Python or all one family, and the model would be trained and
judged on a lopsided slice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence

from codeloop.config import LANGUAGES
from codeloop.tasks.schema import Task


def _family_key(language: str, family: str) -> str:
    # Hashed with the language so that different languages start with different families.
    return hashlib.sha256(f"{language}\0{family}".encode()).hexdigest()


def balanced_order(
    tasks: Sequence[Task], n: int | None = None, exclude: Collection[str] = ()
) -> list[Task]:
    """Round-robin across languages, and within a language across families.

    Deterministic and independent of the input order: languages go in the canonical
    order of `config.LANGUAGES` (others after, sorted), families within a language in
    a stable hashed order, tasks within a family by id. Returns the first `n` (all when None) of
    the tasks whose id is not in `exclude`.

    `exclude` is how successive rounds draw from one pool: the order is that of the
    whole pool, used tasks included, and a round takes the next unused tasks in it.
    So round 2 continues the round-robin where round 1 stopped (the families round 1
    did not reach) instead of starting it again, which would give every round the
    same few families per language at their next variant.
    """
    by_language: dict[str, dict[str, list[Task]]] = {}
    for task in tasks:
        by_language.setdefault(task.language, {}).setdefault(task.family, []).append(task)
    languages = [lang for lang in LANGUAGES if lang in by_language]
    languages += sorted(set(by_language) - set(LANGUAGES))
    queues: list[list[Task]] = []
    for language in languages:
        families = by_language[language]
        ordered = sorted(families, key=lambda family: _family_key(language, family))
        per_family = [sorted(families[family], key=lambda task: task.id) for family in ordered]
        queues.append(_round_robin(per_family))
    result = [task for task in _round_robin(queues) if task.id not in exclude]
    return result if n is None else result[: max(n, 0)]


def _round_robin(groups: list[list[Task]]) -> list[Task]:
    result: list[Task] = []
    depth = max((len(group) for group in groups), default=0)
    for index in range(depth):
        result.extend(group[index] for group in groups if index < len(group))
    return result
