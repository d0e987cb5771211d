"""`codeloop eval --suite clean`: the clean held-out problems (`codeloop.tasks.clean`) as a
suite anyone can score a model or a samples file on, and its non-kin part.

Programs run in the real sandbox; the answers are hand-written reference programs (and
a wrong one), so the suite is shown to pass what is right and fail what is not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop import store
from codeloop.config import load_preset
from codeloop.evaluate.suites import suite_tasks
from codeloop.tasks import clean
from tests.support.loop_fixtures import fence

pytestmark = pytest.mark.timeout(600)

REFERENCES = {
    "next-even": "n = int(input())\nprint(n + 2 - n % 2)",
    "round-down-ten": "n = int(input())\nprint(n - n % 10)",
    "count-digits": "print(len(input().strip()))",
}
"""Python programs for the set's first three problems, written from their statements."""
WRONG = fence("python", "print(0)")


def test_the_suites_are_the_frozen_set_and_its_non_kin_part() -> None:
    config = load_preset("cpu-demo")
    config.tasks.languages = ["python", "c"]
    whole = suite_tasks(config, "clean")
    assert [task.id for task in whole] == [task.id for task in clean.tasks(["python", "c"])]
    assert len(whole) == 2 * len(clean.PROBLEMS)
    assert all(task.split == "test" and task.kind == "stdio" for task in whole)
    unlike = suite_tasks(config, "clean-non-kin")
    assert len(unlike) == 2 * (len(clean.PROBLEMS) - len(clean.KIN))
    kin = {clean.FAMILY_PREFIX + name for name in clean.KIN}
    assert not kin & {task.family for task in unlike}


def test_eval_scores_a_samples_file_on_the_clean_suite(tmp_path: Path) -> None:
    config = load_preset("cpu-demo")
    config.tasks.languages = ["python"]
    tasks = suite_tasks(config, "clean")[: len(REFERENCES)]
    samples = tmp_path / "samples.jsonl"
    lines = []
    for task in tasks:
        right = fence("python", REFERENCES[task.family.removeprefix(clean.FAMILY_PREFIX)])
        lines += [{"task_id": task.id, "answer": right}, {"task_id": task.id, "answer": WRONG}]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out"
    command = ["eval", "--suite", "clean", "--samples", str(samples), "--languages", "python"]
    command += ["--limit", str(len(REFERENCES)), "--out", str(out)]
    result = subprocess.run(
        [sys.executable, "-m", "codeloop", *command],
        capture_output=True,
        text=True,
        timeout=500,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = store.read(out / "summary.json")
    python = summary["languages"]["python"]
    # every reference passes; print(0) fails each of these problems
    assert (python["tasks"], python["answers"], python["passed"]) == (3, 6, 3)
    assert (python["pass@1"], python["pass@2"]) == (0.5, 1.0)
    assert summary["suite"] == "clean"
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [row["passed"] for row in rows] == [True, False] * 3
    assert summary["weak_tasks"] == []
