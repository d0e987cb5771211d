"""Each integrity error of the round, triggered for real, with its message checked.

One real round is run once; each test copies it, breaks one thing, and runs the
phase that must notice.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")

from codeloop import recipe, store
from codeloop.errors import IntegrityError
from codeloop.loop import confirm
from codeloop.loop.finish import decide
from codeloop.loop.gate import compare, mcnemar_exact, promising
from codeloop.loop.phases import open_round, run_phase
from codeloop.loop.prepare import check_assignment
from tests.support.loop_fixtures import finished_round

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_round(tmp_path_factory.mktemp("integrity"))


@pytest.fixture
def session(finished: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "session"
    shutil.copytree(finished, copy)
    return copy


def forget(session: Path, *phases: str) -> Path:
    folder = session / "round-000001"
    for phase in phases:
        (folder / f"{phase}.json").unlink()
    return folder


def test_duplicate_task_id_is_refused() -> None:
    task = {"id": "a" * 32, "family": "f1"}
    with pytest.raises(IntegrityError, match=r"duplicate task id a{32}"):
        check_assignment([task, task], [], "tasks.json")


def test_family_in_two_splits_is_refused() -> None:
    with pytest.raises(IntegrityError, match="family f1 is in both train and validation"):
        check_assignment([{"id": "1", "family": "f1"}], [{"id": "2", "family": "f1"}], "x")


def test_tampered_tasks_json_is_refused(session: Path) -> None:
    folder = forget(session, "collect")
    tasks = store.read(folder / "tasks.json")
    tasks["train"] = tasks["train"][:-1]
    store.write_json(folder / "tasks.json", tasks)
    with pytest.raises(IntegrityError, match="tasks changed after prepare"):
        run_phase(session, 1, "collect")


def test_train_jsonl_changed_after_export_is_refused(session: Path) -> None:
    folder = forget(
        session, "train", "candidate", "gate", "audit-parent", "audit-candidate", "finish"
    )
    with (folder / "train.jsonl").open("a") as handle:
        handle.write("\n")
    with pytest.raises(IntegrityError, match="training data changed after export"):
        run_phase(session, 1, "train")


def test_answers_bound_to_other_weights_are_refused(session: Path) -> None:
    folder = forget(session, "collect")
    rows = store.read(folder / "collect-rows.json")
    rows["binding"]["adapter_sha256"] = "0" * 64
    rows["rows"] = rows["rows"][:2]
    store.write_json(folder / "collect-rows.json", rows)
    with pytest.raises(IntegrityError, match="bound to other adapter"):
        run_phase(session, 1, "collect")


def edit_a_verified_program(session: Path) -> tuple[Path, str]:
    """Forget export and replace the first verified program; (round folder, its task id)."""
    folder = forget(session, "export")
    rows = store.read(folder / "collect-rows.json")
    passed = next(row for row in rows["rows"] if row["passed"])
    passed["verified"][0]["program"] = "print('changed')\n"
    store.write_json(folder / "collect-rows.json", rows)
    return folder, passed["id"]


def test_answers_edited_after_collect_are_refused(session: Path) -> None:
    edit_a_verified_program(session)
    with pytest.raises(IntegrityError, match=r"collect-rows\.json: the collected answers changed"):
        run_phase(session, 1, "export")


def test_a_previously_verified_answer_that_now_fails_is_an_error(session: Path) -> None:
    # Edit the program AND re-bind collect.json to it: export's re-verification still
    # runs exactly the program it would train on, and refuses.
    folder, task_id = edit_a_verified_program(session)
    collected = store.read(folder / "collect.json")
    collected["rows_sha256"] = store.sha256_file(folder / "collect-rows.json")
    store.write_json(folder / "collect.json", collected)
    with pytest.raises(IntegrityError, match=f"task {task_id}.*no longer passes"):
        run_phase(session, 1, "export")


def test_export_trains_on_exactly_the_programs_it_re_verified(session: Path) -> None:
    import json

    folder = session / "round-000001"
    verified = {
        item["program"]
        for row in store.read(folder / "collect-rows.json")["rows"]
        for item in row["verified"]
    }
    lines = (folder / "train.jsonl").read_text().splitlines()
    assert lines, "the fixture round exported no rows"
    for line in lines:
        row = json.loads(line)
        answer = row["messages"][-1]["content"]
        program = answer.split("\n", 1)[1].rsplit("```", 1)[0]
        assert program in verified
        assert row["verification"]["program_sha256"] == store.sha256_bytes(program.encode())


def test_every_phase_says_what_it_waited_on(finished: Path) -> None:
    """PHASE.clock.json beside each result: collect checks programs in the sandbox,
    train neither generates nor checks, and no phase waited longer than it ran."""
    from codeloop.loop.common import PHASES

    folder = finished / "round-000001"
    clocks = {phase: store.read(folder / f"{phase}.clock.json") for phase in PHASES}
    for phase, found in clocks.items():
        assert set(found["seconds"]) == {"load", "generate", "check"}, phase
        assert sum(found["seconds"].values()) <= found["wall_seconds"] + 0.01, phase
    # timings, not inputs: the decision does not bind them
    bound = store.read(folder / "finish.json")["inputs"]
    assert bound and not [name for name in bound if name.endswith(".clock.json")]
    assert clocks["collect"]["seconds"]["check"] > 0
    assert clocks["export"]["seconds"]["check"] > 0  # it re-verifies what it exports
    assert clocks["train"]["seconds"]["check"] == clocks["train"]["seconds"]["generate"] == 0
    # bench/learning.py's entries show the split beside each phase's seconds
    import re

    from bench import learning

    times = learning.phase_times(folder, 0.0, [])
    check = clocks["collect"]["seconds"]["check"]
    shown = re.search(r"collect \d+ \(([^)]*)\)", times)
    if check >= 0.5:  # shown to the second, so below half a second it is left out
        assert shown and f"check {check:.0f}" in shown.group(1), times
    assert learning.waited_on(folder / "no-such.clock.json") == ""


def test_audit_conditions_that_differ_are_refused(session: Path) -> None:
    folder = forget(session, "finish")
    summary_file = folder / "audit-candidate" / "summary.json"
    summary = store.read(summary_file)
    summary["binding"]["max_output_tokens"] += 1
    store.write_json(summary_file, summary)
    with pytest.raises(IntegrityError, match=r"audit conditions differ.*max_output_tokens"):
        run_phase(session, 1, "finish")


def test_an_incomplete_audit_cannot_be_used(session: Path) -> None:
    folder = forget(session, "finish")
    rows_file = folder / "audit-candidate" / "rows.json"
    rows = store.read(rows_file)
    rows["rows"] = rows["rows"][:-1]
    store.write_json(rows_file, rows)
    with pytest.raises(IntegrityError, match="incomplete audit"):
        run_phase(session, 1, "finish")


def test_finish_accepts_and_status_keeps_the_adapter(finished: Path) -> None:
    finish = store.read(finished / "round-000001" / "finish.json")
    status = store.read(finished / "status.json")
    # The fixture's gate rule (min_net_gain 0) lets an equal candidate through.
    assert finish["accepted"] is True
    assert status["retained_adapter"] == "round-000001/adapter"
    assert (finished / "round-000001/adapter/adapter_model.safetensors").exists()


def test_a_rejected_candidate_loses_its_weights_but_keeps_its_reports(session: Path) -> None:
    folder = forget(session, "gate", "audit-parent", "audit-candidate", "finish")
    config = (session / "config.toml").read_text().replace("min_net_gain = 0", "min_net_gain = 1")
    (session / "config.toml").write_text(config)
    for phase in ("gate", "audit-parent", "audit-candidate", "finish"):
        run_phase(session, 1, phase)
    finish = store.read(folder / "finish.json")
    assert finish["accepted"] is False and "validation gate" in finish["decision"]
    assert not (folder / "adapter" / "adapter_model.safetensors").exists()
    assert (folder / "adapter" / "training.json").exists()
    assert store.read(session / "status.json")["retained_adapter"] is None


def test_gate_statistics() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 0) == pytest.approx(2 / 32)
    assert mcnemar_exact(3, 3) == 1.0
    before = [{"id": str(i), "language": "go", "passed": i < 2} for i in range(6)]
    after = [{"id": str(i), "language": "go", "passed": i in (1, 2, 3)} for i in range(6)]
    comparison = compare(before, after)
    assert (comparison["gained"], comparison["lost"]) == (2, 1)
    assert (comparison["gained_ids"], comparison["lost_ids"]) == (["2", "3"], ["0"])
    go = comparison["languages"]["go"]
    assert (go["before"], go["after"], go["gained_ids"], go["lost_ids"]) == (
        2,
        3,
        ["2", "3"],
        ["0"],
    )
    from codeloop.config import GateConfig

    assert promising(comparison, GateConfig())[0] is True
    assert promising(comparison, GateConfig(min_net_gain=2))[0] is False
    assert promising(comparison, GateConfig(max_p_value=0.05))[0] is False


def test_contract_conversation_trains_without_the_worked_example(session: Path) -> None:
    import json

    config = session / "config.toml"
    text = config.read_text()
    assert 'conversation = "recipe"' in text  # the saved config spells out every field
    config.write_text(text.replace('conversation = "recipe"', 'conversation = "contract"', 1))
    folder = forget(session, "export")
    run_phase(session, 1, "export")
    rows = [json.loads(line) for line in (folder / "train.jsonl").read_text().splitlines()]
    assert rows, "the fixture round exported no rows"
    for row in rows:
        roles = [turn["role"] for turn in row["messages"]]
        assert roles == ["system", "user", "assistant"], roles
        assert recipe.WORKED_PROBLEM not in str(row["messages"])


def _shrink_audit(folder: Path, keep: int) -> None:
    """Cut the audit to its first `keep` tasks everywhere, consistently (rows, summaries,
    task list and recorded sizes), as a run that audited less than declared would."""
    tasks_file = folder / "audit-tasks.json"
    saved = store.read(tasks_file)
    saved["tasks"] = saved["tasks"][:keep]
    saved["sizes"][-1]["used"] -= sum(entry["used"] for entry in saved["sizes"]) - keep
    store.write_json(tasks_file, saved)
    for phase in ("audit-parent", "audit-candidate"):
        rows_file = folder / phase / "rows.json"
        rows = store.read(rows_file)
        rows["rows"] = rows["rows"][:keep]
        store.write_json(rows_file, rows)
        summary_file = folder / phase / "summary.json"
        summary = store.read(summary_file)
        summary["total"] = keep
        summary["passed"] = sum(row["passed"] for row in rows["rows"])
        store.write_json(summary_file, summary)


def test_an_empty_audit_cannot_decide(session: Path) -> None:
    folder = forget(session, "finish")
    _shrink_audit(folder, 0)
    with pytest.raises(IntegrityError, match="holds no task"):
        run_phase(session, 1, "finish")


def test_an_audit_smaller_than_declared_is_refused(session: Path) -> None:
    folder = forget(session, "finish")
    _shrink_audit(folder, len(store.read(folder / "audit-tasks.json")["tasks"]) - 1)
    with pytest.raises(IntegrityError, match="cannot be smaller than declared"):
        run_phase(session, 1, "finish")


def test_a_smoke_sized_audit_says_so_in_the_decision(finished: Path) -> None:
    folder = finished / "round-000001"
    sizes = store.read(folder / "audit-tasks.json")["sizes"]
    assert sizes == [{"name": "curriculum-test", "declared": sizes[0]["declared"], "used": 4}]
    assert sizes[0]["declared"] > 4
    finish = store.read(folder / "finish.json")
    assert finish["comparisons"]["audit"]["smoke"] is True
    assert f"smoke-sized audit: 4 of {sizes[0]['declared']} tasks" in finish["decision"]


def test_replayed_answers_never_train_outside_tests(session: Path) -> None:
    from codeloop.errors import ConfigError

    config = session / "config.toml"
    text = config.read_text()
    assert "allow_replay_answers = true" in text
    config.write_text(text.replace("allow_replay_answers = true", "allow_replay_answers = false"))
    forget(session, "export")
    with pytest.raises(ConfigError, match="no model of this session wrote"):
        run_phase(session, 1, "export")


def test_a_pause_during_export_resumes_without_checking_a_program_twice(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codeloop.loop import export
    from codeloop.loop.common import Paused

    folder = forget(session, "export")
    (folder / "export-verified.json").unlink()
    expected = (folder / "train.jsonl").read_bytes()
    monkeypatch.setattr(export, "REVERIFY_CHUNK", 1)
    checked: list[str] = []
    real = export.check_answers

    def check_then_pause(r, items, public=False):
        checked.extend(answer for _task, answer in items)
        results = real(r, items, public)
        if len(checked) == 1:
            (session / "PAUSE").touch()  # as a user would, while the first chunk runs
        return results

    monkeypatch.setattr(export, "check_answers", check_then_pause)
    with pytest.raises(Paused):
        run_phase(session, 1, "export")
    assert len(checked) == 1 and not (folder / "export.json").exists()
    assert len(store.read(folder / "export-verified.json")["passed"]) == 1
    (session / "PAUSE").unlink()
    run_phase(session, 1, "export", True)
    passed = store.read(folder / "export-verified.json")["passed"]
    assert len(checked) == len(passed) > 1  # each program checked once over both runs
    assert (folder / "train.jsonl").read_bytes() == expected


def test_a_pause_stops_a_sandbox_batch_before_its_next_check(session: Path) -> None:
    from codeloop.loop.collect import check_answers
    from codeloop.loop.common import Paused
    from codeloop.loop.phases import open_round

    r = open_round(session, 1)
    items = [(task, "```python\nprint(1)\n```") for task in r.tasks("train")[:3]]
    assert len(check_answers(r, items)) == 3
    (session / "PAUSE").touch()
    with pytest.raises(Paused, match="during a sandbox batch"):
        check_answers(r, items)


def test_per_family_keeps_the_oldest_row_of_each_family_and_language(session: Path) -> None:
    from codeloop.loop.export import candidates
    from codeloop.loop.phases import open_round

    # A second round that verified the same programs again: every family has two rows.
    shutil.copytree(session / "round-000001", session / "round-000002")
    r = open_round(session, 2)

    def exported(**settings) -> dict:
        export = r.config.export.model_copy(update=settings)
        return candidates(type(r)(r.session, r.config.model_copy(update={"export": export}), 2))

    free = exported(per_task=4)
    capped = exported(per_task=4, per_family=1)
    families = {}
    for language, found in free.items():
        for task, program, _number in found:
            families.setdefault((language, task.family), []).append(program)
    assert any(len(programs) > 1 for programs in families.values()), "no family to cap"
    kept = {}
    for language, found in capped.items():
        for task, program, _number in found:
            assert (language, task.family) not in kept, "two rows of one family"
            kept[language, task.family] = program
    assert kept == {key: programs[0] for key, programs in families.items()}
    assert {number for found in capped.values() for _t, _p, number in found} == {1}


def test_one_sided_binomial_of_discordant_pairs() -> None:
    assert confirm.one_sided_p(0, 0) == 1.0
    assert confirm.one_sided_p(5, 0) == 1 / 32
    assert confirm.one_sided_p(4, 0) == 1 / 16
    assert confirm.one_sided_p(7, 1) == 9 / 256
    assert confirm.one_sided_p(0, 3) == 1.0


def _greedy_flip(folder: Path) -> str:
    """Make the audit show one greedy loss: the parent now passes a task the candidate
    fails (rows and summary kept consistent). Returns the task id."""
    rows_file = folder / "audit-parent" / "rows.json"
    rows = store.read(rows_file)
    candidate = store.read(folder / "audit-candidate" / "rows.json")["rows"]
    index = next(i for i, row in enumerate(candidate) if not row["passed"])
    rows["rows"][index]["passed"] = True
    store.write_json(rows_file, rows)
    summary = store.read(folder / "audit-parent" / "summary.json")
    summary["passed"] = sum(row["passed"] for row in rows["rows"])
    store.write_json(folder / "audit-parent" / "summary.json", summary)
    return rows["rows"][index]["id"]


def _samples(folder: Path, name: str, sides: dict[str, dict[str, list[bool]]]) -> None:
    """Write each side's saved samples as the sampler would: bound to the tasks, the
    prompt and the side's adapter (read from its validation rows)."""
    r = open_round(folder.parent, int(folder.name.split("-")[1]))
    (folder / name).mkdir(exist_ok=True)
    for side, passes in sides.items():
        ids = list(passes)
        rows = [
            {"id": i, "language": "python", "passed": any(v), "passes": v}
            for i, v in passes.items()
        ]
        binding = confirm.expected_binding(r, side, ids)
        store.write_json(folder / name / f"{side}.json", {"binding": binding, "rows": rows})


def _confirmation(folder: Path, task_id: str, parent: list[bool], candidate: list[bool]) -> None:
    _samples(
        folder, confirm.AUDIT, {"parent": {task_id: parent}, "candidate": {task_id: candidate}}
    )


def _with_rule(session: Path, rule: str) -> None:
    config = session / "config.toml"
    text = config.read_text()
    assert text.count('rule = "confirmed"') == 1  # the session's config names every field
    config.write_text(text.replace('rule = "confirmed"', f'rule = "{rule}"'))


@pytest.mark.parametrize(
    "rule, parent, candidate, accepted",
    [
        # One greedy flip, and samples that say the two models are alike: noise.
        ("confirmed", [True, False] * 4, [False, True] * 4, True),
        # The same flip under the seed's rule rejects.
        ("strict", [True, False] * 4, [False, True] * 4, False),
        # A real regression: the parent solves it every time, the candidate never.
        ("confirmed", [True] * 8, [False] * 8, False),
    ],
)
def test_the_audit_rule_tells_a_regression_from_a_flip(
    session: Path, rule: str, parent: list[bool], candidate: list[bool], accepted: bool
) -> None:
    folder = session / "round-000001"
    assert store.read(folder / "gate.json")["promising"]
    task_id = _greedy_flip(folder)
    _confirmation(folder, task_id, parent, candidate)
    _with_rule(session, rule)
    verdict = decide(open_round(session, 1))
    assert verdict["accepted"] is accepted, verdict["decision"]
    audit = verdict["comparisons"]["audit"]
    assert audit["lost_ids"] == [task_id] and audit["rule"] == rule
    if not accepted:
        assert task_id in verdict["decision"]  # a rejection names the task that decided it
    if rule == "confirmed":
        [evidence] = audit["confirmation"]["tasks"]
        assert evidence["id"] == task_id and evidence["pairs"] == 9
        assert evidence["counted"] is (not accepted)


def test_many_small_losses_reject_pooled(session: Path) -> None:
    """No single flipped task is significant, but all of them together are."""
    folder = session / "round-000001"
    r = open_round(session, 1)
    ids = [f"t{i}" for i in range(6)]
    _with_audit_samples(session, 3)
    r = open_round(session, 1)
    _samples(
        folder,
        confirm.AUDIT,
        {
            "parent": {i: [True, True, False] for i in ids},
            "candidate": {i: [False, False, False] for i in ids},
        },
    )
    evidence = confirm.evidence(r, {"lost_ids": ids, "gained_ids": []})
    assert evidence["lost_ids"] == []  # 3 of 3 discordant pairs: p = 1/8 each
    assert evidence["pooled_worse"] and evidence["pooled_parent_only"] == 18


def _with_gate_samples(session: Path, samples: int, **rule: Any) -> None:
    from codeloop.config import dumps, load

    config = load(session / "config.toml")
    gate = config.gate.model_copy(update={"confirm_samples": samples, **rule})
    store.write_text(session / "config.toml", dumps(config.model_copy(update={"gate": gate})))


def _with_audit_samples(session: Path, samples: int, **rule: Any) -> None:
    from codeloop.config import dumps, load

    config = load(session / "config.toml")
    audit = config.audit.model_copy(update={"confirm_samples": samples, **rule})
    store.write_text(session / "config.toml", dumps(config.model_copy(update={"audit": audit})))


def _gate_flip(folder: Path) -> str:
    """Make the greedy gate show one gain: a validation task the baseline fails now
    passes for the candidate. Returns its id."""
    rows = store.read(folder / "candidate-rows.json")
    before = store.read(folder / "baseline-rows.json")["rows"]
    index = next(i for i, row in enumerate(before) if not row["passed"])
    rows["rows"][index]["passed"] = True
    store.write_json(folder / "candidate-rows.json", rows)
    return rows["rows"][index]["id"]


@pytest.mark.parametrize(
    "parent, candidate, promising_after",
    [
        # The greedy gain holds in samples: the candidate passes 6 of 8, the parent 0.
        ([False] * 8, [True] * 6 + [False] * 2, True),
        # A flip of the coin: both pass half of the same-seed samples.
        ([True, False] * 4, [False, True] * 4, False),
    ],
)
def test_the_gate_asks_its_greedy_gain_to_hold_in_samples(
    session: Path, parent: list[bool], candidate: list[bool], promising_after: bool
) -> None:
    folder = forget(session, "gate", "audit-parent", "audit-candidate", "finish")
    task_id = _gate_flip(folder)
    _with_gate_samples(session, 8)
    _samples(folder, confirm.GATE, {"parent": {task_id: parent}, "candidate": {task_id: candidate}})
    run_phase(session, 1, "gate")  # the samples are saved: it asks the model nothing
    gate = store.read(folder / "gate.json")
    evidence = gate["confirmation"]
    assert [t["id"] for t in evidence["tasks"]] == [task_id] and evidence["tasks"][0]["pairs"] == 8
    assert gate["promising"] is promising_after
    if not promising_after:
        assert "not confirmed" in gate["reasons"][0]
    # decide() recomputes the gate from its rows and samples: an edited verdict is refused.
    run_phase(session, 1, "audit-parent")
    run_phase(session, 1, "audit-candidate")
    verdict = decide(open_round(session, 1))
    assert verdict["comparisons"]["validation"]["confirmation"] == evidence
    gate["promising"] = not promising_after
    store.write_json(folder / "gate.json", gate)
    with pytest.raises(IntegrityError, match=r"gate\.json: says promising"):
        decide(open_round(session, 1))


def test_gate_samples_are_asked_of_both_models(session: Path) -> None:
    """The gate phase's sampling, for real through the session's engine (replay): each
    side answers every sample key of each flipped task, into the gate's own folder."""
    folder = forget(session, "gate", "audit-parent", "audit-candidate", "finish")
    task_id = _gate_flip(folder)
    _with_gate_samples(session, 2)
    r = open_round(session, 1)
    replay = Path(r.config.engine.replay_path)
    with replay.open("a") as handle:
        for index in range(2):
            entry = {"task_id": task_id, "attempt": f"confirm-{index}", "answer": "print(1)"}
            handle.write(json.dumps(entry) + "\n")
    run_phase(session, 1, "gate")
    for side in confirm.SIDES:
        [row] = store.read(folder / confirm.GATE / f"{side}.json")["rows"]
        assert row["id"] == task_id and len(row["passes"]) == 2
    evidence = store.read(folder / "gate.json")["confirmation"]
    # The same saved answers on both sides: no discordant pair, so no confirmed gain.
    assert evidence["pooled_candidate_only"] == evidence["pooled_parent_only"] == 0
    assert store.read(folder / "gate.json")["promising"] is False
    assert not (folder / confirm.AUDIT).exists()  # the audit's samples stay apart


def test_a_chunk_s_samples_go_to_the_engine_in_one_call(session: Path, monkeypatch) -> None:
    """All confirmation samples of a chunk are asked together, so that the engine can keep
    its batch full (one call of k requests per side, not k calls of one), each with its
    own seed; the session's real (replay) engine answers them."""
    from codeloop.loop import collect

    folder = forget(session, "gate", "audit-parent", "audit-candidate", "finish")
    task_id = _gate_flip(folder)
    _with_gate_samples(session, 3)
    r = open_round(session, 1)
    with Path(r.config.engine.replay_path).open("a") as handle:
        for index in range(3):
            entry = {"task_id": task_id, "attempt": f"confirm-{index}", "answer": "print(1)"}
            handle.write(json.dumps(entry) + "\n")
    calls: list[tuple[list[str], list[int]]] = []
    create = collect.create_for

    def counted(config):
        engine = create(config)
        generate = engine.generate

        def generate_counted(conversations, **options):
            calls.append((list(options["keys"]), list(options["seed"])))
            return generate(conversations, **options)

        engine.generate = generate_counted
        return engine

    monkeypatch.setattr(collect, "create_for", counted)
    run_phase(session, 1, "gate")
    assert len(calls) == 2, calls  # one call per side
    for keys, seeds in calls:
        assert keys == [f"{task_id}:confirm-{index}" for index in range(3)]
        assert len(set(seeds)) == 3  # every sample its own seed, as when asked alone


def _audit_ids(folder: Path) -> list[str]:
    return [task["id"] for task in store.read(folder / "audit-tasks.json")["tasks"]]


@pytest.mark.parametrize(
    "parent, candidate, accepted",
    [
        # The same samples on both sides: no change, well inside the margin.
        ([True, False, False, False], [True, False, False, False], True),
        # The parent solves every task every time, the candidate never: a regression.
        ([True] * 4, [False] * 4, False),
    ],
)
def test_the_paired_audit_samples_every_task_and_tests_non_inferiority(
    session: Path, parent: list[bool], candidate: list[bool], accepted: bool
) -> None:
    folder = session / "round-000001"
    _with_audit_samples(session, 4, rule="paired", margin=0.02)
    ids = _audit_ids(folder)
    _samples(
        folder,
        confirm.AUDIT,
        {"parent": {i: parent for i in ids}, "candidate": {i: candidate for i in ids}},
    )
    verdict = decide(open_round(session, 1))
    evidence = verdict["comparisons"]["audit"]["confirmation"]
    assert evidence["rule"] == "paired" and evidence["tasks"] == len(ids)
    assert verdict["accepted"] is accepted, verdict["decision"]
    if not accepted:
        assert "lower bound" in verdict["decision"] and evidence["change"] == -1.0


def test_the_paired_audit_refuses_samples_of_only_some_tasks(session: Path) -> None:
    folder = session / "round-000001"
    _with_audit_samples(session, 2, rule="paired")
    ids = _audit_ids(folder)[:-1]
    _samples(
        folder,
        confirm.AUDIT,
        {"parent": {i: [True, True] for i in ids}, "candidate": {i: [True, True] for i in ids}},
    )
    with pytest.raises(IntegrityError, match="the rule asks for"):
        decide(open_round(session, 1))


@pytest.mark.parametrize("better, promising_after", [(True, True), (False, False)])
def test_the_paired_gate_samples_every_validation_task(
    session: Path, better: bool, promising_after: bool
) -> None:
    folder = forget(session, "gate", "audit-parent", "audit-candidate", "finish")
    _with_gate_samples(session, 4, rule="paired")
    ids = [t["id"] for t in store.read(folder / "tasks.json")["validation"]]
    after = [True, True, True, False] if better else [True, False, False, False]
    _samples(
        folder,
        confirm.GATE,
        {
            "parent": {i: [True, False, False, False] for i in ids},
            "candidate": {i: after for i in ids},
        },
    )
    run_phase(session, 1, "gate")  # every sample is saved: it asks the model nothing
    gate = store.read(folder / "gate.json")
    assert gate["promising"] is promising_after
    assert gate["confirmation"]["tasks"] == len(ids)
    if not promising_after:
        assert "not shown" in gate["reasons"][0]


def test_samples_bound_to_other_weights_never_decide(session: Path) -> None:
    """Saved samples of another adapter are neither reused nor read by a decision."""
    folder = session / "round-000001"
    task_id = _greedy_flip(folder)
    _confirmation(folder, task_id, [True] * 8, [False] * 8)
    saved = store.read(folder / confirm.AUDIT / "candidate.json")
    saved["binding"]["adapter_sha256"] = "0" * 64
    store.write_json(folder / confirm.AUDIT / "candidate.json", saved)
    r = open_round(session, 1)
    assert not confirm.complete(r, "candidate", [task_id])
    assert confirm.complete(r, "parent", [task_id])
    with pytest.raises(IntegrityError, match="bound to other adapter_sha256"):
        decide(r)


def test_gate_numbers_are_recomputed_from_the_rows(session: Path) -> None:
    """gate.json's counts are not copied into the decision: an edited count is refused."""
    folder = session / "round-000001"
    gate = store.read(folder / "gate.json")
    gate["gained"] += 1
    store.write_json(folder / "gate.json", gate)
    with pytest.raises(IntegrityError, match="gained"):
        decide(open_round(session, 1))
