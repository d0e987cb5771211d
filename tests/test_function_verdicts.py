"""Python and JavaScript function verdicts the checked program cannot forge (adversarial).

Each answer below is wrong, and each tries to be judged "passed" another way: print
the success marker it read from its own files, exit 0 early, return an object whose
`__eq__` is always true, patch the builtins the test uses, read the expected value
from the test's stack frame, reach the test process through /proc, or tamper with the
channel the values travel on. Under the former one-process composition (program and
test in one interpreter, the nonce in the program's source) six of them were judged
passed: marker-from-source, always-equal, equal-int-subclass, patched-builtin-abs,
expected-from-caller-frame and redefined-helper. The test process now runs apart from
the solution, and only plain values cross between them.

JavaScript (JS_ATTACKS): the test runs in a sandbox of its own (other uid, other pid
namespace) and calls the solution's process over two pipes. Under the former
composition marker-from-source, defineProperty-replaced and patched-math-random were
judged passed.

Go (GO_ATTACKS): the test binary and the solution are built apart and run in two
sandboxes; under the former composition (one test binary, success marker "PASS") both
were judged passed. GO_12_ATTACKS and GO_22_ATTACKS do the same through interface{}
signatures, which kept the former composition until values crossed with their types.

Java (JAVA_ATTACKS): the test's Main and the solution are compiled apart and run in
two JVMs in two sandboxes; under the former composition (one source file, the nonce
in it) both were judged passed.

C++ (CPP_ATTACKS): the test and the solution are separate programs in two sandboxes.
Under the former composition (one translation unit, no success marker) all four were
judged passed. CPP_22_ATTACKS and CPP_137_ATTACKS do the same through boost::any
signatures, which kept the former composition until values crossed with their types.

Rust (RUST_ATTACKS): the test crate (built with `rustc --test`) and the solution's
crate are built apart and run in two sandboxes; under the former composition (one
crate, marker "test result: ok.") assert-macro-shadowed, exit-before-main and
prelude-some-shadowed (RUST_12_ATTACKS) were judged passed; fake-summary-exit-zero
was not (the harness captures a test's output).

Trusted helpers (HELPER_ATTACKS): HumanEval/38 and /50 test the decoder on strings
made by the prompt's encoder. An answer that redefines the encoder as the identity,
and decodes by returning its input, was judged passed in Rust/38 (whose prompt lacks
the encoder, so the test called the solution's own); now the test's half carries the
task's encoder in every language, and such an answer fails.
Every answer runs in bubblewrap through `check_many`; all checks run in one batch.
"""

from __future__ import annotations

import pytest

from codeloop.data import HUMANEVAL_X
from codeloop.evaluate import load_humaneval_x
from codeloop.evaluate.humaneval import humaneval_x_job
from codeloop.sandbox import Check, CheckRequest, check_many
from codeloop.sandbox.languages.go import box as gobox
from tests.support.attacks import (
    SPY,
    wrong_answers,
)

WRONG = wrong_answers()
ATTACKED = sorted({task_id for task_id, _name, _body in WRONG})


@pytest.fixture(scope="module")
def checks() -> dict[str, Check]:
    languages = ["python", "javascript", "cpp", "go", "java", "rust"]
    rows = load_humaneval_x(HUMANEVAL_X, languages).rows

    def request(task_id: str, generation: str) -> CheckRequest:
        job = humaneval_x_job(rows[task_id], generation)
        return job.request()

    wanted = {name: request(task_id, body) for task_id, name, body in WRONG}
    for task_id in ATTACKED:
        wanted[f"canonical {task_id}"] = request(task_id, rows[task_id]["canonical_solution"])
    wanted["spy"] = request("Python/0", SPY)
    # An MBPP-style test: bare asserts on a named entry point, no prompt, no check().
    wanted["mbpp-right"] = CheckRequest(
        language="python",
        program="def twice(x):\n    return 2 * x\n",
        test="assert twice(3) == 6\nassert twice(-1) == -2\n",
        entry_point="twice",
    )
    wanted["mbpp-always-equal"] = CheckRequest(
        language="python",
        program="class Any:\n    def __eq__(self, other):\n        return True\n"
        "def twice(x):\n    return Any()\n",
        test="assert twice(3) == 6\n",
        entry_point="twice",
    )
    # A numpy scalar crosses as its `.item()`; a class posing as one (module "numpy",
    # a base named "generic") gains nothing: its item() is encoded as strictly.
    wanted["mbpp-fake-numpy-scalar"] = CheckRequest(
        language="python",
        program="class Any:\n    def __eq__(self, other):\n        return True\n"
        "class generic:\n    def item(self):\n        return Any()\n"
        "generic.__module__ = 'numpy'\n"
        "class int64(generic):\n    pass\n"
        "def twice(x):\n    return int64()\n",
        test="assert twice(3) == 6\n",
        entry_point="twice",
    )
    # Without an entry point, the solution's functions may reach the test, but none
    # may shadow a builtin the test uses.
    wanted["no-entry-shadows-abs"] = CheckRequest(
        language="python",
        program="def abs(x):\n    return 0\ndef half(x):\n    return 0.0\n",
        test="assert abs(half(3.0) - 1.5) < 1e-9\n",
    )
    results = check_many(list(wanted.values()), workers=2)
    return dict(zip(wanted, results, strict=True))


@pytest.mark.parametrize("attack", [name for _task, name, _body in WRONG])
def test_wrong_answer_cannot_forge_a_pass(checks: dict[str, Check], attack: str) -> None:
    check = checks[attack]
    # Killing the test process ends in SIGKILL, which is reported as a timeout.
    assert check.status not in ("passed", "environment_error"), (attack, check.feedback)


@pytest.mark.parametrize("task_id", ATTACKED)
def test_canonical_solutions_of_the_attacked_tasks_pass(
    checks: dict[str, Check], task_id: str
) -> None:
    assert checks[f"canonical {task_id}"].status == "passed", checks[f"canonical {task_id}"]


def test_the_solution_cannot_read_the_tests_or_the_nonce(checks: dict[str, Check]) -> None:
    check = checks["spy"]
    assert check.status == "wrong_answer"
    assert "SPY-FOUND []" in check.feedback, check.feedback


def test_bare_asserts_on_a_named_entry_point(checks: dict[str, Check]) -> None:
    assert checks["mbpp-right"].status == "passed", checks["mbpp-right"].feedback
    assert checks["mbpp-always-equal"].status == "wrong_answer"
    assert checks["mbpp-fake-numpy-scalar"].status == "wrong_answer"


def test_solution_functions_never_shadow_builtins(checks: dict[str, Check]) -> None:
    assert checks["no-entry-shadows-abs"].status == "wrong_answer"


GO_ORDER_DEPENDENT = {"Go/95"}
"""Canonical solutions whose verdict depends on Go's random map iteration order: Go/95
looks at the first two keys only, so {"p", "A", "B"} passes or fails by the order (one
of eight checks of it failed in one run; the benchmark's flaw, not the codec's)."""


def go_interface_tasks() -> list[str]:
    """HumanEval-X Go tasks whose open function takes or returns interface{}."""
    rows = load_humaneval_x(HUMANEVAL_X, ["go"]).rows
    found = []
    for task_id, row in rows.items():
        sig = gobox.signature(humaneval_x_job(row, "").prompt, None)
        if sig is not None and any("interface" in kind for kind in sig[1] + sig[2]):
            found.append(task_id)
    return found


def test_go_interface_tasks_cross_with_types_and_a_zero_answer_fails() -> None:
    """Every interface{} task runs in two processes: canonical passes, zero values fail.

    The zero-value answer (nil, 0, "", false for each result) is the mutant every one
    of these tests must reject; a codec that lost nil-versus-empty or dynamic types
    would let some through or fail a canonical solution.
    """
    rows = load_humaneval_x(HUMANEVAL_X, ["go"]).rows
    tasks = go_interface_tasks()
    assert len(tasks) >= 13, tasks  # the tasks that once kept the one-process composition
    requests, names = [], []
    for task_id in tasks:
        row = rows[task_id]
        outputs = gobox.signature(humaneval_x_job(row, "").prompt, None)[2]
        zero = "".join(f"    var zero{i} {kind}\n" for i, kind in enumerate(outputs))
        zero += "    return " + ", ".join(f"zero{i}" for i in range(len(outputs))) + "\n}\n"
        for name, generation in (("canonical", row["canonical_solution"]), ("zero", zero)):
            job = humaneval_x_job(row, generation)
            requests.append(
                CheckRequest(
                    language="go",
                    program=job.program,
                    test=job.test,
                    prompt=job.prompt,
                    entry_point=job.entry_point,
                )
            )
            names.append((task_id, name))
    results = dict(zip(names, check_many(requests, workers=2), strict=True))
    for task_id in tasks:
        if task_id not in GO_ORDER_DEPENDENT:
            assert results[task_id, "canonical"].status == "passed", results[task_id, "canonical"]
        assert results[task_id, "zero"].status == "wrong_answer", results[task_id, "zero"]
