"""Every status a check can give, and the facts that lead to each: the table a newcomer
reads to learn when a check passed, failed, or gave no verdict.

All of it is `verdict.py`'s: the checker (`check.py`) and the compiler (`compiler.py`)
report facts (how a run ended, what a compile did, why a check was refused) and ask
there. Runs no program: each row's facts are a made-up finished run, compile or
refusal, read by the same functions a real check calls.
"""

from __future__ import annotations

import ast
import signal
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from codeloop.sandbox import verdict
from codeloop.sandbox.harness import RunResult
from codeloop.sandbox.languages import get
from codeloop.sandbox.request import STATUSES, Case, Check
from codeloop.sandbox.testbuild import TestBuild
from codeloop.sandbox.verdict import CaseTally, CompileFacts

PYTHON = get("python")
CASE = Case(input="2 3\n", output="5\n")
SANDBOX = Path(verdict.__file__).parent
BUILD = TestBuild(
    files={},
    run=[],
    failure_markers=("AssertionError",),
    success_marker="all-tests-ran",
    syntax_exit=3,
    vacuous_marker="never-called",
)
"""A composed test as the homes build one: its markers and its syntax exit code."""


def _run(
    stdout: bytes = b"5\n", stderr: bytes = b"", exit_code: int | None = 0, **extra: object
) -> RunResult:
    return RunResult(
        exit_code=exit_code, signal=None, stdout=stdout, stderr=stderr, wall_ms=1.0, **extra
    )


def _stdio(*runs: RunResult, every_case: bool = False) -> Check:
    """A stdio check whose cases ran as `runs`, folded as `check.py` folds them."""
    tally = CaseTally(cases_total=len(runs), every_case=every_case)
    for index, run in enumerate(runs):
        if not tally.add(run, verdict.case_verdict(PYTHON, index, CASE, run, "tokens")):
            break
    return tally.check(0.0, "bwrap")


def _test(run: RunResult) -> Check:
    """A composed function test that ran as `run`."""
    return verdict.test_verdict(PYTHON, BUILD, run, 0.0, "bwrap")


def _compile(**facts: object) -> Check:
    """The check of a compile with `facts` (a failed one: a success is no verdict)."""
    found = verdict.compile_verdict(CompileFacts(**{"ok": False, **facts}), "bwrap")  # type: ignore[arg-type]
    assert found is not None
    return found


def _trusted(**facts: object) -> Check:
    """The check of a trusted half built from the task alone that failed to compile."""
    found = verdict.trusted_compile_verdict(CompileFacts(ok=False, **facts), True, "bwrap")  # type: ignore[arg-type]
    assert found is not None
    return found


SYNTAX = b'  File "main.py", line 1\nSyntaxError: invalid syntax\n'
TRACEBACK = b"Traceback (most recent call last):\nValueError\n"


class Row(NamedTuple):
    status: str
    task_error: bool
    facts: str
    check: Callable[[], Check]


TABLE = [
    Row(
        "passed",
        False,
        "every stdio case exited 0 and printed its output",
        lambda: _stdio(_run(), _run()),
    ),
    Row(
        "passed",
        False,
        "a test exited 0 with its success marker",
        lambda: _test(_run(b"all-tests-ran\n")),
    ),
    Row("wrong_answer", False, "a case exited 0 with another output", lambda: _stdio(_run(b"6\n"))),
    Row("wrong_answer", False, "a test exited non-zero", lambda: _test(_run(b"", TRACEBACK, 1))),
    Row(
        "wrong_answer",
        False,
        "a test exited 0 with a failure marker on stderr",
        lambda: _test(_run(b"all-tests-ran\n", b"AssertionError")),
    ),
    Row(
        "wrong_answer",
        False,
        "a test exited 0 without its success marker",
        lambda: _test(_run(b"")),
    ),
    Row("runtime_error", False, "a case exited non-zero", lambda: _stdio(_run(b"", TRACEBACK, 1))),
    Row(
        "runtime_error",
        False,
        "a later case did not parse (the first one ran the same program)",
        lambda: _stdio(_run(), _run(b"", SYNTAX, 1)),
    ),
    Row(
        "compile_error",
        False,
        "the compiler failed, its canary compiles",
        lambda: _compile(output="e"),
    ),
    Row("compile_error", False, "the compile met its time limit", lambda: _compile(timed_out=True)),
    Row(
        "compile_error", False, "the first case did not parse", lambda: _stdio(_run(b"", SYNTAX, 1))
    ),
    Row(
        "compile_error",
        False,
        "a test exited with its syntax exit code",
        lambda: _test(_run(b"", b"", 3)),
    ),
    Row(
        "timeout",
        False,
        "a case met the wall-clock limit",
        lambda: _stdio(_run(b"", exit_code=None, timed_out=True)),
    ),
    Row(
        "timeout",
        False,
        "its CPU limit ended it (SIGXCPU, as bwrap's exit 128 + N)",
        lambda: _stdio(_run(b"", exit_code=128 + signal.SIGXCPU, cpu_limited=True)),
    ),
    Row(
        "timeout",
        False,
        "the solution's sandbox used its CPU limit, the test exited non-zero",
        lambda: _test(_run(b"", exit_code=1, partner_cpu_limited=True)),
    ),
    Row(
        "memory_limit",
        False,
        "the memory cgroup killed it",
        lambda: _stdio(_run(b"", exit_code=None, oom_killed=True)),
    ),
    Row(
        "memory_limit",
        False,
        "it exited non-zero with the language's out-of-memory phrase",
        lambda: _stdio(_run(b"", TRACEBACK + b"MemoryError\n", 1)),
    ),
    Row(
        "output_limit",
        False,
        "it printed past the output cap",
        lambda: _stdio(_run(output_exceeded=True)),
    ),
    Row(
        "environment_error",
        False,
        "the sandbox could not start a case (bwrap's status pipe)",
        lambda: _stdio(_run(b"", exit_code=None, setup_error="bwrap: no mount")),
    ),
    Row(
        "environment_error",
        False,
        "the sandbox could not start the compiler",
        lambda: _compile(setup_error="bwrap: no mount", timed_out=True),
    ),
    Row(
        "environment_error",
        False,
        "the compile failed and so did the language's known-good canary",
        lambda: _compile(output="e", broken_toolchain="the compiler also fails"),
    ),
    Row(
        "environment_error",
        True,
        "the test's half, built from the task alone, did not compile",
        lambda: _trusted(output="e"),
    ),
    Row(
        "environment_error",
        False,
        "the test's half, built from the task alone, met its compile time limit",
        lambda: _trusted(timed_out=True),
    ),
    Row(
        "environment_error",
        True,
        "the test never called the solution (its vacuous marker)",
        lambda: _test(_run(b"never-called\n")),
    ),
    *(
        Row(
            status,
            task_error,
            f"refused: {reason}",
            lambda r=reason: verdict.refused(r, "why", "bwrap"),
        )
        for reason, (status, task_error) in verdict.REFUSALS.items()
    ),
]
"""status, task_error, the facts, and the check those facts give."""


@pytest.mark.parametrize("row", TABLE, ids=lambda row: f"{row.status}: {row.facts}")
def test_the_facts_give_the_status(row: Row) -> None:
    check = row.check()
    assert (check.status, check.task_error) == (row.status, row.task_error), check.feedback


def test_the_table_names_every_status_and_every_refusal() -> None:
    assert {row.status for row in TABLE} == set(STATUSES)
    # program_too_big: a compile_error (no answer); the task's own test refused: its fault
    assert verdict.REFUSALS["program_too_big"] == ("compile_error", False)
    assert verdict.REFUSALS["task_refused"] == ("environment_error", True)


def test_the_first_failing_case_decides_and_every_case_counts_the_passes() -> None:
    wrong, right, broken = _run(b"6\n"), _run(), _run(b"", exit_code=None, setup_error="gone")
    stopped = _stdio(wrong, right, right)
    assert (stopped.status, stopped.cases_passed, stopped.cases_total) == ("wrong_answer", 0, 3)
    assert stopped.feedback.startswith("Test 1: wrong answer")
    counted = _stdio(wrong, right, _run(b"", TRACEBACK, 1), right, every_case=True)
    assert (counted.status, counted.cases_passed, counted.run_ms) == ("wrong_answer", 2, 4.0)
    # A failed sandbox or a program that does not parse ends even an every-case check.
    ended = _stdio(right, broken, right, every_case=True)
    assert (ended.status, ended.cases_passed, ended.run_ms) == ("environment_error", 1, 2.0)
    unparsed = _stdio(_run(b"", SYNTAX, 1), right, every_case=True)
    assert (unparsed.status, unparsed.cases_passed) == ("compile_error", 0)


def test_a_compile_timeout_is_a_fact_with_its_own_feedback_and_step() -> None:
    timed_out = CompileFacts(ok=False, ms=5.0, timed_out=True)
    assert _compile(timed_out=True).feedback == verdict.COMPILE_TIMED_OUT
    assert verdict.compile_step(timed_out).status == "timeout"
    failed = verdict.compile_step(CompileFacts(ok=False, output="a.c:1: error\n", ms=5.0))
    assert (failed.status, failed.exit_code, failed.stderr) == ("finished", 1, "a.c:1: error")
    broken = verdict.compile_step(CompileFacts(ok=False, broken_toolchain="no linker"))
    assert (broken.status, broken.stderr) == ("environment_error", "no linker")
    assert verdict.compile_step(CompileFacts(ok=True, ms=5.0)).exit_code == 0
    assert verdict.compile_verdict(CompileFacts(ok=True), "bwrap") is None


def _status_literals(path: Path) -> list[str]:
    """The string constants of `path` that are check statuses (docstrings are not)."""
    return [
        node.value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value in STATUSES
    ]


def test_the_checker_and_the_compiler_name_no_status() -> None:
    """They report facts; the status is `verdict.py`'s, and no feedback text carries one."""
    found = {name: _status_literals(SANDBOX / name) for name in ("check.py", "compiler.py")}
    assert found == {"check.py": [], "compiler.py": []}
    users = [
        path.name
        for path in sorted(SANDBOX.rglob("*.py"))
        if path.name != "verdict.py" and "COMPILE_TIMED_OUT" in path.read_text()
    ]
    assert users == []
