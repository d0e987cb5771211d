"""`codeloop data ...` as a real subprocess, including the curriculum acceptance build."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.config import LANGUAGES
from codeloop.tasks.pool import load_pool


def codeloop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codeloop", "data", *args],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The acceptance build: every family of every tier once, in 8 languages (~96 checks)."""
    session = tmp_path_factory.mktemp("cli") / "session"
    result = codeloop(
        "build", "--source", "curriculum", "--variants", "1", "--n", "2000", "--out", str(session)
    )
    assert result.returncode == 0, result.stderr
    return session


def test_curriculum_build_covers_80_families_8_languages_all_validated(built: Path) -> None:
    (batch,) = load_pool(built)
    families = {task.family for task in batch.tasks}
    languages = {task.language for task in batch.tasks}
    problems = batch.manifest["problems"]
    validation = batch.manifest["validation"]
    print(
        f"\ncurriculum build: {len(families)} families, {len(languages)} languages, "
        f"{len(batch.tasks)} tasks, {validation['sandbox_checks']} sandbox checks, "
        f"{validation['verified_problems']} references passed "
        f"in the sandbox ({validation['sandbox_backend']}, {validation['seconds']} s), "
        f"{problems['dropped']} dropped"
    )
    assert len(families) >= 80
    assert languages == set(LANGUAGES)
    assert len(batch.tasks) == len(families) * len(LANGUAGES)
    # every family's reference passed all its cases in the sandbox; none dropped or unproven
    assert problems["dropped"] == 0 and problems["unverified"] == 0
    assert validation["verified_problems"] == problems["accepted"] == len(families)
    assert validation["sandbox_checks"] == len(families)  # one check per (family, variant)
    assert {task.tier for task in batch.tasks} == {1, 2, 3, 4}


def test_stats_counts_languages_splits_tiers_families(built: Path) -> None:
    result = codeloop("stats", str(built))
    assert result.returncode == 0, result.stderr
    for title in ("tasks per language", "tasks per split", "tasks per tier", "tasks per family"):
        assert title in result.stdout
    assert "curriculum/sum-two" in result.stdout
    assert "│ rust " in result.stdout


def test_show_by_prefix_and_as_json(built: Path) -> None:
    (batch,) = load_pool(built)
    task = next(t for t in batch.tasks if t.family == "curriculum/sum-two" and t.language == "go")
    shown = codeloop("show", task.id[:10], "--pool", str(built))
    assert shown.returncode == 0, shown.stderr
    assert "sum" in shown.stdout and "public example 1" in shown.stdout
    assert "You write complete Go programs" in shown.stdout  # the recipe's system turn
    as_json = codeloop("show", task.id, "--pool", str(built), "--json")
    assert json.loads(as_json.stdout)["id"] == task.id
    missing = codeloop("show", "ffffffffffff", "--pool", str(built))
    assert missing.returncode == 1
    assert "task 'ffffffffffff': not in the pool" in missing.stderr


def test_build_again_reports_exhausted_sources(built: Path) -> None:
    result = codeloop("build", "--source", "curriculum", "--variants", "1", "--out", str(built))
    assert result.returncode == 1
    assert "no fresh task left" in result.stderr


def test_sources_lists_every_kind() -> None:
    result = codeloop("sources")
    assert result.returncode == 0
    for kind in ("curriculum", "humaneval", "humaneval-x", "hf", "jsonl"):
        assert f"│ {kind} " in result.stdout


def test_bad_options_are_plain_errors(tmp_path: Path) -> None:
    wrong = codeloop("build", "--source", "curriculum", "--schema", "taco", "--out", str(tmp_path))
    assert wrong.returncode == 1 and "does not take --schema" in wrong.stderr
    unknown = codeloop("build", "--source", "kaggle", "--out", str(tmp_path))
    assert unknown.returncode == 1 and "unknown kind 'kaggle'" in unknown.stderr
    tiers = codeloop("build", "--source", "curriculum", "--tiers", "7", "--out", str(tmp_path))
    assert tiers.returncode == 1 and "tasks.sources.0.tiers.0" in tiers.stderr
    empty = codeloop("stats", str(tmp_path))
    assert empty.returncode == 1 and "no finished pool batch" in empty.stderr
