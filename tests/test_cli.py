"""The `codeloop` command, run as a real subprocess through its entry point."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from codeloop import __version__, config

DESIGN_COMMANDS = [
    "run",
    "status",
    "report",
    "verify",
    "check",
    "doctor",
    "eval",
    "data",
    "train",
    "export-dataset",
]


def codeloop(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codeloop", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def test_version() -> None:
    result = codeloop("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"codeloop {__version__}"


def test_help_lists_every_design_command() -> None:
    result = codeloop("--help")
    assert result.returncode == 0
    listed = set(re.findall(r"│ ([a-z-]+) ", result.stdout))
    assert set(DESIGN_COMMANDS) <= listed
    assert "phase" not in listed  # internal: the launcher runs it


def test_the_hidden_phase_command_still_runs() -> None:
    result = codeloop("phase", "--help")
    assert result.returncode == 0, result.stderr
    assert all(flag in result.stdout for flag in ("--session", "--round", "--phase"))


def test_every_session_command_takes_session_as_an_option() -> None:
    for command in ("run", "status", "verify", "export-dataset", "report"):
        result = codeloop(command, "--help")
        assert result.returncode == 0, (command, result.stderr)
        assert "--session" in result.stdout, command
    for command in ("verify", "export-dataset"):  # the positional form is hidden
        assert "SESSION" not in codeloop(command, "--help").stdout.replace("--session", "")


def test_a_positional_session_still_works_but_is_deprecated(tmp_path: Path) -> None:
    """`codeloop verify S` (the older form) runs as `codeloop verify --session S`, and says so."""
    for args in (["verify", str(tmp_path)], ["verify", "--session", str(tmp_path)]):
        result = codeloop(*args)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        assert "not a session folder" in result.stdout + result.stderr, args
        assert ("deprecated" in result.stderr) == ("--session" not in args), args
    out = str(tmp_path / "dataset")
    result = codeloop("export-dataset", str(tmp_path), "--out", out)
    assert result.returncode == 1 and "not a session folder" in result.stderr
    assert "deprecated; use --session" in result.stderr
    both = codeloop("verify", "--session", str(tmp_path / "a"), str(tmp_path / "b"))
    assert both.returncode == 1 and "two sessions" in both.stderr


def test_bad_config_is_one_clear_message_without_traceback(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[engine]\nkind = "gpt"\n[round]\nfresh_tasks = 0\n')
    result = codeloop("config", "check", str(path))
    assert result.returncode == 1
    assert "engine.kind" in result.stderr and "round.fresh_tasks" in result.stderr
    assert "Traceback" not in result.stderr
    debug = codeloop("--debug", "config", "check", str(path))
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_config_show_prints_a_config_that_validates(tmp_path: Path) -> None:
    result = codeloop("config", "show", "--preset", "gpu")
    assert result.returncode == 0
    assert config.parse(result.stdout, "shown") == config.load_preset("gpu")
    path = tmp_path / "mine.toml"
    path.write_text(result.stdout)
    checked = codeloop("config", "check", str(path))
    assert checked.returncode == 0 and "valid" in checked.stdout


def test_config_fields_documents_the_config() -> None:
    result = codeloop("config", "fields")
    assert result.returncode == 0
    assert "sandbox.limits.memory_mib" in result.stdout


def test_a_second_phase_in_one_session_is_refused(tmp_path: Path) -> None:
    """Two `codeloop phase` processes in one session would write the same files at once
    (two prepares built a pool holding a task twice): while one holds the session's
    phase lock, another stops with a clear error before touching anything."""
    import fcntl

    session = tmp_path / "s"
    session.mkdir()
    args = ("phase", "--session", str(session), "--round", "1", "--phase", "prepare")
    with open(session / ".phase.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        busy = codeloop(*args)
    assert busy.returncode != 0
    assert "another codeloop phase is running" in busy.stdout + busy.stderr
    free = codeloop(*args)  # the lock released: it gets past the lock (and then lacks a config)
    assert "another codeloop phase is running" not in free.stdout + free.stderr
    assert free.returncode != 0
