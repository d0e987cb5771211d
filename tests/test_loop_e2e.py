"""Whole sessions through the real launcher, sandbox and trainer; and the chaos test.

Answers come from the replay engine (saved generations, so the test is
deterministic) or from a tiny random model; training uses a tiny Llama built here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from codeloop import config as session_config
from codeloop import store
from codeloop.loop.collect import CALL_LOG_ENV
from codeloop.loop.common import FAILPOINTS_ENV, PHASES
from tests.support.chaos import Chaos, artifacts, asked_again, phase_process, run, saved_answers
from tests.support.loop_fixtures import make_session, tiny_model

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("tiny") / "model")


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
    # Round 1 already asked those weights about the fixed development set (as its
    # candidate, or as its own parent): round 2's baseline reuses those answers (and
    # those of fresh tasks whose conversation a round-1 task already had).
    reused = store.read(session / "round-000002/baseline-attempt.json")["reused"]
    assert set(first["fixed_ids"]) <= {key.rsplit(":", 1)[0] for key in reused}
    assert len(reused) < len(second["validation"])
    assert store.read(session / "round-000002/baseline.json")["answers_reused"] == len(reused)
    side = "candidate" if status["history"][0]["accepted"] else "baseline"
    earlier = store.read(session / f"round-000001/{side}-attempt.json")["attempts"]
    later = store.read(session / "round-000002/baseline-attempt.json")["attempts"]
    assert all(later[task] == earlier[task] for task in first["fixed_ids"])
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


def chaos_session(root: Path, model: Path) -> Path:
    """The fixture session answering one task per model call, training 4 checkpointed steps,
    so that every phase with work saves progress often enough to be killed between saves."""
    session = make_session(root, model)
    config = session_config.load(session / "config.toml")
    config.engine = config.engine.model_copy(update={"batch_size": 1})
    config.train = config.train.model_copy(update={"steps_per_round": 4, "max_epochs": 8.0})
    store.write_text(session / "config.toml", session_config.dumps(config))
    return session


def test_chaos_kills_during_work_give_the_uninterrupted_result_without_asking_again(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calm = chaos_session(tmp_path / "calm", model)
    monkeypatch.setenv(CALL_LOG_ENV, str(tmp_path / "calm-calls.log"))
    assert run(calm).wait(timeout=900) == 0
    calm_calls = (tmp_path / "calm-calls.log").read_text().splitlines()
    assert len(calm_calls) == len(set(calm_calls))

    log = tmp_path / "chaos-calls.log"
    monkeypatch.setenv(CALL_LOG_ENV, str(log))
    # finish does its work in a blink: it dies (SIGKILL) once after deleting a rejected
    # candidate's weights and once after writing the session status, and the launcher
    # restarts it each time.
    points = tmp_path / "failpoints"
    points.mkdir()
    for name in ("finish-after-weights", "finish-after-status"):
        (points / name).write_text("")
    monkeypatch.setenv(FAILPOINTS_ENV, str(points))
    chaos = Chaos(chaos_session(tmp_path / "chaos", model), log)
    chaos.budget["finish"] = 0  # the failpoints use its restarts
    chaos.run(time.monotonic() + 720)
    assert list(points.iterdir()) == []  # both failpoints fired
    phases = {phase for phase, _whom in chaos.kills}
    assert len(chaos.kills) >= 20, chaos.kills
    assert {"collect", "train", "audit-parent", "audit-candidate"} <= phases, chaos.kills
    assert {whom for _phase, whom in chaos.kills} == {"launcher", "phase"}
    assert asked_again(log.read_text().splitlines(), chaos.positions) == []
    # The artifacts first: a differing one names where a resume went astray (the calls
    # of a later phase differ too once an earlier artifact, e.g. the adapter, differs).
    mine, theirs = artifacts(chaos.session), artifacts(calm)
    differing = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    # A plain string: pytest shortens the repr of a tuple message to a few hundred chars.
    assert differing == [], "differing: " + ", ".join(differing) + f"\nkills: {chaos.kills}"
    assert sorted(set(log.read_text().splitlines())) == sorted(calm_calls)


def test_the_chaos_check_catches_a_resume_that_forgets_saved_answers(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A deliberately broken resume: after a kill in collect, the saved answers are lost
    # (as if resume ignored them), so the next run asks the model again.
    log = tmp_path / "calls.log"
    monkeypatch.setenv(CALL_LOG_ENV, str(log))
    chaos = Chaos(chaos_session(tmp_path / "broken", model), log, per_phase=0)
    chaos.budget["collect"] = 1
    launcher = run(chaos.session)
    deadline = time.monotonic() + 300
    while not chaos.kills:
        assert launcher.poll() is None and time.monotonic() < deadline
        process = phase_process(launcher)
        if process is not None and chaos.due(process) == "collect":
            launcher.kill()
            launcher.wait(timeout=60)
            chaos.kills.append(("collect", "launcher"))
            chaos.positions.append((len(log.read_text().splitlines()), saved_answers(chaos.folder)))
        time.sleep(0.01)
    (chaos.folder / "collect-attempt.json").unlink()
    (chaos.folder / "collect-rows.json").unlink(missing_ok=True)
    (chaos.session / "answers.jsonl").unlink()  # the session's answer cache forgets too
    assert run(chaos.session).wait(timeout=900) == 0
    assert asked_again(log.read_text().splitlines(), chaos.positions)


def test_answers_cached_before_a_kill_stay_the_phase_own(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # collect dies (SIGKILL) just after its first answer reached the session's answer
    # cache and before its attempt file holds it: resumed, it takes that answer back as
    # its own, not as one reused from an earlier phase (the record an uninterrupted
    # collect writes), and does not ask for it again.
    session = chaos_session(tmp_path / "session", model)
    log = tmp_path / "calls.log"
    monkeypatch.setenv(CALL_LOG_ENV, str(log))
    points = tmp_path / "failpoints"
    points.mkdir()
    (points / "answers-cached").write_text("")
    monkeypatch.setenv(FAILPOINTS_ENV, str(points))
    phase = [sys.executable, "-m", "codeloop", "phase", "--session", str(session), "--round", "1"]
    subprocess.run([*phase, "--phase", "prepare"], check=True, timeout=300)
    killed = subprocess.run([*phase, "--phase", "collect"], timeout=300)
    assert killed.returncode == -9 and list(points.iterdir()) == []
    cached = (session / "answers.jsonl").read_text().splitlines()
    assert cached and all(json.loads(line)["by"] == "round-000001/collect" for line in cached)
    subprocess.run([*phase, "--phase", "collect", "--resume"], check=True, timeout=600)
    folder = session / "round-000001"
    assert store.read(folder / "collect-attempt.json")["reused"] == []
    assert store.read(folder / "collect.json")["answers_reused"] == 0
    calls = log.read_text().splitlines()
    assert len(calls) == len(set(calls))  # the answer cached before the kill: asked once


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
