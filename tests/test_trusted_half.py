"""The test's half of a compiled function test: built once per task, apart from the solution.

Every answer to a task shares the task's test half (driver, test, codec), so a check
compiles it once and later answers load it from the compile cache; only the
solution's half is compiled per answer. The solution's compile runs in a box that
holds the solution's files only: a program that reaches for the test's source at
compile time (`#include`, `include_str!`) finds nothing. All of it runs in the real
sandbox with the real compilers.
"""

from __future__ import annotations

import secrets

import pytest

from codeloop.evaluate import load_humaneval_x
from codeloop.evaluate.humaneval import humaneval_x_job
from codeloop.sandbox import CheckRequest
from codeloop.sandbox.check import Sandbox
from codeloop.sandbox.pool import leaders_first

COMPILED = {"cpp": "CPP", "rust": "Rust", "go": "Go", "java": "Java"}
"""The HumanEval-X languages whose function tests compile two halves."""


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    box = Sandbox("bwrap", worker=36)
    yield box
    box.close()


def _requests(language: str, number: int, comment: str) -> tuple[CheckRequest, CheckRequest]:
    """The canonical answer and a wrong one to task `number`, the test and the wrong
    answer made new by a trailing comment (so that neither is in the compile cache)."""
    problems = load_humaneval_x(None, [language])
    row = problems.rows[f"{COMPILED[language]}/{number}"]
    test = row["test"] + f"\n// {comment}\n"
    canonical = humaneval_x_job({**row, "test": test}, row["canonical_solution"]).request()
    wrong_program = _wrong(language, canonical.program) + f"\n// {comment}\n"
    wrong = canonical.model_copy(update={"program": wrong_program})
    return canonical, wrong


ENTRY = {
    "cpp": "has_close_elements",
    "rust": "has_close_elements",
    "go": "HasCloseElements",
    "java": "hasCloseElements",
}
"""Task 0's function in each language."""


def _wrong(language: str, program: str) -> str:
    """Task 0 answered `false` whatever the input (its first statement): a wrong answer."""
    opening = program.index("{", program.rindex(ENTRY[language]))
    early = " if (true) return false; " if language == "java" else " return false; "
    return program[: opening + 1] + early + program[opening + 1 :]


@pytest.mark.parametrize("language", sorted(COMPILED))
def test_the_test_half_is_compiled_once_per_task(sandbox: Sandbox, language: str) -> None:
    """The first answer to a task compiles its test half; the next answer to the same
    task compiles only its own half (and gets its own verdict); another test is
    another half."""
    canonical, wrong = _requests(language, 0, secrets.token_hex(8))
    first = sandbox.check(canonical)
    assert first.status == "passed", first
    assert first.test_compile_ms > 0
    second = sandbox.check(wrong)
    assert second.status == "wrong_answer", second
    assert second.test_compile_ms == 0 and second.compile_ms > 0
    other, _ = _requests(language, 0, secrets.token_hex(8))
    third = sandbox.check(other)
    assert third.status == "passed" and third.test_compile_ms > 0, third


@pytest.mark.parametrize(
    ("language", "reach"),
    [
        ("cpp", '#include "main.cpp"\n'),
        ("cpp", '#include "/box/main.cpp"\n'),
        ("rust", 'const _TEST: &str = include_str!("main.rs");\n'),
        ("rust", 'const _TEST: &str = include_str!("/box/main.rs");\n'),
    ],
)
def test_the_solutions_compile_never_sees_the_test(
    sandbox: Sandbox, language: str, reach: str
) -> None:
    """A program that reads the test's source at compile time (to learn its expected
    values) finds no such file: the solution's half compiles in a box of its own,
    before the test's half joins it for the run."""
    canonical, _ = _requests(language, 0, secrets.token_hex(8))
    check = sandbox.check(canonical.model_copy(update={"program": reach + canonical.program}))
    assert check.status == "compile_error", check
    name = "main.cpp" if language == "cpp" else "main.rs"
    assert name in check.feedback
    assert "No such file" in check.feedback or "couldn't read" in check.feedback


@pytest.mark.parametrize("language", ["cpp", "java", "rust"])
def test_a_test_that_does_not_compile_is_no_verdict_on_the_answer(
    sandbox: Sandbox, language: str
) -> None:
    """A test half built from the task alone that does not compile fails every answer
    alike: the task's fault (environment_error, task_error), never a compile_error that
    would score a right answer 0. Rust's test crate holds proxies shaped by the
    program's own helpers, so there the program may be at fault: a compile_error."""
    canonical, _ = _requests(language, 0, secrets.token_hex(8))
    broken = canonical.model_copy(update={"test": canonical.test + "\nnot valid code here\n"})
    check = sandbox.check(broken)
    if language == "rust":
        assert check.status == "compile_error" and not check.task_error, check
    else:
        assert check.status == "environment_error" and check.task_error, check
        assert "test did not compile" in check.feedback


def test_the_first_answer_to_each_task_starts_first() -> None:
    """A batch starts one answer per task before the others, so each task's test half
    is built once before its answers spread over the workers; stdio checks keep
    their order among the leaders."""

    def answer(task: str, program: str) -> CheckRequest:
        return CheckRequest(language="cpp", program=program, test=task, prompt="int f();")

    stdio = CheckRequest(
        language="python", program="print(1)", cases=[{"input": "", "output": "1"}]
    )
    batch = [
        answer("A", "1"),
        answer("A", "2"),
        answer("B", "1"),
        stdio,
        answer("A", "3"),
        answer("B", "2"),
        answer("C", "1"),
    ]
    assert leaders_first(batch) == [0, 2, 3, 6, 1, 4, 5]
    assert sorted(leaders_first(batch)) == list(range(len(batch)))
