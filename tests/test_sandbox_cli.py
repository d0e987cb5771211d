"""`codeloop check` (single and batch) and `codeloop doctor`, run as real subprocesses."""

from __future__ import annotations

import json
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


def test_doctor_checks_each_home_with_its_own_hello_program(monkeypatch) -> None:
    """doctor's languages and programs are the registry's homes: a 9th home (here a second
    Python flavour) is checked with its own hello program, no table in the CLI to extend
    (a language missing from such a table once made doctor fail with a KeyError)."""
    from dataclasses import replace

    from codeloop.sandbox import cli as sandbox_cli
    from codeloop.sandbox import languages
    from codeloop.sandbox.languages import HOMES, home
    from codeloop.sandbox.request import Check

    python = home("python")
    flavour = replace(python.language, name="python-flavour")
    toy = replace(python, language=flavour, hello="print(input().strip())\n")
    asked: list = []

    def check_many(requests, **_options):
        asked.extend(requests)
        return [Check(status="passed") for _ in requests]

    monkeypatch.setattr(languages, "HOMES", (*HOMES, toy))
    monkeypatch.setattr(sandbox_cli.dispatch, "check_many", check_many)
    monkeypatch.setattr(sandbox_cli.pool, "describe", lambda backend: "stub")
    monkeypatch.setattr(sandbox_cli, "version_of", lambda language: f"{language.name} 1.0")
    sandbox_cli.doctor(config=None)
    assert [(request.language, request.program) for request in asked] == [
        (found.language.name, found.hello) for found in (*HOMES, toy)
    ]


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
