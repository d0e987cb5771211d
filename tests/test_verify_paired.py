"""The `paired` rule's decisions rest on samples of both models: forging them fails verify.

Under `paired` (gate and audit), every validation and audit task is sampled on both
sides with shared seeds, and the decision is the lower bound of the mean pass-rate
change. A forger can flip a sample's verdict, or move a sample from one side to the
other (its answer with its verdict), and rewrite every sha256 after it. A flipped
verdict is not its answer's: `--recheck` re-runs it. A moved sample's verdict is its
answer's, so only asking the recorded weights again (`--regenerate`) shows it is not
the answer that side wrote. One real round (tiny model, replay answers) is run once,
its gate and finish phases run again under `paired`, and each test forges a copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("trl")

from codeloop import store
from codeloop.config import dumps, load
from codeloop.loop import gate
from codeloop.loop.confirm import AUDIT, GATE
from codeloop.loop.finish import decide
from codeloop.loop.phases import open_round, run_phase
from codeloop.loop.verify import Finding, verify_session
from tests.support.loop_fixtures import fence, finished_round

pytestmark = pytest.mark.timeout(900)

ROUND = "round-000001"
SAMPLES = 2
EVERY_ANSWER = 100_000
"""A --regenerate count above the session's answers: every one is asked again."""


def sample_answers(task: dict) -> list[str]:
    """Replay answers of a task's confirmation samples: the reference first (Python),
    then a wrong program, so the two samples of a side differ."""
    wrong = {"python": "print('no idea')", "javascript": "console.log('no idea');"}
    language = task["language"]
    first = task["references"][0]["code"] if language == "python" else wrong[language]
    return [fence(language, first), fence(language, wrong[language])]


@pytest.fixture(scope="module")
def paired(tmp_path_factory) -> Path:
    """The finished round with its gate and finish run again under the `paired` rules."""
    session = finished_round(tmp_path_factory.mktemp("paired"))
    folder = session / ROUND
    config = load(session / "config.toml")
    config = config.model_copy(
        update={
            "gate": config.gate.model_copy(update={"rule": "paired", "confirm_samples": SAMPLES}),
            "audit": config.audit.model_copy(update={"rule": "paired", "confirm_samples": SAMPLES}),
        }
    )
    store.write_text(session / "config.toml", dumps(config))
    tasks = store.read(folder / "tasks.json")["validation"]
    tasks += store.read(folder / "audit-tasks.json")["tasks"]
    with Path(config.engine.replay_path).open("a") as handle:
        for task in tasks:
            for index, answer in enumerate(sample_answers(task)):
                entry = {"task_id": task["id"], "attempt": f"confirm-{index}", "answer": answer}
                handle.write(json.dumps(entry) + "\n")
    for phase in ("gate", "finish"):
        (folder / f"{phase}.json").unlink()
    run_phase(session, 1, "gate")
    run_phase(session, 1, "finish")
    return session


@pytest.fixture
def session(paired: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "session"
    shutil.copytree(paired, copy)
    # The replay path is absolute and shared: the copy answers from the same file.
    return copy


def violations(findings: list[Finding]) -> list[Finding]:
    return [finding for finding in findings if not finding.ok]


def python_task(session: Path, name: str) -> str:
    """A Python task the confirmation sampled (its sample 0 passes, its sample 1 fails)."""
    rows = store.read(session / ROUND / name / "parent.json")["rows"]
    return next(row["id"] for row in rows if row["language"] == "python")


def rewrite_chain(session: Path) -> None:
    """Everything after the samples, as the phases would write it from them: the gate,
    the decision and finish.json's digests of its inputs."""
    folder = session / ROUND
    store.write_json(folder / "gate.json", gate.run(open_round(session, 1), False))
    finish = store.read(folder / "finish.json")
    verdict = decide(open_round(session, 1))
    assert verdict["accepted"] == finish["accepted"], "the forgery must keep the decision"
    finish.update(verdict)
    finish["inputs"] = {name: store.sha256_file(session / name) for name in finish["inputs"]}
    store.write_json(folder / "finish.json", finish)


def test_an_honest_paired_round_holds_under_recheck_and_regenerate(session: Path) -> None:
    folder = session / ROUND
    assert store.read(folder / "gate.json")["rule"]["rule"] == "paired"
    for name in (GATE, AUDIT):
        for side in ("parent", "candidate"):
            rows = store.read(folder / name / f"{side}.json")["rows"]
            assert rows and all(len(row["passes"]) == SAMPLES for row in rows)
    findings = verify_session(session, recheck=True, regenerate=EVERY_ANSWER)
    assert not violations(findings), violations(findings)
    regenerated = [f for f in findings if f.check == "regenerate"]
    assert any(f.ok and not f.trusted for f in regenerated)
    # A rejected candidate's weights are deleted: its answers are named, never "same".
    if not store.read(folder / "finish.json")["accepted"]:
        deleted = [f for f in regenerated if f.trusted and "candidate-attempt" in f.detail]
        assert deleted and all("weights are deleted" in f.detail for f in deleted)


@pytest.mark.parametrize("name", [GATE, AUDIT])
def test_a_flipped_sample_verdict_fails_the_recheck(session: Path, name: str) -> None:
    """The candidate's passing sample recorded as failed (the candidate made to look
    worse, so the decision stands), every sha256 after it rewritten."""
    task = python_task(session, name)
    rows_file = session / ROUND / name / "candidate.json"
    saved = store.read(rows_file)
    for row in saved["rows"]:
        if row["id"] == task:
            assert row["passes"][0] is True
            row["passes"][0] = False
            row["passed"] = any(row["passes"])
    store.write_json(rows_file, saved)
    rewrite_chain(session)
    assert not violations(verify_session(session)), "the forgery is not coordinated"
    found = [
        f
        for f in violations(verify_session(session, recheck=True))
        if f.check == "recheck evidence" and f"{task} sample 0" in f.detail
    ]
    assert len(found) == 1 and "recorded failed, re-run passed" in found[0].detail, found


def test_a_sample_moved_between_sides_fails_regeneration(session: Path) -> None:
    """The candidate's failing sample (its answer with its verdict) put in place of the
    parent's passing one: the parent made to look worse. Every verdict is its answer's,
    so the recheck holds; the parent's weights asked again write another answer."""
    task = python_task(session, GATE)
    folder = session / ROUND / GATE
    parent_answers = store.read(folder / f"{GATE}-parent-attempt.json")
    candidate_answers = store.read(folder / f"{GATE}-candidate-attempt.json")
    moved = candidate_answers["attempts"][task]["confirm-1"]
    assert moved != parent_answers["attempts"][task]["confirm-0"]
    parent_answers["attempts"][task]["confirm-0"] = moved
    store.write_json(folder / f"{GATE}-parent-attempt.json", parent_answers)
    rows = store.read(folder / "parent.json")
    for row in rows["rows"]:
        if row["id"] == task:
            row["passes"][0] = False
            row["passed"] = any(row["passes"])
    store.write_json(folder / "parent.json", rows)
    rewrite_chain(session)
    assert not violations(verify_session(session, recheck=True)), "the recheck cannot see it"
    found = [
        f
        for f in violations(verify_session(session, regenerate=EVERY_ANSWER))
        if f.check == "regenerate"
    ]
    assert len(found) == 1, found
    assert f"{GATE}-parent-attempt.json {task} confirm-0" in found[0].detail, found
