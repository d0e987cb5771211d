"""Family-disjoint splits and the pool's integrity rules.

A model must never be validated on a problem family it trained on, so the split
is a pure function of the family name and the session salt: every task of a
family lands in the same split, in every batch, on every machine, without any
shared state. The pool still re-checks the rule, because tasks can also arrive
from files a person edited.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from codeloop.config import SplitFractions
from codeloop.errors import IntegrityError
from codeloop.tasks.schema import SPLITS, Task

_SCALE = float(1 << 64)


def family_point(family: str, salt: str) -> float:
    """A stable point in [0, 1) for a family under a salt (sha256, not Python's hash)."""
    digest = hashlib.sha256(f"{salt}\0{family}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


def assign_split(family: str, salt: str, fractions: SplitFractions) -> str:
    """The split of `family`: where its stable point falls among the configured fractions."""
    point = family_point(family, salt)
    if point < fractions.train:
        return "train"
    if point < fractions.train + fractions.dev:
        return "dev"
    if fractions.test > 0:
        return "test"
    # Rounding left a sliver above train + dev with test == 0: give it to the last
    # non-empty split so that a zero fraction is never assigned.
    return "dev" if fractions.dev > 0 else "train"


def check_pool(tasks: Iterable[Task], where: str = "pool") -> None:
    """Refuse a duplicate task id, a task without a split, or a family in two splits.

    The message names the task or family and `where` (a batch folder), so the
    person can find and remove the offending batch.
    """
    seen: dict[str, str] = {}
    family_split: dict[str, str] = {}
    for task in tasks:
        if task.id in seen:
            raise IntegrityError(
                f"{where}: task {task.id} (family {task.family}, {task.language}) appears twice; "
                "a pool may hold each task once. Delete the later batch and build it again."
            )
        seen[task.id] = task.family
        if task.split not in SPLITS:
            raise IntegrityError(f"{where}: task {task.id} has no split; it was never pooled")
        previous = family_split.setdefault(task.family, task.split)
        if previous != task.split:
            raise IntegrityError(
                f"{where}: family {task.family!r} is in two splits ({previous} and {task.split}, "
                f"task {task.id}); a family must never cross splits. Were batches built with "
                "different tasks.salt or tasks.splits? Rebuild the pool with one setting."
            )
