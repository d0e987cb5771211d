"""`verify --recheck` re-runs the answers a round's decision rests on.

Every sha256 of a session can be rewritten by whoever edits it: a forger who flips a
recorded verdict and then re-hashes the whole chain (the phase's result, finish.json's
inputs, the recomputed decision, even the deleted weights and status.json of a now
rejected candidate) passes every hash-only check. Only running the recorded answer
again shows that the verdict is not the answer's. One real round (tiny model, replay
answers) is run once; each test copies the session and forges it the way a forger who
knows the code would.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")

from codeloop import store
from codeloop.evaluate import scoring
from codeloop.loop import gate
from codeloop.loop.finish import decide
from codeloop.loop.phases import open_round
from codeloop.loop.verify import Finding, verify_session
from codeloop.sandbox import Check
from tests.support.loop_fixtures import finished_round

pytestmark = pytest.mark.timeout(900)

ROUND = "round-000001"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_round(tmp_path_factory.mktemp("evidence"))


@pytest.fixture
def session(finished: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "session"
    shutil.copytree(finished, copy)
    return copy


def violations(findings: list[Finding]) -> list[Finding]:
    return [finding for finding in findings if not finding.ok]


def evidence_files(folder: Path) -> list[str]:
    """The files of recorded verdicts the fixture round holds (what the recheck covers)."""
    names = ["baseline-rows.json", "candidate-rows.json"]
    names += [f"{p}/rows.json" for p in ("audit-parent", "audit-candidate")]
    names += [
        f"{c}/{s}.json" for c in ("gate-confirm", "audit-confirm") for s in ("parent", "candidate")
    ]
    return [name for name in names if (folder / name).exists()]


def flip(rows_file: Path, prefer: bool) -> dict[str, Any]:
    """Flip one row's recorded verdict (a row recorded `prefer` if any): the forgery."""
    saved = store.read(rows_file)
    row = next((r for r in saved["rows"] if r["passed"] is prefer), saved["rows"][0])
    row["passed"] = not row["passed"]
    row["greedy_passed"] = row["passed"]
    row["status"] = "passed" if row["passed"] else "wrong_answer"
    store.write_json(rows_file, saved)
    return row


def rehash_summary(summary: dict[str, Any], rows_file: Path, binding: dict[str, Any]) -> None:
    """A phase's counts and rows_sha256 recomputed from its (forged) rows."""
    counts = scoring.summary(store.read(rows_file)["rows"], binding)
    summary.update({k: v for k, v in counts.items() if k != "binding"})
    summary["rows_sha256"] = store.sha256_file(rows_file)


def forge_chain(session: Path) -> None:
    """Everything after the rows, rewritten as the phases would have written it: the
    gate's comparison, the decision, the weights and status of a rejected candidate,
    and finish.json's digests of every input."""
    folder = session / ROUND
    if not store.read(folder / "gate.json").get("skipped"):
        store.write_json(folder / "gate.json", gate.run(open_round(session, 1), False))
    verdict = decide(open_round(session, 1))
    finish = store.read(folder / "finish.json")
    retained = f"{ROUND}/adapter" if verdict["accepted"] else open_round(session, 1).parent
    if not verdict["accepted"]:
        (folder / "adapter" / "adapter_model.safetensors").unlink(missing_ok=True)
    status = store.read(session / "status.json")
    status["retained_adapter"] = retained
    for entry in status["history"]:
        if entry["round"] == 1:
            entry.update(accepted=verdict["accepted"], decision=verdict["decision"])
            entry["retained_adapter"] = retained
    store.write_json(session / "status.json", status)
    finish.update(verdict, retained_adapter=retained)
    finish["inputs"] = {name: store.sha256_file(session / name) for name in finish["inputs"]}
    store.write_json(folder / "finish.json", finish)


def caught(findings: list[Finding], file: str, task_id: str) -> list[Finding]:
    return [
        f
        for f in violations(findings)
        if f.check == "recheck evidence" and file in f.detail and task_id in f.detail
    ]


def test_a_finished_sessions_evidence_is_run_again_and_holds(session: Path) -> None:
    findings = verify_session(session, recheck=True)
    assert not violations(findings), violations(findings)
    evidence = [f for f in findings if f.check == "recheck evidence"]
    assert len(evidence) == len(evidence_files(session / ROUND)) >= 2, evidence


def test_a_flipped_validation_verdict_with_a_rewritten_chain_is_caught(session: Path) -> None:
    folder = session / ROUND
    before = store.read(folder / "gate.json")
    rows_file = folder / "candidate-rows.json"
    row = flip(rows_file, prefer=True)
    candidate = store.read(folder / "candidate.json")
    rehash_summary(candidate, rows_file, store.read(rows_file)["binding"])
    store.write_json(folder / "candidate.json", candidate)
    forge_chain(session)
    after = store.read(folder / "gate.json")
    assert (after["gained"], after["lost"]) != (before["gained"], before["lost"])  # it counts
    assert not violations(verify_session(session)), "the forgery is not coordinated"
    found = caught(verify_session(session, recheck=True), "candidate-rows.json", row["id"])
    assert len(found) == 1, found
    recorded, rerun = ("passed", "failed") if row["passed"] else ("failed", "passed")
    assert f"recorded {recorded}, re-run {rerun}" in found[0].detail
    assert found[0].round == 1


def test_a_flipped_audit_verdict_with_a_rewritten_chain_is_caught(session: Path) -> None:
    folder = session / ROUND
    audit = store.read(folder / "audit-candidate.json")
    if audit.get("skipped"):
        pytest.skip("the fixture round ran no audit")
    rows_file = folder / "audit-candidate" / "rows.json"
    # A gain (failed -> passed) where there is one: a greedy audit loss would ask for
    # confirmation samples the forger would have to invent as well.
    row = flip(rows_file, prefer=False)
    summary_file = folder / "audit-candidate" / "summary.json"
    summary = store.read(summary_file)
    rehash_summary(summary, rows_file, summary["binding"]["rows"])
    store.write_json(summary_file, summary)
    audit["summary_sha256"] = store.sha256_file(summary_file)
    store.write_json(folder / "audit-candidate.json", audit)
    forge_chain(session)
    assert not violations(verify_session(session)), "the forgery is not coordinated"
    found = caught(verify_session(session, recheck=True), "audit-candidate/rows.json", row["id"])
    assert len(found) == 1, found


def test_confirmation_samples_are_run_again_from_their_saved_answers(session: Path) -> None:
    """Samples planted beside a round (the decision reads none of them here) are each
    re-run from the attempt file: the honest side holds, the forged sample fails."""
    folder = session / ROUND
    rows = store.read(folder / "baseline-rows.json")["rows"]
    good = next((r for r in rows if r["passed"]), None)
    bad = next((r for r in rows if not r["passed"]), None)
    if good is None or bad is None:
        pytest.skip("the fixture's baseline has no passing or no failing answer to sample")
    (folder / "gate-confirm").mkdir()
    answers = {"confirm-0": good["answer"], "confirm-1": bad["answer"]}
    for side, passes in (("parent", [True, False]), ("candidate", [True, True])):
        store.write_json(
            folder / "gate-confirm" / f"gate-confirm-{side}-attempt.json",
            {"attempts": {good["id"]: answers}},
        )
        store.write_json(
            folder / "gate-confirm" / f"{side}.json",
            {"rows": [{"id": good["id"], "passed": True, "passes": passes}]},
        )
    findings = verify_session(session, recheck=True)
    assert not caught(findings, "gate-confirm/parent.json", good["id"])
    found = caught(findings, "gate-confirm/candidate.json", f"{good['id']} sample 1")
    assert len(found) == 1 and "recorded passed, re-run failed" in found[0].detail, found
    assert len(violations(findings)) == 1, violations(findings)


def test_a_recheck_the_machine_cannot_give_is_no_verdict(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An environment error on re-run fails as "could not run", never as a forgery
    found and never as ok."""

    def broken(requests: list[Any], sandbox: Any, **_kwargs: Any) -> list[Check]:
        return [Check(status="environment_error", feedback="bwrap: no") for _ in requests]

    monkeypatch.setattr(scoring, "check_requests", broken)
    findings = [f for f in verify_session(session, recheck=True) if f.check == "recheck evidence"]
    assert findings and not any(f.ok for f in findings), findings
    for finding in findings:
        assert "could not run" in finding.detail and "re-run" not in finding.detail, finding
