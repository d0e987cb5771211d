"""A curriculum problem family: parametric statement, seeded inputs, Python reference.

The reference `solve(data, p)` is plain Python that takes the whole standard input
and the variant's parameters and returns the whole expected output (without the
final newline). It is called in-process to compute expected outputs, and its own
source text, plus a small main, is the reference *program* that the pool runs in
the sandbox. So a reference must be self-contained: builtins and imports inside
the function only, no module globals.
"""

from __future__ import annotations

import inspect
import random
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Params = dict[str, Any]
Generator = Callable[[random.Random, Params], str]
"""Makes one input text of a variant from a seeded random source."""


@dataclass(frozen=True)
class Family:
    """One problem family; `name` is unique in the curriculum."""

    name: str
    tier: int
    title: str
    params: Callable[[random.Random], Params]
    statement: Callable[[Params], str]
    generate: Generator
    solve: Callable[[str, Params], str]
    checker: str = "lines"

    def expected(self, data: str, p: Params) -> str:
        """The expected standard output for one input: the reference's answer plus a newline."""
        return self.solve(data, p) + "\n"

    def program(self, p: Params) -> str:
        """The reference as a complete stdin/stdout Python program for this variant."""
        source = textwrap.dedent(inspect.getsource(self.solve))
        name = self.solve.__name__
        return (
            "import sys\n\n\n"
            f"{source.rstrip()}\n\n\n"
            f"PARAMS = {p!r}\n"
            f'sys.stdout.write({name}(sys.stdin.read(), PARAMS) + "\\n")\n'
        )


def ints(rng: random.Random, count: int, low: int, high: int) -> list[int]:
    """`count` integers drawn uniformly from [low, high]."""
    return [rng.randint(low, high) for _ in range(count)]


def joined(values: list[Any], sep: str = " ") -> str:
    """Values as text, separated by `sep`."""
    return sep.join(str(value) for value in values)


def sized_list(rng: random.Random, low: int, high: int, n_low: int = 1, n_high: int = 10) -> str:
    """The common input shape: a line with n, then a line with n integers."""
    values = ints(rng, rng.randint(n_low, n_high), low, high)
    return f"{len(values)}\n{joined(values)}\n"


WORDS = (
    "apple", "banana", "cherry", "delta", "echo", "forest", "garden", "harbor", "island",
    "jungle", "kettle", "lemon", "mango", "needle", "orange", "pepper", "quartz", "river",
    "silver", "tiger", "umbrella", "violet", "window", "yellow", "zebra", "code", "loop",
    "data", "model", "test", "level", "radar", "noon", "civic", "stats", "refer", "kayak",
)  # fmt: skip


def word(rng: random.Random) -> str:
    """A lowercase word."""
    return rng.choice(WORDS)


def sentence(rng: random.Random, low: int = 2, high: int = 7) -> str:
    """Lowercase words separated by single spaces."""
    return " ".join(word(rng) for _ in range(rng.randint(low, high)))
