"""The `codeloop` command, run as a real subprocess through its entry point."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from codeloop import __version__, config

DESIGN_COMMANDS = [
    "run",
    "phase",
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
