"""A development set of 12 stdio problems outside the curriculum, for bench/learning.py.

Not held out any more: bench/train_prompt.py chose settings on some of them, and 7 of
the 12 are one-parameter variants of curriculum families or of the worked example
(decrement is add-constant with k=-1, seconds is times-constant, ...). The clean
held-out test is bench/holdout.py. These problems are phrased in their own words. Expected outputs come from
the small Python references below, run here (they are our code, not the model's);
the model's programs run only in the sandbox.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from codeloop.store import sha256_json
from codeloop.tasks.schema import Case, Provenance, Task, make_task

Problem = tuple[str, str, list[str], Callable[[str], str]]
"""(name, statement, hidden inputs, reference: whole input -> whole output without newline)."""


def _ints(text: str) -> list[int]:
    return [int(token) for token in text.split()]


PROBLEMS: list[Problem] = [
    (
        "cube",
        "You are given an integer n on standard input. Output n cubed (n * n * n).",
        ["2\n", "-3\n", "10\n", "0\n"],
        lambda s: str(_ints(s)[0] ** 3),
    ),
    (
        "decrement",
        "Standard input holds one integer. Write out the integer that comes just before it.",
        ["5\n", "0\n", "-7\n", "1000\n"],
        lambda s: str(_ints(s)[0] - 1),
    ),
    (
        "mod-seven",
        "Given a non-negative integer x, print the remainder when x is divided by 7.",
        ["20\n", "7\n", "3\n", "100\n"],
        lambda s: str(_ints(s)[0] % 7),
    ),
    (
        "affine",
        "Three integers a, b and c are given on one line. Print the value of a * b + c.",
        ["2 3 4\n", "-1 5 10\n", "0 9 -2\n", "7 7 7\n"],
        lambda s: str(_ints(s)[0] * _ints(s)[1] + _ints(s)[2]),
    ),
    (
        "same-or-not",
        "Two integers are given on one line. Print 1 if they are equal and 0 otherwise.",
        ["4 4\n", "4 5\n", "-2 -2\n", "0 1\n"],
        lambda s: "1" if _ints(s)[0] == _ints(s)[1] else "0",
    ),
    (
        "divisible-by-three",
        "Given an integer n, print YES when n is a multiple of 3 and NO when it is not.",
        ["9\n", "10\n", "0\n", "-6\n"],
        lambda s: "YES" if _ints(s)[0] % 3 == 0 else "NO",
    ),
    (
        "hours",
        "A number of minutes m (0 <= m <= 10000) is given. Print how many full hours it holds.",
        ["59\n", "60\n", "135\n", "10000\n"],
        lambda s: str(_ints(s)[0] // 60),
    ),
    (
        "hundred-minus",
        "An integer n is given. Print the result of 100 minus n.",
        ["1\n", "100\n", "250\n", "-5\n"],
        lambda s: str(100 - _ints(s)[0]),
    ),
    (
        "first-letter",
        "A single lowercase word is given on standard input. Print its first letter.",
        ["apple\n", "zebra\n", "m\n", "queue\n"],
        lambda s: s.split()[0][0],
    ),
    (
        "swap-words",
        "Two words are given on one line, separated by a space. Print them in the "
        "opposite order, separated by a space.",
        ["hello world\n", "a b\n", "red blue\n", "x yz\n"],
        lambda s: " ".join(reversed(s.split()[:2])),
    ),
    (
        "double-plus-one",
        "Read an integer k and print 2 * k + 1.",
        ["0\n", "5\n", "-4\n", "123\n"],
        lambda s: str(2 * _ints(s)[0] + 1),
    ),
    (
        "seconds",
        "A duration in hours h is given. Print the number of seconds in h hours.",
        ["1\n", "0\n", "24\n", "3\n"],
        lambda s: str(_ints(s)[0] * 3600),
    ),
]

PROVENANCE_LICENSE = "Apache-2.0"


def tasks(languages: Sequence[str]) -> list[Task]:
    """Every held-out problem as a stdio task in each language (split `test`)."""
    found: list[Task] = []
    for name, statement, inputs, reference in PROBLEMS:
        cases = [Case(input=text, output=reference(text) + "\n") for text in inputs]
        provenance = Provenance(
            dataset="codeloop-bench-heldout",
            revision="1",
            source_row_sha256=sha256_json({"name": name, "statement": statement}),
            license=PROVENANCE_LICENSE,
        )
        for language in languages:
            found.append(
                make_task(
                    family=f"heldout/{name}",
                    language=language,
                    kind="stdio",
                    statement=statement,
                    cases=cases,
                    public_cases=cases[:1],
                    split="test",
                    provenance=provenance,
                )
            )
    return found
