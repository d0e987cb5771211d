"""What `codeloop run` and `codeloop status` show, from real round folders.

The rounds are built from real phase outputs: collect/baseline/candidate summaries
come from `collect.summary`, and gate, audit (when not due), baseline/train/candidate
(when skipped) and finish are run by `run_phase` itself, so the shapes read here are
the shapes the phases write. Only what needs a model or the sandbox (answers,
training, an audit that runs) is written by hand, shaped like the phase's output.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from rich.console import Console

from codeloop import store
from codeloop.loop import cli as loop_cli
from codeloop.loop import display
from codeloop.loop.common import PHASES
from codeloop.loop.launcher import Launcher, LiveView
from codeloop.loop.phases import run_phase
from tests.support.display_rounds import (
    answered,
    audited,
    exported,
    make_session,
    prepared,
    trained_round,
    v,
)


@pytest.fixture
def session(tmp_path: Path) -> store.SessionPaths:
    """Round 1 rejected at the gate, round 2 accepted after its audit, round 3 collecting."""
    paths = make_session(
        tmp_path / "session",
        ["python", "javascript"],
        gate="min_net_gain = 3\n",
        round="audit_every = 1000\n",
        audit='suites = ["curriculum-test"]\nlimit = 4\n',
    )
    # Round 1: python gains 2; javascript gains 1 and loses 1. Net +2 < 3: not promising.
    folder = trained_round(
        paths,
        1,
        v(1, "python", 0) | v(1, "javascript", 2),
        v(1, "python", 0, 1, 2) | v(1, "javascript", 0),
    )
    for phase in ("audit-parent", "audit-candidate", "finish"):
        run_phase(paths.root, 1, phase)
    # Round 2: gained 3, lost 0: promising, so the audit is due; it loses nothing.
    folder = trained_round(
        paths, 2, v(2, "javascript", 0), v(2, "python", 0, 1) | v(2, "javascript", 0, 1)
    )
    audited(folder, parent=2, candidate=3)
    run_phase(paths.root, 2, "finish")
    # Round 3: collect is running; its heartbeat has the per-language counts.
    folder = prepared(paths, 3, {"python": 3, "javascript": 3}, {"python": 3, "javascript": 3})
    store.write_progress(
        folder, "collect", 4, 6, round=3, language="javascript",
        seen={"python": 3, "javascript": 1}, passed={"python": 2, "javascript": 0},
    )  # fmt: skip
    return paths


def text(renderable: object, width: int = 120) -> str:
    console = Console(record=True, width=width, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def squeeze(value: str) -> str:
    """Table text with runs of spaces collapsed, so assertions do not depend on padding."""
    return "\n".join(" ".join(line.split()) for line in value.splitlines())


def test_a_round_rejected_at_the_gate_shows_pass_at_1_gate_and_decision(
    session: store.SessionPaths,
) -> None:
    shown = squeeze(text(display.round_view(session.round(1))))
    assert "round 1: validation pass@1" in shown
    assert "│ python │ 0.333 (1/3) │ 1.000 (3/3) │ 2 │ 0 │" in shown
    assert "│ javascript │ 0.333 (1/3) │ 0.333 (1/3) │ 1 │ 1 │" in shown
    assert "│ macro │ 0.333 │ 0.667 │ 3 │ 1 │" in shown
    assert (
        "gate: not promising: gained 3, lost 1 (net +2), McNemar p = 0.625; gained - lost = 2 < 3"
        in shown
    )
    assert "audit: skipped (gate not promising and not due)" in shown
    assert "decision: Candidate rejected at the validation gate; retained model unchanged" in shown
    assert "retained adapter: base model" in shown


def test_an_accepted_round_shows_its_audit_and_new_adapter(session: store.SessionPaths) -> None:
    shown = squeeze(text(display.round_view(session.round(2))))
    assert "│ python │ 0.000 (0/3) │ 0.667 (2/3) │ 2 │ 0 │" in shown
    assert "│ macro │ 0.167 │ 0.667 │ 3 │ 0 │" in shown
    assert "gate: promising: gained 3, lost 0 (net +3), McNemar p = 0.25" in shown
    assert "audit: parent 2/4, candidate 3/4; gained 1, lost 0" in shown
    assert "decision: Candidate accepted after validation and full audit" in shown
    assert "retained adapter: round-000002/adapter" in shown


def test_training_skipped_shows_exported_rows_and_languages_without_any(tmp_path: Path) -> None:
    paths = make_session(
        tmp_path / "s", ["python", "javascript", "go"], export="min_per_language = 2\n"
    )
    folder = prepared(paths, 1, {"python": 4, "javascript": 2, "go": 2}, {"python": 1})
    assigned = store.read(folder / "tasks.json")
    solved = {"r1-train-python-0", "r1-train-python-1", "r1-train-go-0"}
    answered(folder, "collect", assigned["train"], solved)
    exported(
        folder, {"python": 2, "javascript": 0, "go": 0}, False, "too few rows in javascript, go"
    )
    for phase in PHASES[PHASES.index("baseline") :]:
        run_phase(paths.root, 1, phase)
    shown = squeeze(text(display.round_view(folder)))
    assert "round 1: training skipped: export not ready" in shown
    assert "│ python │ 2/4 │ 2 │ 2 │ │" in shown
    assert "│ javascript │ 0/2 │ 0 │ 0 │ no verified row │" in shown
    assert "│ go │ 1/2 │ 1 │ 0 │ too few verified rows to export │" in shown
    assert (
        "training skipped: export not ready: too few rows in javascript, go (2 rows exported)"
        in shown
    )
    assert "no verified row yet: javascript" in shown
    assert "decision: More verified examples needed; continuing collection" in shown
    assert "validation pass@1" not in shown
    assert display.phase_line(folder, "baseline") == (
        "baseline: skipped (too few rows in javascript, go)"
    )


def test_the_heartbeat_of_a_running_answering_phase(session: store.SessionPaths) -> None:
    folder = session.round(3)
    beat = store.read_progress(folder)
    totals = display.phase_totals(folder, "collect")
    assert totals == {"python": 3, "javascript": 3}
    assert display.heartbeat_line(beat, totals) == (
        "collect 4/6; passed python 2/3 (of 3), javascript 0/1 (of 3)"
    )
    shown = squeeze(text(display.heartbeat_table(beat, totals)))
    assert "checked 3/3 1/3" in shown
    assert "passed 2 (67%) 0 (0%)" in shown
    # Heartbeats of other phases carry no per-language counts, and show none.
    assert display.heartbeat_table({"phase": "export", "completed": 0, "total": 3}) is None
    assert display.heartbeat_line(
        {"phase": "prepare", "completed": 1, "total": 6, "task": "validating"}
    ) == ("prepare 1/6 (validating)")


def test_status_shows_every_round_and_the_running_heartbeat(
    session: store.SessionPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    console = Console(record=True, width=120, file=io.StringIO())
    monkeypatch.setattr(loop_cli, "out", console)
    (session.root / "PAUSE").touch()
    loop_cli.show_status(session=session.root)
    shown = squeeze(console.export_text())
    assert "retained adapter: round-000002/adapter" in shown
    assert "round 1: 10/10 phases done" in shown
    assert "round 2: 10/10 phases done" in shown
    assert "round 3: 1/10 phases done (PAUSE file present)" in shown
    assert "│ javascript │ 0.333 (1/3) │ 0.333 (1/3) │ 1 │ 1 │" in shown
    assert "audit: parent 2/4, candidate 3/4; gained 1, lost 0" in shown
    assert "decision: pending (next phase: collect)" in shown
    assert "last heartbeat: collect 4/6; passed python 2/3 (of 3), javascript 0/1 (of 3)," in shown
    assert shown.index("round 1:") < shown.index("round 2:") < shown.index("round 3:")


def test_the_live_view_draws_bar_and_languages_on_a_terminal(session: store.SessionPaths) -> None:
    console = Console(force_terminal=True, width=120, file=io.StringIO())
    view = LiveView(console)
    assert view.live
    folder = session.round(3)
    view.begin(3, "collect", folder)
    view.beat(store.read_progress(folder))
    shown = squeeze(text(view.progress.get_renderable()))
    assert "round 3 collect" in shown and "4/6" in shown and "now javascript" in shown
    assert "passed 2 (67%) 0 (0%)" in shown
    # The final heartbeat of a phase keeps the last counts on screen.
    view.beat({"phase": "collect", "completed": 6, "total": 6})
    assert "passed 2 (67%) 0 (0%)" in squeeze(text(view.progress.get_renderable()))


FAKE_PHASE = """
import sys, time
from codeloop import store
from codeloop.loop.phases import run_phase
session, number, phase = sys.argv[1], int(sys.argv[2]), sys.argv[3]
folder = store.SessionPaths(session).round(number)
if phase != "candidate":
    run_phase(session, number, phase)
    sys.exit(0)
# What the candidate phase writes, without a model: heartbeats with counts, then results.
for done in range(1, 4):
    store.write_progress(folder, "candidate", done, 6, round=number,
                         seen={"python": done}, passed={"python": done - 1})
    time.sleep(0.3)
from tests.support.display_rounds import answered, v
answered(folder, "candidate", store.read(folder / "tasks.json")["validation"],
         v(1, "python", 0, 1, 2) | v(1, "javascript", 0))
"""


class FakeCandidate(Launcher):
    """The real launcher; its phases run in-process-light subprocesses, candidate is faked."""

    def _command(self, number: int, phase: str, resume: bool) -> list[str]:
        return [sys.executable, "-c", FAKE_PHASE, str(self.paths.root), str(number), phase]


def test_the_launcher_without_a_terminal_prints_one_line_per_phase_and_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = make_session(
        tmp_path / "session",
        ["python", "javascript"],
        gate="min_net_gain = 3\n",
        round="audit_every = 1000\n",
    )
    folder = trained_round(paths, 1, v(1, "python", 0) | v(1, "javascript", 2), set())
    for name in ("candidate.json", "candidate-rows.json", "gate.json"):
        (folder / name).unlink()
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parent.parent))
    console = Console(record=True, width=120, file=io.StringIO())
    assert FakeCandidate(paths, console).run(1) == 0
    shown = squeeze(console.export_text())
    assert "round 1 candidate: macro pass@1 0.667 (javascript 1/3, python 3/3)" in shown
    assert "round 1 gate: not promising: gained 3, lost 1 (net +2)" in shown
    assert "round 1 audit-parent: skipped (gate not promising and not due)" in shown
    assert "round 1 finish: Candidate rejected at the validation gate" in shown
    assert "│ python │ 0.333 (1/3) │ 1.000 (3/3) │ 2 │ 0 │" in shown
    assert "0:00:" not in shown, "no live bar (with its elapsed time) without a terminal"
    assert len(shown.splitlines()) < 30


def test_audit_flips_are_named_by_family_and_language(tmp_path: Path) -> None:
    """A decision's audit evidence names the problems, not only their hashes."""
    from codeloop.loop.display import _audit_lines

    folder = tmp_path / "round-000001"
    flip = {"flip": "lost", "id": "abc", "parent_passes": 2, "candidate_passes": 0}
    audit = {
        "total": 48,
        "before": 3,
        "after": 3,
        "gained": 0,
        "lost": 1,
        "confirmation": {"tasks": [{**flip, "pairs": 9, "p": 0.25, "counted": False}]},
    }
    store.write_json(folder / "finish.json", {"comparisons": {"audit": audit}})
    row = {"id": "abc", "family": "curriculum/max-two", "language": "javascript"}
    store.write_json(folder / "audit-candidate" / "rows.json", {"rows": [row]})
    lines = _audit_lines(folder)
    assert lines[1] == (
        "  lost max-two (javascript) abc: parent 2/9, candidate 0/9 samples, "
        "p=0.25 (noise, excused)"
    )


def test_the_gate_line_shows_its_confirmation_samples() -> None:
    gate_text = display.gate_text
    tasks = [{"id": "a", "pairs": 8}, {"id": "b", "pairs": 8}]
    gate = {"promising": True, "gained": 2, "lost": 0, "mcnemar_p": 0.5, "reasons": []}
    held = {"tasks": tasks, "confirmed": True, "pooled_candidate_only": 7}
    held |= {"pooled_parent_only": 0, "pooled_p": 0.0078125}
    assert gate_text(gate | {"confirmation": held}).endswith(
        "confirmed by samples: candidate alone 7, parent alone 0 of 16 pairs, p = 0.00781"
    )
    # Not confirmed: the gate's own reason says so, and no "confirmed" line is added.
    refused = gate | {"promising": False, "reasons": ["the gain is not confirmed: ..."]}
    text = gate_text(refused | {"confirmation": held | {"confirmed": False}})
    assert text.startswith("not promising") and "confirmed by samples" not in text
    assert text.endswith("the gain is not confirmed: ...")


def test_the_paired_rules_show_their_estimate(tmp_path: Path) -> None:
    """Under the paired rules the gate line and the audit lines show rates, change, the
    lower bound and the bar it had to clear, not per-task flips."""
    from codeloop.loop.display import _audit_lines

    estimate = {"rule": "paired", "samples": 4, "tasks": 48, "parent_rate": 0.1}
    estimate |= {"candidate_rate": 0.05, "change": -0.05, "alpha": 0.05, "lower_bound": -0.08}
    gate = {"promising": False, "gained": 1, "lost": 0, "mcnemar_p": 1.0, "reasons": ["x"]}
    text = display.gate_text(gate | {"confirmation": {**estimate, "confirmed": False}})
    assert "sampled 4x per side on 48 validation tasks: parent 10.0%, candidate 5.0%" in text
    assert "change -5.0 points (lower 95% bound -8.0, must be above +0.0)" in text
    folder = tmp_path / "round-000001"
    audit = {"total": 48, "before": 3, "after": 2, "gained": 0, "lost": 1}
    audit["confirmation"] = {**estimate, "margin": 0.02, "worse": True}
    store.write_json(folder / "finish.json", {"comparisons": {"audit": audit}})
    lines = _audit_lines(folder)
    assert lines[1].endswith("(lower 95% bound -8.0, must be above -2.0)")


def test_the_sequential_gate_and_the_likelihood_audit_show_what_decided(tmp_path: Path) -> None:
    """A sequential gate says at which looks it looked and why it stopped; the likelihood
    audit shows its measure in nats per token, its lower bound and the bar."""
    from codeloop.loop.display import _audit_lines

    looks = [{"samples": 2, "change": 0.0, "z": 0.4, "stop": ""}]
    looks.append({"samples": 4, "change": 0.1, "z": 2.5, "stop": "promising"})
    estimate = {"rule": "paired", "samples": 4, "tasks": 64, "parent_rate": 0.05}
    estimate |= {"candidate_rate": 0.15, "change": 0.1, "alpha": 0.05, "lower_bound": 0.02}
    estimate |= {"looks": looks, "efficacy_z": 1.8, "confirmed": True}
    gate = {"promising": True, "gained": 3, "lost": 0, "mcnemar_p": 0.25, "reasons": []}
    text = display.gate_text(gate | {"confirmation": estimate})
    assert "looked at 2, 4 samples per side" in text
    assert "z 2.50 (promising above 1.8; stopped: promising)" in text
    folder = tmp_path / "round-000001"
    evidence = {"rule": "likelihood", "tasks": 48, "parent_rate": -1.2, "candidate_rate": -1.5}
    evidence |= {"change": -0.3, "alpha": 0.05, "lower_bound": -0.35, "margin": 0.05}
    audit = {"total": 48, "before": 3, "after": 3, "gained": 0, "lost": 0}
    store.write_json(folder / "finish.json", {"comparisons": {"audit": audit | {
        "confirmation": evidence | {"worse": True}}}})  # fmt: skip
    line = _audit_lines(folder)[1]
    assert "likelihood of 48 verified reference programs" in line
    assert line.endswith("change -0.300 (lower 95% bound -0.350, must be above -0.050)")


def test_the_report_plots_the_audit_measure_the_decision_rested_on(tmp_path: Path) -> None:
    """The report's guard plot and decisions table show the likelihood audit's change,
    its lower bound and the bar, not only the greedy pass rate."""
    from codeloop.loop import report

    root = tmp_path / "session"
    evidence = {"rule": "likelihood", "tasks": 48, "parent_rate": -1.2, "candidate_rate": -1.21}
    evidence |= {"change": -0.01, "alpha": 0.05, "lower_bound": -0.02, "margin": 0.05}
    finish = {"accepted": True, "decision": "Candidate accepted", "comparisons": {
        "audit": {"confirmation": evidence}}}  # fmt: skip
    store.write_json(root / "round-000001" / "finish.json", finish)
    store.write_json(root / "status.json", {"history": []})
    page = report.render(root)
    assert "id='plot-guard'" in page
    assert "-0.01 nats/token (bound -0.02, bar -0.05)" in page
