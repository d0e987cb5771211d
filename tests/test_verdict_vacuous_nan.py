"""Vacuous tests and non-finite answers in the two-sandbox function tests (JavaScript,
C++, Java, Go, Rust).

A test that ran to its end without calling the solution once (an empty `main`, a Go
file without test functions, Rust tests commented out) passes any program: the trusted
test side prints the vacuous line instead of the nonce, and the verdict is an
environment error of the task (`task_error`), never a pass. A NaN or an infinity the
solution returns is a wrong answer whatever the test's comparison says: before, a NaN
passed HumanEval-X CPP/21, CPP/62 and Java/32 (`abs(a - b) > 1e-4` is false for NaN),
-Infinity passed JavaScript/2 and Rust/4 (`x - y < 1e-6`), and NaN passed the small
tasks below whose tests compare the same way. Canonical solutions of the same tasks
still pass. Every check runs in bubblewrap through one `check_many` batch.
"""

from __future__ import annotations

import pytest

from codeloop.data import HUMANEVAL_X
from codeloop.evaluate import load_humaneval_x
from codeloop.evaluate.humaneval import humaneval_x_job
from codeloop.sandbox import Check, CheckRequest, check_many
from codeloop.sandbox.languages.rust import EMPTY_MAIN as RUST_MAIN

NON_FINITE = "where a finite number is expected"

# (HumanEval-X task, generation): wrong answers with NaN or an infinity in the result.
HUMANEVAL_X_NON_FINITE: dict[str, tuple[str, str]] = {
    "cpp-21-nan": ("CPP/21", "    return vector<float>(numbers.size(), NAN);\n}\n"),
    "cpp-62-nan": (
        "CPP/62",
        "    return vector<float>(xs.size() > 0 ? xs.size() - 1 : 0, NAN);\n}\n",
    ),
    "java-32-nan": ("Java/32", "        return Double.NaN;\n    }\n}\n"),
    # Right where the test compares exactly, -Infinity where it tests `abs(x < 1e-6)`.
    "javascript-2-infinity": (
        "JavaScript/2",
        "  if (number === 3.5) return 0.5;\n"
        "  if (number === 1.33) return number % 1.0;\n"
        "  return -Infinity;\n}\n",
    ),
    "javascript-4-nan": ("JavaScript/4", "  return NaN;\n}\n"),
    "go-4-nan": ("Go/4", "    return math.NaN()\n}\n"),
    # The test asserts `x - y < 0.000001` only.
    "rust-4-infinity": ("Rust/4", "    let _ = numbers;\n    f32::NEG_INFINITY\n}\n"),
    "rust-21-nan": ("Rust/21", "    numbers.iter().map(|_| f32::NAN).collect()\n}\n"),
}
CANONICAL = sorted({task_id for task_id, _body in HUMANEVAL_X_NON_FINITE.values()})

# Small tasks whose tests compare with `abs(x - y) > tolerance`, which NaN passes:
# (language, prompt, right body, NaN body, test).
RATIO: dict[str, tuple[str, str, str, str, str]] = {
    "javascript": (
        "const ratio = (a, b) => {\n",
        "  return a / b;\n}\n",
        "  return NaN;\n}\n",
        "if (Math.abs(ratio(1, 2) - 0.5) > 1e-9) throw new Error('ratio(1, 2) is wrong');\n",
    ),
    "go": (
        "func Ratio(a float64, b float64) float64 {\n",
        "    return a / b\n}\n",
        "    return math.NaN()\n}\n",
        "func TestRatio(t *testing.T) {\n"
        '    if math.Abs(Ratio(1, 2)-0.5) > 1e-9 {\n        t.Fatal("Ratio(1, 2) is wrong")\n    }\n'
        "}\n",
    ),
    "rust": (
        RUST_MAIN + "\nfn ratio(a: f64, b: f64) -> f64{\n",
        "    a / b\n}\n",
        "    let _ = (a, b);\n    f64::NAN\n}\n",
        "#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n"
        "    fn test_ratio() {\n"
        "        if (ratio(1.0, 2.0) - 0.5).abs() > 1e-9 {\n"
        '            panic!("ratio(1, 2) is wrong");\n        }\n    }\n}\n',
    ),
}

# (HumanEval-X task, test that never calls the solution), run with the canonical solution.
VACUOUS: dict[str, tuple[str, str]] = {
    "javascript-no-call": ("JavaScript/4", "console.assert(1 + 1 === 2)\n"),
    "cpp-empty-main": ("CPP/21", "#include <cassert>\nint main() {\n    assert(1 + 1 == 2);\n}\n"),
    # Calls the prompt's own `poly` (trusted, in the test's process), never findZero.
    "java-no-call": (
        "Java/32",
        "public class Main {\n    public static void main(String[] args) {\n"
        "        Solution s = new Solution();\n"
        "        if (s.poly(Arrays.asList(1.0, 2.0), -0.5) != 0.0) throw new AssertionError();\n"
        "    }\n}\n",
    ),
    "go-no-test-function": (
        "Go/4",
        'import (\n    "testing"\n)\n\nfunc helper(t *testing.T) {\n'
        "    t.Fatal(MeanAbsoluteDeviation([]float64{1}))\n}\n",
    ),
    "go-test-without-call": (
        "Go/4",
        'import (\n    "testing"\n)\n\nfunc TestNothing(t *testing.T) {\n'
        '    if 1+1 != 2 {\n        t.Fatal("arithmetic")\n    }\n}\n',
    ),
    # The tests commented out: the harness reports "test result: ok. 0 passed".
    "rust-commented-out": (
        "Rust/4",
        "/*\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n"
        "    fn test_mad() {\n"
        "        assert!(mean_absolute_deviation(vec![1.0]) < 1.0);\n    }\n}\n*/\n",
    ),
    "rust-test-without-call": (
        "Rust/4",
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn test_nothing() {\n"
        "        assert_eq!(1 + 1, 2);\n    }\n}\n",
    ),
}
LANGUAGES = ["javascript", "cpp", "java", "go", "rust"]
VACUOUS_CANONICAL = ["CPP/23", "Rust/32"]
"""HumanEval-X's own vacuous tests, which passed any program before: Rust/32's whole test
module is a comment; CPP/23's `strlen("x")` calls the C library's strlen(const char*)
(an exact match for a string literal), never the solution's strlen(string)."""


def _request(row: dict, generation: str, test: str | None = None) -> CheckRequest:
    job = humaneval_x_job(row, generation)
    return CheckRequest(
        language=job.language,
        program=job.program,
        test=job.test if test is None else test,
        prompt=job.prompt,
        entry_point=job.entry_point,
    )


@pytest.fixture(scope="module")
def checks() -> dict[str, Check]:
    rows = load_humaneval_x(HUMANEVAL_X, LANGUAGES).rows
    wanted: dict[str, CheckRequest] = {}
    for name, (task_id, body) in HUMANEVAL_X_NON_FINITE.items():
        wanted[name] = _request(rows[task_id], body)
    for task_id in CANONICAL:
        wanted[f"canonical {task_id}"] = _request(
            rows[task_id], rows[task_id]["canonical_solution"]
        )
    for language, (prompt, right, nan, test) in RATIO.items():
        for kind, body in (("right", right), ("nan", nan)):
            wanted[f"ratio-{kind} {language}"] = CheckRequest(
                language=language, program=prompt + body, test=test, prompt=prompt
            )
    for name, (task_id, test) in VACUOUS.items():
        row = rows[task_id]
        if task_id.startswith("Go/"):
            test = row["test_setup"] + "\n" + test
        wanted[name] = _request(row, row["canonical_solution"], test)
    for task_id in VACUOUS_CANONICAL:
        row = rows[task_id]
        wanted[f"vacuous {task_id}"] = _request(row, row["canonical_solution"])
    results = check_many(list(wanted.values()), workers=2)
    return dict(zip(wanted, results, strict=True))


@pytest.mark.parametrize("name", sorted(HUMANEVAL_X_NON_FINITE))
def test_a_non_finite_answer_to_a_humaneval_x_task_is_wrong(
    checks: dict[str, Check], name: str
) -> None:
    check = checks[name]
    assert check.status == "wrong_answer", (name, check.status, check.feedback)
    assert NON_FINITE in check.feedback, (name, check.feedback)


@pytest.mark.parametrize("language", sorted(RATIO))
def test_nan_fails_a_test_that_nan_slips_through(checks: dict[str, Check], language: str) -> None:
    check = checks[f"ratio-nan {language}"]
    assert check.status == "wrong_answer", (language, check.status, check.feedback)
    assert "the solution returned NaN " + NON_FINITE in check.feedback, check.feedback


@pytest.mark.parametrize("language", sorted(RATIO))
def test_a_finite_answer_to_the_same_task_passes(checks: dict[str, Check], language: str) -> None:
    check = checks[f"ratio-right {language}"]
    assert check.status == "passed", (language, check.feedback)


@pytest.mark.parametrize("task_id", CANONICAL)
def test_canonical_solutions_of_the_float_tasks_pass(
    checks: dict[str, Check], task_id: str
) -> None:
    check = checks[f"canonical {task_id}"]
    assert check.status == "passed", (task_id, check.feedback)


@pytest.mark.parametrize("name", sorted(VACUOUS))
def test_a_test_that_never_calls_the_solution_is_no_verdict(
    checks: dict[str, Check], name: str
) -> None:
    check = checks[name]
    assert check.status == "environment_error", (name, check.status, check.feedback)
    assert check.task_error, (name, check.feedback)
    assert not check.passed


@pytest.mark.parametrize("task_id", VACUOUS_CANONICAL)
def test_humaneval_x_tests_that_never_call_the_solution_are_no_verdict(
    checks: dict[str, Check], task_id: str
) -> None:
    check = checks[f"vacuous {task_id}"]
    assert check.status == "environment_error", (task_id, check.status, check.feedback)
    assert check.task_error
