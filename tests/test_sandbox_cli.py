"""`codeloop check` (single and batch) and `codeloop doctor`, run as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def codeloop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codeloop", *args], capture_output=True, text=True, timeout=300
    )


def test_check_one_program(tmp_path: Path) -> None:
    program = tmp_path / "add.py"
    program.write_text("a, b = map(int, input().split())\nprint(a + b)\n")
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([{"input": "2 3\n", "output": "5\n"}]))
    result = codeloop(
        "check", "--language", "python", "--program", str(program), "--cases", str(cases)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("passed")
    cases.write_text(json.dumps([{"input": "2 3\n", "output": "6\n"}]))
    failed = codeloop(
        "check", "--language", "python", "--program", str(program), "--cases", str(cases)
    )
    assert failed.returncode == 1
    assert "wrong_answer" in failed.stdout and "Expected output:" in failed.stdout


def test_check_batch_contract(tmp_path: Path) -> None:
    rows = [
        {
            "id": "ok",
            "language": "python",
            "program": "print(int(input()) * 2)",
            "cases": [{"input": "4", "output": "8"}],
        },
        {
            "id": "wrong",
            "language": "c",
            "program": "int main(){return 0;}",
            "cases": [{"input": "", "output": "1"}],
        },
        {
            "id": "broken",
            "language": "go",
            "program": "package main\nfunc main() {",
            "cases": [{"input": "", "output": ""}],
        },
    ]
    batch = tmp_path / "in.jsonl"
    batch.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "out.jsonl"
    result = codeloop("check", "--batch", str(batch), "--out", str(out), "--workers", "2")
    assert result.returncode == 0, result.stderr
    results = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert set(results) == {"ok", "wrong", "broken"}
    for row in results.values():
        assert set(row) == {"id", "status", "passed", "feedback", "compile_ms", "run_ms"}
    assert results["ok"]["passed"] is True and results["ok"]["status"] == "passed"
    assert results["wrong"]["status"] == "wrong_answer"
    assert results["broken"]["status"] == "compile_error"


def test_check_batch_names_bad_lines(tmp_path: Path) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text('{"id": "a", "language": "python"}\nnot json\n{"language": "c"}\n')
    result = codeloop("check", "--batch", str(batch), "--out", str(tmp_path / "o.jsonl"))
    assert result.returncode == 1
    assert "line 1" in result.stderr and "line 2" in result.stderr and "line 3" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_needs_cases_or_test(tmp_path: Path) -> None:
    program = tmp_path / "p.py"
    program.write_text("print(1)\n")
    result = codeloop("check", "--language", "python", "--program", str(program))
    assert result.returncode == 1 and "--cases or --test" in result.stderr


def test_doctor_reports_every_language() -> None:
    result = codeloop("doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "bubblewrap" in result.stdout
    for language in ("python", "javascript", "typescript", "c", "cpp", "java", "rust", "go"):
        assert language in result.stdout
    assert result.stdout.count("works") == 8


TOY_HOME = """\"\"\"A toy 9th language for a test: a second Python flavour.\"\"\"

from dataclasses import replace

from codeloop.sandbox.languages.python import HOME as PYTHON

HOME = replace(
    PYTHON,
    language=replace(PYTHON.language, name="pyflavour", aliases=()),
    humaneval_x=None,
    hello="print(input().strip())\\n",
)
"""


def test_a_ninth_language_is_one_folder_and_one_registry_line(tmp_path: Path) -> None:
    """A copy of the package with one more folder (a second Python flavour) and one more
    line in `registry.txt`, nothing else edited: `codeloop doctor` runs its hello
    program, a session config accepts its name, and `codeloop check` passes right
    answers and fails wrong ones in it, stdio and function test alike. Real
    subprocesses on the copy, real sandbox."""
    import shutil

    import codeloop as package

    copy = tmp_path / "codeloop"
    shutil.copytree(
        Path(package.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__")
    )
    homes = copy / "sandbox" / "languages"
    (homes / "pyflavour").mkdir()
    (homes / "pyflavour" / "__init__.py").write_text(TOY_HOME)
    with (homes / "registry.txt").open("a") as registry:
        registry.write("pyflavour\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def on_copy(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, timeout=300, env=env,
            cwd=tmp_path,
        )  # fmt: skip

    where = on_copy("-c", "import codeloop; print(codeloop.__file__)")
    assert where.stdout.strip() == str(copy / "__init__.py"), where.stderr
    doctor = on_copy("-m", "codeloop", "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "pyflavour" in doctor.stdout and doctor.stdout.count("works") == 9, doctor.stdout
    configured = on_copy(
        "-c",
        "from codeloop.config import TasksConfig\n"
        "print(TasksConfig(languages=['pyflavour', 'go']).languages)",
    )
    assert configured.stdout.strip() == "['pyflavour', 'go']", configured.stderr
    test = "def check(f):\n    assert f(2) == 4\n\ncheck(double)\n"
    cases = [{"input": "4\n", "output": "8\n"}]
    rows = [
        {"id": "stdio-right", "program": "print(int(input()) * 2)", "cases": cases},
        {"id": "stdio-wrong", "program": "print(int(input()) + 2)", "cases": [
            {"input": "3\n", "output": "6\n"}]},
        {"id": "test-right", "program": "def double(x):\n    return 2 * x\n", "test": test},
        {"id": "test-wrong", "program": "def double(x):\n    return x\n", "test": test},
    ]  # fmt: skip
    batch = tmp_path / "in.jsonl"
    batch.write_text("".join(json.dumps({**row, "language": "pyflavour"}) + "\n" for row in rows))
    out = tmp_path / "out.jsonl"
    checked = on_copy("-m", "codeloop", "check", "--batch", str(batch), "--out", str(out))
    assert checked.returncode == 0, checked.stderr
    statuses = {row["id"]: row["status"] for row in map(json.loads, out.read_text().splitlines())}
    assert statuses == {
        "stdio-right": "passed",
        "stdio-wrong": "wrong_answer",
        "test-right": "passed",
        "test-wrong": "wrong_answer",
    }


def test_a_check_with_nothing_to_run_is_refused_never_passed(tmp_path: Path) -> None:
    """Zero cases (or an empty test program) would pass any program: a vacuous verdict."""
    rows = [
        {"id": "empty", "language": "python", "program": "print(1)", "cases": []},
        {"id": "absent", "language": "python", "program": "print(1)"},
        {"id": "blank-test", "language": "python", "program": "x = 1", "test": "  \n"},
    ]
    batch = tmp_path / "in.jsonl"
    batch.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "out.jsonl"
    result = codeloop("check", "--batch", str(batch), "--out", str(out))
    assert result.returncode == 1, result.stdout
    for number in (1, 2):
        assert f"line {number}: " in result.stderr
    assert "at least one test case" in result.stderr
    assert "line 3: " in result.stderr and "test program is empty" in result.stderr
    assert not out.exists() or "passed" not in out.read_text()
    cases = tmp_path / "cases.json"
    cases.write_text("[]")
    program = tmp_path / "p.py"
    program.write_text("print(1)\n")
    single = codeloop(
        "check", "--language", "python", "--program", str(program), "--cases", str(cases)
    )
    assert single.returncode == 1 and "at least one test case" in single.stderr
