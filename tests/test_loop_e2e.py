"""Whole sessions through the real launcher, sandbox and trainer; and the chaos test.

Answers come from the replay engine (saved generations, so the test is
deterministic) or from a tiny random model; training uses a tiny Llama built here.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from codeloop import config as session_config
from codeloop import store
from codeloop.loop.common import PHASES
from tests.loop_fixtures import make_session, tiny_model

pytestmark = pytest.mark.timeout(900)
VOLATILE = {"heartbeat_at", "seconds", "wall_seconds", "train_seconds", "tokens_per_s", "dataset"}


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def run(session: Path, rounds: int = 1) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codeloop",
            "run",
            "--session",
            str(session),
            "--rounds",
            str(rounds),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_two_round_session_completes(tmp_path: Path, model: Path) -> None:
    session = make_session(tmp_path / "session", model)
    process = run(session, rounds=2)
    output = process.communicate(timeout=900)[0]
    assert process.returncode == 0, output
    status = store.read(session / "status.json")
    assert [entry["round"] for entry in status["history"]] == [1, 2]
    for number in (1, 2):
        folder = session / f"round-{number:06d}"
        assert all((folder / f"{phase}.json").exists() for phase in PHASES)
        tasks = store.read(folder / "tasks.json")
        train_ids = {task["id"] for task in tasks["train"]}
        rows = [json.loads(line) for line in (folder / "train.jsonl").read_text().splitlines()]
        assert rows, "verified answers were exported"
        assert {row["split"] for row in rows} == {"train"}
        exported = {row["task_id"] for row in rows}
        assert exported <= train_ids | {
            t["id"] for t in store.read(session / "round-000001/tasks.json")["train"]
        }
        assert not exported & {task["id"] for task in tasks["validation"]}
        assert store.read(folder / "train.json")["skipped"] is False
        assert (folder / "adapter" / "training.json").exists()
        finish = store.read(folder / "finish.json")
        assert finish["inputs"] and finish["limitations"]
    # The fixed development set is reused; fresh tasks are never reused.
    first, second = (store.read(session / f"round-{n:06d}/tasks.json") for n in (1, 2))
    assert first["fixed_ids"] == second["fixed_ids"]
    assert not {t["id"] for t in first["train"]} & {t["id"] for t in second["train"]}
    # Round 2 starts from what round 1 retained.
    assert second["parent"] == status["history"][0]["retained_adapter"]
    status_text = subprocess.run(
        [sys.executable, "-m", "codeloop", "status", "--session", str(session)],
        capture_output=True,
        text=True,
    ).stdout
    assert "round 2: 10/10 phases done" in status_text


def test_a_round_with_a_tiny_hf_model(tmp_path: Path, model: Path) -> None:
    session = make_session(tmp_path / "session", model)
    config = session_config.load(session / "config.toml")
    config.engine = config.engine.model_copy(
        update={"kind": "hf", "model": str(model), "replay_path": None}
    )
    store.write_text(session / "config.toml", session_config.dumps(config))
    process = run(session)
    output = process.communicate(timeout=900)[0]
    assert process.returncode == 0, output
    rows = store.read(session / "round-000001/collect-rows.json")["rows"]
    assert len(rows) == config.round.fresh_tasks
    assert all(row["answer"] is not None for row in rows)
    attempts = store.read(session / "round-000001/collect-attempt.json")["attempts"]
    assert all("greedy" in tried for tried in attempts.values())


def _artifacts(root: Path) -> dict[str, object]:
    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if "checkpoint-" in relative or path.name == "progress.json" or not path.is_file():
            continue
        if path.suffix == ".json":
            found[relative] = strip(json.loads(path.read_text()))
        elif path.name in ("train.jsonl", "adapter_model.safetensors"):
            found[relative] = store.sha256_file(path)
    return found


def test_chaos_sigkill_at_random_moments_gives_the_uninterrupted_result(
    tmp_path: Path, model: Path
) -> None:
    calm = make_session(tmp_path / "calm", model)
    assert run(calm).wait(timeout=900) == 0
    chaos = make_session(tmp_path / "chaos", model)
    rng = random.Random(2026)
    targets = [phase for phase in PHASES for _ in range(3)]
    kills: list[str] = []
    deadline = time.monotonic() + 600
    folder = chaos / "round-000001"
    while True:
        assert time.monotonic() < deadline, f"chaos run did not finish; kills: {kills}"
        process = run(chaos)
        while process.poll() is None and targets and len(kills) < 20:
            if (folder / f"{targets[0]}.json").exists():
                targets.pop(0)
                continue
            beat = store.read(folder / "progress.json", None)
            if beat and beat.get("phase") == targets[0]:
                time.sleep(rng.uniform(0.0, 0.3))
                process.kill()
                kills.append(targets.pop(0))
                break
            time.sleep(0.02)
        process.wait(timeout=900)
        if process.returncode == 0:
            break
    assert len(kills) >= 15, kills
    assert len(set(kills)) >= 7, kills  # spread over the phases
    assert _artifacts(chaos) == _artifacts(calm)


def test_pause_file_stops_at_a_safe_point_and_the_next_run_continues(
    tmp_path: Path, model: Path
) -> None:
    session = make_session(tmp_path / "session", model)
    process = run(session)
    folder = session / "round-000001"
    deadline = time.monotonic() + 300
    while not (folder / "prepare.json").exists():
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    (session / "PAUSE").touch()
    output = process.communicate(timeout=300)[0]
    assert process.returncode == 75, output
    assert "paused" in output
    assert not (folder / "finish.json").exists()
    (session / "PAUSE").unlink()
    assert run(session).wait(timeout=900) == 0
    assert (folder / "finish.json").exists()
