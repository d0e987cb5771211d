"""The sequential gate and the likelihood audit inside a real round (issue 65).

One real round (tiny model, replay answers) is run once; each test copies it, changes
the guard's rule in its config, and runs the phases that decide. The replay file holds
no confirmation answers, so a gate that asked for a look it did not need would fail
with the engine's "no saved answer" error: a look that stops the gate is proven to be
the last one asked.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")

from codeloop import store
from codeloop.config import dumps, load
from codeloop.errors import EngineError, IntegrityError
from codeloop.evaluate import likelihood
from codeloop.loop import confirm
from codeloop.loop.audit import LIKELIHOOD, likelihood_tasks
from codeloop.loop.finish import decide
from codeloop.loop.phases import open_round, run_phase
from tests.support.loop_fixtures import finished_round

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_round(tmp_path_factory.mktemp("looks"))


@pytest.fixture
def session(finished: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "session"
    shutil.copytree(finished, copy)
    return copy


def _configure(session: Path, section: str, **fields: Any) -> None:
    config = load(session / "config.toml")
    updated = getattr(config, section).model_copy(update=fields)
    store.write_text(session / "config.toml", dumps(config.model_copy(update={section: updated})))


def _look(session: Path, k: int, parent: list[bool], candidate: list[bool]) -> None:
    """Write one look's samples for every validation task, bound as the sampler binds."""
    folder = session / "round-000001"
    r = open_round(session, 1)
    ids = [t["id"] for t in store.read(folder / "tasks.json")["validation"]]
    name = confirm.look_name(k)
    (folder / name).mkdir(exist_ok=True)
    for side, passes in (("parent", parent), ("candidate", candidate)):
        rows = [
            {"id": i, "language": "python", "passed": any(passes), "passes": passes} for i in ids
        ]
        binding = confirm.expected_binding(r, side, ids)
        store.write_json(folder / name / f"{side}.json", {"binding": binding, "rows": rows})


def _forget(session: Path, *phases: str) -> Path:
    folder = session / "round-000001"
    for phase in phases:
        (folder / f"{phase}.json").unlink()
    return folder


SEQUENTIAL = {"rule": "paired", "confirm_samples": 4, "looks": [2, 4], "efficacy_z": 1.8}


def test_a_clear_gain_stops_at_the_first_look(session: Path) -> None:
    folder = _forget(session, "gate", "audit-parent", "audit-candidate", "finish")
    _configure(session, "gate", futility_z=0.0, **SEQUENTIAL)
    # Some tasks gain one pass in two, the rest are unchanged: z well above 1.8.
    _look(session, 2, [True, False], [True, True])
    run_phase(session, 1, "gate")  # look 4 would ask the replay engine, which has none
    gate = store.read(folder / "gate.json")
    evidence = gate["confirmation"]
    assert gate["promising"] is True, gate["reasons"]
    assert evidence["samples"] == 2 and [look["stop"] for look in evidence["looks"]] == [
        "promising"
    ]
    assert not (folder / confirm.look_name(4)).exists()


def test_a_clear_loss_stops_for_futility(session: Path) -> None:
    folder = _forget(session, "gate", "audit-parent", "audit-candidate", "finish")
    _configure(session, "gate", futility_z=0.0, **SEQUENTIAL)
    _look(session, 2, [True, True], [False, True])
    run_phase(session, 1, "gate")
    gate = store.read(folder / "gate.json")
    assert gate["promising"] is False
    assert gate["confirmation"]["looks"][-1]["stop"] == "futile"
    assert "futility" in gate["reasons"][0]


def test_an_unsettled_look_asks_for_the_next(session: Path) -> None:
    """No change at look 2 (z = 0, not below a futility bound of -1): the gate must ask
    for look 4, which the replay engine cannot answer; with look 4 saved it decides."""
    folder = _forget(session, "gate", "audit-parent", "audit-candidate", "finish")
    _configure(session, "gate", futility_z=-1.0, **SEQUENTIAL)
    _look(session, 2, [True, False], [True, False])
    with pytest.raises(EngineError, match="confirm-2"):
        run_phase(session, 1, "gate")
    _look(session, 4, [False, False], [True, True])
    run_phase(session, 1, "gate")
    gate = store.read(folder / "gate.json")
    assert [look["samples"] for look in gate["confirmation"]["looks"]] == [2, 4]
    assert gate["promising"] is True
    # finish recomputes the same sequential verdict from the saved looks
    assert (
        decide(open_round(session, 1))["comparisons"]["validation"]["confirmation"]
        == (gate["confirmation"])
    )


def _likelihood_audit(session: Path, margin: float) -> Path:
    folder = _forget(session, "audit-parent", "audit-candidate", "finish")
    _configure(session, "audit", rule="likelihood", margin=margin)
    run_phase(session, 1, "audit-parent")
    run_phase(session, 1, "audit-candidate")
    return folder


def test_the_likelihood_audit_scores_every_reference_on_both_sides(session: Path) -> None:
    folder = _likelihood_audit(session, 0.5)
    r = open_round(session, 1)
    tasks = likelihood_tasks(r)
    assert tasks and all(likelihood.reference_program(t) for t in tasks)
    for phase in ("audit-parent", "audit-candidate"):
        scores = store.read(folder / phase / LIKELIHOOD)["scores"]
        assert [row["id"] for row in scores] == [t.id for t in tasks]
        assert all(row["mean_logprob"] < 0 for row in scores)
    verdict = decide(r)
    evidence = verdict["comparisons"]["audit"]["confirmation"]
    assert evidence["rule"] == "likelihood" and evidence["tasks"] == len(tasks)
    # the tiny adapter moved the references' likelihood by far less than 0.5 nats/token
    assert abs(evidence["change"]) < 0.5 and not evidence["worse"]


def test_the_likelihood_audit_rejects_a_collapse(session: Path) -> None:
    """The same round with the candidate's scores of every reference 2 nats per token
    lower (a collapse) is rejected, and the decision says by how much."""
    folder = _likelihood_audit(session, 0.05)
    path = folder / "audit-candidate" / LIKELIHOOD
    saved = store.read(path)
    for row in saved["scores"]:
        row["mean_logprob"] -= 2.0
    store.write_json(path, saved)
    verdict = decide(open_round(session, 1))
    assert verdict["accepted"] is False
    assert "nats per token" in verdict["decision"]


def test_scores_of_other_weights_never_decide(session: Path) -> None:
    folder = _likelihood_audit(session, 0.5)
    path = folder / "audit-candidate" / LIKELIHOOD
    saved = store.read(path)
    saved["binding"]["adapter_sha256"] = "0" * 64
    store.write_json(path, saved)
    with pytest.raises(IntegrityError, match="other weights"):
        decide(open_round(session, 1))


def test_scores_of_the_same_weights_are_reused_not_computed_again(session: Path) -> None:
    """A kept candidate is the next round's parent: its scores, bound to the same weights,
    tasks, model and prompt, are taken from the round that computed them."""
    folder = _likelihood_audit(session, 0.5)
    earlier = session / "round-000000" / "audit-candidate"
    earlier.mkdir(parents=True)
    saved = store.read(folder / "audit-parent" / LIKELIHOOD)
    for row in saved["scores"]:
        row["mean_logprob"] = -7.25  # a value no scoring gives: proves it was reused
    store.write_json(earlier / LIKELIHOOD, saved)
    (folder / "audit-parent" / LIKELIHOOD).unlink()
    (folder / "audit-parent.json").unlink()
    run_phase(session, 1, "audit-parent")
    again = store.read(folder / "audit-parent" / LIKELIHOOD)
    assert {row["mean_logprob"] for row in again["scores"]} == {-7.25}


def test_verify_rechecks_every_look_of_a_sequential_gate(session: Path) -> None:
    """`verify --recheck` re-runs each look's samples from its saved answers: a look whose
    verdicts have no answer behind them (written by hand here, as a forger would) fails
    by name, with the sample index the look continues from."""
    from codeloop.loop.verify import verify_session

    _forget(session, "gate", "audit-parent", "audit-candidate", "finish")
    _configure(session, "gate", futility_z=-1.0, **SEQUENTIAL)
    _look(session, 2, [True, False], [True, False])
    _look(session, 4, [False, False], [True, True])
    run_phase(session, 1, "gate")
    failed = [f.detail for f in verify_session(session, recheck=True) if not f.ok]
    assert any("gate-confirm-look-4" in d and "sample 3" in d for d in failed), failed
    assert any("gate-confirm-look-2" in d and "sample 1" in d for d in failed), failed


def test_a_likelihood_audit_without_suites_asks_no_greedy_answer(session: Path) -> None:
    """`audit.suites = []` (cpu-demo): each side scores the references and answers nothing,
    so no engine starts (the replay file's audit answers are never read), finish decides on
    the likelihoods alone, and verify finds nothing wrong with the audit's files."""
    from codeloop.loop.verify import verify_session

    folder = _forget(session, "audit-parent", "audit-candidate", "finish")
    (folder / "audit-tasks.json").unlink()
    for phase in ("audit-parent", "audit-candidate"):
        shutil.rmtree(folder / phase)
    _configure(
        session,
        "audit",
        rule="likelihood",
        margin=0.5,
        suites=[],
        likelihood_suites=["curriculum-test"],
        likelihood_limit=3,
    )
    for phase in ("audit-parent", "audit-candidate"):
        run_phase(session, 1, phase)
        assert store.read(folder / phase / "rows.json")["rows"] == []
        assert store.read(folder / phase / "summary.json")["total"] == 0
        assert not (folder / phase / f"{phase}-attempt.json").exists()
        assert len(store.read(folder / phase / LIKELIHOOD)["scores"]) == 3
    run_phase(session, 1, "finish")
    audit = store.read(folder / "finish.json")["comparisons"]["audit"]
    assert audit["suites"] == [] and audit["smoke"] is False and audit["total"] == 0
    assert audit["confirmation"]["rule"] == "likelihood" and audit["confirmation"]["tasks"] == 3
    failed = [f for f in verify_session(session) if not f.ok and "audit" in f.detail]
    assert not failed, failed
    from codeloop.loop.display import phase_line, round_lines

    shown = [line for line in round_lines(folder) if line.startswith("audit")]
    assert shown and "likelihood of 3 verified reference programs" in shown[0], shown
    assert "0/0" not in " ".join(shown) and "no greedy answers" in phase_line(folder, phase)


def test_an_audit_without_suites_needs_the_likelihood_rule() -> None:
    from codeloop.config import AuditConfig

    with pytest.raises(ValueError, match=r"audit\.suites may be empty only"):
        AuditConfig(suites=[], rule="paired")
    with pytest.raises(ValueError, match=r"audit\.suites may be empty only"):
        AuditConfig(suites=[], rule="likelihood")  # nothing scored either
    assert AuditConfig(suites=[], rule="likelihood", likelihood_suites=["humaneval-x"]).suites == []
