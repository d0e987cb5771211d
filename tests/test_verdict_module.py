"""The verdict is one module's: `verdict.py` decides every status, the checker and the
compiler ask it through public functions, and no module reaches into its private helpers
(or into a language's home other than through the registry).

Runs no program: each case's verdict is read from a made-up finished run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codeloop.sandbox import verdict
from codeloop.sandbox.harness import RunResult
from codeloop.sandbox.languages import get
from codeloop.sandbox.request import Case

PACKAGE = Path(verdict.__file__).resolve().parents[1]
PYTHON = get("python")
CASE = Case(input="2 3\n", output="5\n")


def _run(
    stdout: bytes = b"", stderr: bytes = b"", exit_code: int | None = 0, **extra: object
) -> RunResult:
    return RunResult(
        exit_code=exit_code, signal=None, stdout=stdout, stderr=stderr, wall_ms=1.0, **extra
    )


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every import in the file at `path`: `from module import name`,
    and `import module` as (module, "")."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
    return found


def test_no_module_imports_a_private_helper_of_the_verdict() -> None:
    reached = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "verdict.py"
        for module, name in _imports(path)
        if module == "codeloop.sandbox.verdict" and name.startswith("_")
    ]
    assert reached == []


def test_only_the_registry_imports_the_java_home() -> None:
    """Java's javac and its compile service are the Java home's: every other module
    reaches them through `Home.compile_service`, so a check need not import them."""
    java = PACKAGE / "sandbox" / "languages" / "java"
    registry = PACKAGE / "sandbox" / "languages" / "__init__.py"
    home = "codeloop.sandbox.languages.java"
    reached = [
        f"{path.relative_to(PACKAGE)}: {module} {name}".strip()
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != registry and java not in path.parents
        for module, name in _imports(path)
        if home in (module, f"{module}.{name}") or module.startswith(home + ".")
    ]
    assert reached == []


def test_a_case_that_printed_the_answer_passed() -> None:
    assert verdict.case_verdict(PYTHON, 0, CASE, _run(b"5\n"), "tokens") == (None, "")


def test_a_wrong_output_is_a_wrong_answer_with_the_case_in_its_feedback() -> None:
    status, feedback = verdict.case_verdict(PYTHON, 2, CASE, _run(b"6\n"), "tokens")
    assert status == "wrong_answer"
    assert feedback.startswith("Test 3: wrong answer")
    assert "Expected output:\n5" in feedback and "Your output:\n6" in feedback


def test_a_parse_error_is_a_compile_error_on_the_first_case_only() -> None:
    failed = _run(stderr=b'  File "main.py", line 1\nSyntaxError: invalid syntax\n', exit_code=1)
    status, feedback = verdict.case_verdict(PYTHON, 0, CASE, failed, "tokens")
    assert status == "compile_error"
    assert feedback.startswith("Compilation failed:\n")
    # A later case ran the program that parsed for the first: no compile error there.
    assert verdict.case_verdict(PYTHON, 1, CASE, failed, "tokens").status == "runtime_error"


@pytest.mark.parametrize(
    ("run", "status"),
    [
        (
            _run(exit_code=1, stderr=b"Traceback (most recent call last):\nValueError\n"),
            "runtime_error",
        ),
        (_run(exit_code=None, timed_out=True), "timeout"),
        (_run(exit_code=None, oom_killed=True), "memory_limit"),
        (_run(output_exceeded=True), "output_limit"),
    ],
)
def test_how_a_case_run_ended_decides_its_status(run: RunResult, status: str) -> None:
    assert verdict.case_verdict(PYTHON, 0, CASE, run, "tokens").status == status


def test_a_broken_sandbox_is_an_environment_error_with_its_reason() -> None:
    run = _run(exit_code=None, setup_error="bwrap: cannot mount /box")
    assert verdict.case_verdict(PYTHON, 0, CASE, run, "tokens") == (
        "environment_error",
        "bwrap: cannot mount /box",
    )


def test_a_failed_compile_keeps_the_compilers_first_lines() -> None:
    output = "".join(f"main.cpp:{n}: error: e{n}\n" for n in range(40))
    check = verdict.compile_failure(output, "bwrap", compile_ms=12.0)
    assert check.status == "compile_error" and check.backend == "bwrap"
    assert check.compile_ms == 12.0
    assert check.feedback.startswith("Compilation failed:\nmain.cpp:0: error: e0")
    assert "e29" in check.feedback and "e30" not in check.feedback
    assert verdict.compiler_output(_run(b"out", b"err")) == "errout"


def test_a_plain_run_reads_as_a_check_would() -> None:
    step = verdict.run_step(PYTHON, _run(exit_code=None, oom_killed=True))
    assert (step.status, step.memory_limit) == ("finished", True)
    assert verdict.run_step(PYTHON, _run(exit_code=None, timed_out=True)).status == "timeout"
    assert verdict.run_step(PYTHON, _run(b"5\n")).stdout == "5\n"
