"""`codeloop eval` on task suites: answers from a file or a model, pass@k, one evaluator.

Programs run in the real sandbox; the model is a tiny random Llama built here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop import store
from codeloop.config import SandboxConfig, load_preset
from codeloop.errors import ConfigError
from codeloop.evaluate import weak
from codeloop.evaluate.answers import read_answers
from codeloop.evaluate.scoring import check_requests, pass_at_k
from codeloop.evaluate.stdio import stdio_problems
from codeloop.evaluate.suites import suite_tasks
from codeloop.sandbox import CheckRequest
from codeloop.sandbox.pool import get_pool
from tests.support.loop_fixtures import fence
from tests.support.worker_kills import DOUBLE_CASES, SLOW_DOUBLE, kill_workers_mid_check

pytestmark = pytest.mark.timeout(600)

PROBLEMS = [
    {
        "problem": "double",
        "statement": "Read an integer n and print 2n.",
        "public": [{"input": "2\n", "output": "4\n"}],
        "cases": [{"input": "2\n", "output": "4\n"}, {"input": "-5\n", "output": "-10\n"}],
    },
    {
        "problem": "negate",
        "statement": "Read an integer n and print -n.",
        "public": [],
        "cases": [{"input": "3\n", "output": "-3\n"}, {"input": "0\n", "output": "0\n"}],
    },
]
RIGHT = {
    ("double", "python"): fence("python", "print(2 * int(input()))"),
    ("negate", "python"): fence("python", "print(-int(input()))"),
    ("double", "javascript"): fence(
        "javascript", "const n = Number(require('fs').readFileSync(0, 'utf8')); console.log(2 * n);"
    ),
}
WRONG = fence("python", "print(4)")  # right on the public example of "double" only


def slow_request() -> CheckRequest:
    return CheckRequest(language="python", program=SLOW_DOUBLE, cases=DOUBLE_CASES)


def test_a_worker_that_dies_during_an_honest_check_is_replaced_and_the_check_rerun() -> None:
    """The pool runs the check again on a fresh worker: the right program passes."""
    pool = get_pool("bwrap", 1)
    watcher, killed = kill_workers_mid_check(pool, 1)
    [check] = pool.run([slow_request()])
    watcher.join(timeout=5)
    assert len(killed) == 1  # the first worker really died during the check
    assert check.status == "passed", check.feedback
    # Two deaths in a row: the pool says the machine failed, never that the program did.
    watcher, killed = kill_workers_mid_check(pool, 2)
    [check] = pool.run([slow_request()])
    watcher.join(timeout=5)
    assert len(killed) == 2
    assert check.status == "environment_error" and "worker died" in check.feedback
    # `fresh` (the evaluator's re-run) starts the batch on a newly started worker process.
    [check] = pool.run([slow_request()])
    alive = pool.workers[0].process
    assert check.passed and alive is not None and alive.poll() is None
    [check] = pool.run([slow_request()], fresh=True)
    assert check.passed and pool.workers[0].process.pid != alive.pid  # type: ignore[union-attr]


def test_an_infrastructure_failure_is_rerun_on_fresh_workers_not_scored_wrong() -> None:
    """A check whose worker died twice is re-run by the evaluator on a freshly started
    worker before the language probe decides: the right answer passes. (Before, the
    probe passed and the answer was scored `runtime_error`, 'imitates a sandbox error'.)"""
    sandbox = SandboxConfig(workers=1)
    heard: list[tuple[int, str]] = []
    watcher, killed = kill_workers_mid_check(get_pool("bwrap", 1), 2)
    checks = check_requests(
        [None, slow_request()],
        sandbox,
        on_done=lambda index, check: heard.append((index, check.status)),
    )
    watcher.join(timeout=5)
    assert len(killed) == 2
    assert [c.status for c in checks] == ["wrong_answer", "passed"], checks[1].feedback
    assert heard == [(1, "passed")]  # the lost check is reported once, with its re-run


def test_a_task_whose_test_gives_no_verdict_is_not_rerun_nor_blamed_on_the_program() -> None:
    """`task_error` checks stay environment errors (no runtime error, no pass) and do not
    stop `check_answers`: the task is at fault, not the program nor the machine."""
    from codeloop.evaluate.scoring import check_answers
    from codeloop.tasks.schema import FunctionSpec, Provenance, make_task

    task = make_task(
        family="own/vacuous",
        language="python",
        kind="function",
        statement='def add(a, b):\n    """Return a + b."""\n',
        function=FunctionSpec(
            entry_point="add", tests="def check(candidate):\n    pass\n\ncheck(add)\n"
        ),
        provenance=Provenance(
            dataset="own", revision="1", source_row_sha256="a" * 64, license="Apache-2.0"
        ),
        split="test",
    )
    answer = fence("python", "def add(a, b):\n    return a + b")
    [check] = check_answers([(task, answer)], SandboxConfig(workers=1))
    if not check.task_error:
        pytest.skip(f"this sandbox does not flag vacuous tests yet ({check.status})")
    assert check.status == "environment_error" and not check.passed


def codeloop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codeloop", *args],
        capture_output=True,
        text=True,
        timeout=500,
        env={**os.environ, "COLUMNS": "200"},
    )


def problems_file(folder: Path) -> Path:
    path = folder / "problems.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in PROBLEMS))
    return path


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2)
    assert pass_at_k(5, 0, 5) == 0.0
    assert pass_at_k(5, 4, 2) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 3, 1)


def test_a_jsonl_suite_scored_from_a_samples_file_with_pass_at_k(tmp_path: Path) -> None:
    tasks = stdio_problems(problems_file(tmp_path), ["python", "javascript"])
    assert [(t.family, t.language) for t in tasks] == [
        ("jsonl/double", "python"),
        ("jsonl/double", "javascript"),
        ("jsonl/negate", "python"),
        ("jsonl/negate", "javascript"),
    ]
    samples = tmp_path / "samples.jsonl"
    lines = []
    for task in tasks:
        name = task.family.removeprefix("jsonl/")
        right = RIGHT.get((name, task.language), WRONG)
        # two answers per task: a wrong one first, then the right one (or wrong again)
        lines += [{"task_id": task.id, "answer": WRONG}, {"task_id": task.id, "answer": right}]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out"
    result = codeloop(
        "eval",
        "--suite",
        f"jsonl:{tmp_path / 'problems.jsonl'}",
        "--samples",
        str(samples),
        "--languages",
        "python,javascript",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = store.read(out / "summary.json")
    python, javascript = summary["languages"]["python"], summary["languages"]["javascript"]
    # python: both tasks have 1 of 2 right; javascript: double 1 of 2, negate 0 of 2
    assert (python["tasks"], python["answers"], python["passed"]) == (2, 4, 2)
    assert (python["pass@1"], python["pass@2"]) == (0.5, 1.0)
    assert (javascript["passed"], javascript["pass@1"], javascript["pass@2"]) == (1, 0.25, 0.5)
    assert summary["pooled"] == {"pass@1": 0.375, "pass@2": 0.75}
    assert summary["binding"]["answers"]["sha256"] == store.sha256_file(samples)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [row["sample"] for row in rows] == [0, 1] * 4
    assert [row["passed"] for row in rows[:2]] == [False, True]
    assert "pass@2" in result.stdout
    assert summary["weak_tasks"] == [] and summary["task_errors"] == []
    assert "weak tasks (a trivial program passes their tests): 0" in result.stdout


def test_weak_tasks_are_those_a_trivial_program_passes(tmp_path: Path) -> None:
    """A stdio task whose hidden cases an echo passes is weak (no run needed); a function
    task whose test a trivial program passes is weak (checked in the sandbox)."""
    path = tmp_path / "problems.jsonl"
    echo = {
        "problem": "copy",
        "statement": "Print the input.",
        "cases": [{"input": "a b\n", "output": "a b\n"}, {"input": "7\n", "output": "7\n"}],
    }
    path.write_text(json.dumps(PROBLEMS[0]) + "\n" + json.dumps(echo) + "\n")
    stdio = stdio_problems(path, ["python"])
    config = load_preset("cpu-demo")
    config.tasks.languages = ["python", "rust"]
    humaneval_x = [t for t in suite_tasks(config, "humaneval-x") if t.family == "humaneval/4"]
    tasks = [*stdio, *humaneval_x]
    assert [t.language for t in tasks[2:]] == ["python", "rust"]
    found = weak.trivial_passes(tasks, SandboxConfig(workers=2))
    # Rust/4's test passes the empty program; Python/4's does not.
    assert found == [
        None,
        "a program that echoes its input",
        None,
        "the empty program",
    ]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"problem": "x", "statement": "s"}, "missing cases"),
        ({"problem": "x", "statement": "s", "cases": []}, "at least one hidden case"),
        ({"problem": "x", "statement": "s", "cases": [{"input": 1}]}, "cases must be a list"),
        ({"problem": "", "statement": "s", "cases": [{"input": "", "output": ""}]}, "non-empty"),
    ],
)
def test_a_bad_problem_line_is_named(tmp_path: Path, row: dict, message: str) -> None:
    path = tmp_path / "problems.jsonl"
    path.write_text(json.dumps(PROBLEMS[0]) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ConfigError, match=rf"problems.jsonl:2: .*{message}"):
        stdio_problems(path, ["python"])


def test_samples_must_cover_every_task_with_the_same_n(tmp_path: Path) -> None:
    tasks = stdio_problems(problems_file(tmp_path), ["python"])
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps({"task_id": tasks[0].id, "answer": WRONG}) + "\n")
    with pytest.raises(ConfigError, match="no answer for 1 of 2 tasks"):
        read_answers(path, tasks)
    path.write_text(
        "".join(json.dumps({"task_id": t.id, "answer": WRONG}) + "\n" for t in [*tasks, tasks[0]])
    )
    with pytest.raises(ConfigError, match="different numbers of answers"):
        read_answers(path, tasks)


def test_curriculum_test_answered_by_a_model_through_the_recipe(tmp_path: Path) -> None:
    from tests.support.loop_fixtures import tiny_model

    model = tiny_model(tmp_path / "model")
    out = tmp_path / "out"
    result = codeloop(
        "eval",
        "--suite",
        "curriculum-test",
        "--engine",
        "hf",
        "--model",
        str(model),
        "--languages",
        "python,c",
        "--limit",
        "2",
        "--n",
        "2",
        "--temperature",
        "0.8",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = store.read(out / "summary.json")
    expected = suite_tasks(load_preset("cpu-demo"), "curriculum-test")
    firsts = [t.id for t in expected if t.language == "python"][:2]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [row["task_id"] for row in rows if row["language"] == "python"] == [
        tid for tid in firsts for _ in range(2)
    ]
    assert (summary["tasks"], summary["total"]) == (4, 8)
    answers = summary["binding"]["answers"]
    assert (answers["n"], answers["temperature"], answers["adapter_sha256"]) == (2, 0.8, None)
    assert all(row["answer"] for row in rows)  # the model wrote something for each
    assert set(summary["languages"]) == {"python", "c"}


def test_an_engine_suite_needs_answers_from_exactly_one_place(tmp_path: Path) -> None:
    result = codeloop("eval", "--suite", "curriculum-test", "--out", str(tmp_path))
    assert result.returncode == 1
    assert "exactly one of --samples FILE or --engine KIND" in result.stderr
    result = codeloop("eval", "--suite", "validation", "--samples", "x", "--out", str(tmp_path))
    assert result.returncode == 1 and "--session" in result.stderr
