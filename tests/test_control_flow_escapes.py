"""No exception from the solution may steer the trusted test's control flow (issue 66).

A Python test calls the solution through a proxy; an exception the solution raised is
raised again in the test process. Before this fix it came back by its builtin name, so
a StopIteration ended `all(map(...))` or a `zip` loop early and silently, and the test,
having checked nothing, passed a wrong answer. The matrix below crosses every exception
a protocol reads as a signal with every test style in use; each cell must fail. A
correct answer passes every style and a plainly wrong one fails it (so each style is a
test that can fail), and a test that expects a specific exception still sees it.

The other languages' escapes are HumanEval-X answers in the wrong-answer corpus
(tests/support/attacks.py, ESCAPE_ATTACKS: thrown non-Error values and thenables in
JavaScript, Error and ThreadDeath in Java, a panic in a deferred call in Go, a non-string
panic payload and an exit from a thread in Rust, a non-exception throw, a throw through
C frames and a longjmp in C++), which tests/test_function_verdicts.py runs with the
rest; Go's runtime.Goexit needs an import its prompt lacks, so it runs here.
Every program runs in the sandbox through `check_many`, in one batch.
"""

from __future__ import annotations

import pytest

from codeloop.data import HUMANEVAL_X
from codeloop.evaluate import load_humaneval_x
from codeloop.evaluate.humaneval import humaneval_x_job
from codeloop.sandbox import Check, CheckRequest, check_many
from tests.support.attacks import ESCAPE_ATTACKS, wrong_answers

STYLES: dict[str, str] = {
    "direct": "assert double(1) == 2\nassert double(3) == 6\n",
    "loop": "for x in [1, 2, 3]:\n    assert double(x) == 2 * x\n",
    "all-map": "assert all(map(lambda x: double(x) == 2 * x, [1, 2, 3]))\n",
    "zip-loop": "for got, want in zip(map(double, [1, 2]), [2, 4]):\n    assert got == want\n",
    "filter": "assert not list(filter(lambda x: double(x) != 2 * x, [1, 2, 3]))\n",
    "generator": (
        "def cases():\n    for x in [1, 2, 3]:\n        yield double(x), 2 * x\n"
        "for got, want in cases():\n    assert got == want\n"
    ),
    "next-default": "it = map(double, [1, 2])\nassert next(it, 2) == 2\nassert next(it, 4) == 4\n",
    # The old sequence protocol: an IndexError from __getitem__ ends the iteration.
    "getitem-iteration": (
        "class Cases:\n    def __getitem__(self, i):\n        if i > 2:\n"
        "            raise IndexError(i)\n        return double(i + 1), 2 * (i + 1)\n"
        "seen = 0\nfor got, want in Cases():\n    assert got == want\n    seen += 1\n"
        "assert seen >= 0\n"
    ),
    # Mapping.get answers its default when __getitem__ raises KeyError.
    "mapping-get": (
        "from collections.abc import Mapping\n"
        "class Doubles(Mapping):\n"
        "    def __getitem__(self, x):\n        return double(x)\n"
        "    def __iter__(self):\n        return iter([1, 3])\n"
        "    def __len__(self):\n        return 2\n"
        "assert Doubles().get(1, 2) == 2\nassert Doubles().get(3, 6) == 6\n"
    ),
    # getattr(obj, name, default) answers its default when __getattr__ raises
    # AttributeError.
    "getattr-default": (
        "class Probe:\n    def __getattr__(self, name):\n        return double(int(name[1:]))\n"
        "assert getattr(Probe(), 'x1', 2) == 2\nassert getattr(Probe(), 'x3', 6) == 6\n"
    ),
}
"""Tests of `double(x) == 2 * x`, each written in one style a test may use."""

SIGNALS = [
    "StopIteration",
    "StopAsyncIteration",
    "IndexError",
    "KeyError",
    "LookupError",
    "AttributeError",
    "GeneratorExit",
    "SystemExit",
    "KeyboardInterrupt",
]
"""What the wrong answers raise: every exception some protocol reads as "done"."""

ANSWERS = {
    **{f"raises {name}": f"def double(x):\n    raise {name}('no')\n" for name in SIGNALS},
    # The same class without naming it: next() on an empty iterator inside the solution.
    "raises StopIteration from next()": "def double(x):\n    return next(iter([]))\n",
    "right": "def double(x):\n    return 2 * x\n",
    "wrong value": "def double(x):\n    return x\n",
}

EXPECTED_EXCEPTIONS: dict[str, tuple[str, str, str]] = {
    # name: (program, test, status a correct test run must give)
    "try-except ValueError": (
        "def half(x):\n    if x % 2:\n        raise ValueError('odd')\n    return x // 2\n",
        "assert half(4) == 2\ntry:\n    half(3)\nexcept ValueError:\n    pass\n"
        "else:\n    raise AssertionError('no ValueError')\n",
        "passed",
    ),
    "assertRaises IndexError": (
        "def at(xs, i):\n    return xs[i]\n",
        "import unittest\ncase = unittest.TestCase()\nassert at([1, 2], 1) == 2\n"
        "with case.assertRaises(IndexError):\n    at([1], 5)\n",
        "passed",
    ),
    "assertRaises KeyError": (
        "def lookup(d, k):\n    return d[k]\n",
        "import unittest\ncase = unittest.TestCase()\nassert lookup({'a': 1}, 'a') == 1\n"
        "with case.assertRaises(KeyError):\n    lookup({}, 'b')\n",
        "passed",
    ),
    # An answer raising another type than the one expected still fails.
    "assertRaises ValueError, got TypeError": (
        "def half(x):\n    raise TypeError('no')\n",
        "import unittest\ncase = unittest.TestCase()\n"
        "with case.assertRaises(ValueError):\n    half(3)\n",
        "wrong_answer",
    ),
}


def _goexit_request(rows: dict) -> CheckRequest:
    """Go/0 answered by runtime.Goexit (the program's imports gain "runtime")."""
    job = humaneval_x_job(rows["Go/0"], "    runtime.Goexit()\n    return false\n}\n")
    request = job.request()
    program = request.program.replace("import (\n", 'import (\n    "runtime"\n', 1)
    assert program != request.program
    return request.model_copy(update={"program": program})


@pytest.fixture(scope="module")
def checks() -> dict[str, Check]:
    wanted: dict[str, CheckRequest] = {}
    for answer, program in ANSWERS.items():
        for style, test in STYLES.items():
            wanted[f"{answer} | {style}"] = CheckRequest(
                language="python", program=program, test=test, entry_point="double"
            )
    for name, (program, test, _status) in EXPECTED_EXCEPTIONS.items():
        entry = program.split("(")[0].removeprefix("def ")
        wanted[name] = CheckRequest(
            language="python", program=program, test=test, entry_point=entry
        )
    rows = load_humaneval_x(HUMANEVAL_X, ["go"]).rows
    wanted["go goexit"] = _goexit_request(rows)
    results = check_many(list(wanted.values()), workers=2)
    return dict(zip(wanted, results, strict=True))


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("answer", [a for a in ANSWERS if a.startswith("raises")])
def test_a_raised_signal_never_ends_a_test_early(
    checks: dict[str, Check], answer: str, style: str
) -> None:
    check = checks[f"{answer} | {style}"]
    assert check.status not in ("passed", "environment_error"), (answer, style, check.feedback)


@pytest.mark.parametrize("style", STYLES)
def test_each_style_passes_a_right_answer_and_fails_a_wrong_one(
    checks: dict[str, Check], style: str
) -> None:
    right, wrong = checks[f"right | {style}"], checks[f"wrong value | {style}"]
    assert right.status == "passed", (style, right.feedback)
    assert wrong.status == "wrong_answer", (style, wrong.feedback)


@pytest.mark.parametrize("name", EXPECTED_EXCEPTIONS)
def test_a_test_that_expects_an_exception_still_sees_it(
    checks: dict[str, Check], name: str
) -> None:
    assert checks[name].status == EXPECTED_EXCEPTIONS[name][2], (name, checks[name].feedback)


def test_goexit_in_the_solution_fails(checks: dict[str, Check]) -> None:
    check = checks["go goexit"]
    assert check.status not in ("passed", "environment_error"), check.feedback


def test_every_language_has_escapes_in_the_corpus() -> None:
    """The corpus tries the class in each language that runs function tests."""
    tried = {name.split()[0] for name in ESCAPE_ATTACKS} | {"go"}
    assert tried >= {"python", "javascript", "java", "go", "rust", "cpp"}
    assert all(name in {n for _t, n, _b in wrong_answers()} for name in ESCAPE_ATTACKS)
