"""The order rows are trained in: a pure function of the seed and the dataset.

The Trainer's own random sampler draws from torch's global generator, whose state
after a resume depends on what ran before; a resumed run could then see rows in
another order than an uninterrupted one. So codeloop fixes the whole order up
front, one seeded permutation per epoch, and lets the Trainer read it
sequentially: resuming at step k then means skipping k * batch rows, nothing more.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from codeloop import store


@dataclass(frozen=True)
class Plan:
    """`order` holds dataset indices, exactly `steps * rows_per_step` of them."""

    order: list[int]
    steps: int
    rows_per_step: int
    rows: int

    @property
    def epochs(self) -> float:
        """Passes over the data the plan makes (whole steps, so a little over max_epochs)."""
        return len(self.order) / self.rows


def epoch_permutation(rows: int, seed: int, epoch: int) -> list[int]:
    """Permutation of `range(rows)` for one epoch, from a key derived from (seed, epoch)."""
    key = int(store.sha256_json({"seed": seed, "epoch": epoch, "use": "train-order"})[:16], 16)
    order = list(range(rows))
    random.Random(key).shuffle(order)
    return order


def plan(rows: int, *, seed: int, rows_per_step: int, max_steps: int, max_epochs: float) -> Plan:
    """Steps = min(max_steps, ceil(max_epochs * rows / rows_per_step)); every step is full.

    Each optimizer step sees exactly `rows_per_step` rows (batch x accumulation),
    continuing into the next epoch's permutation when needed, so the loss scale
    of the last step is like every other.
    """
    if rows <= 0:
        raise ValueError("cannot plan training on an empty dataset")
    steps = max(1, min(max_steps, math.ceil(max_epochs * rows / rows_per_step)))
    order: list[int] = []
    epoch = 0
    while len(order) < steps * rows_per_step:
        order.extend(epoch_permutation(rows, seed, epoch))
        epoch += 1
    return Plan(order[: steps * rows_per_step], steps, rows_per_step, rows)
