"""What `verify` asks the weights again (issue 67): answers, likelihoods, and the digest.

- Generation conditions: a real round whose answers a tiny model generated (hf engine)
  records, once per attempt file, the engine, its versions, the weights' sha256, the
  seed, the sampling settings, threads and each engine call's keys; `--regenerate`
  reads them: an honest session regenerates identically, a replaced answer differs even
  with its recorded batch decoded again, and a recorded condition this machine does not
  have (another transformers version) turns the difference into a named "not
  reproducible" instead of a forgery.
- Likelihood scores: a round re-run under `audit.rule = "likelihood"` (tiny model); the
  recheck scores both sides again from the retained weights; a forged number fails by
  task; a rejected candidate's deleted weights are named as not re-scorable.
- The dataset card publishes the root digest that `verify --expect-digest` checks.
- A bench script's session records where its config came from.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")

from codeloop import store
from codeloop.config import dumps, load, load_preset, validate
from codeloop.loop import origin, rescore
from codeloop.loop import regenerate as regeneration
from codeloop.loop.audit import LIKELIHOOD
from codeloop.loop.digest import round_files
from codeloop.loop.finish import decide
from codeloop.loop.launcher import open_session
from codeloop.loop.phases import open_round, run_phase
from codeloop.loop.verify import Finding, verify_session
from codeloop.tasks.schema import Task
from tests.support.loop_fixtures import fence, finished_round, generated_round

pytestmark = pytest.mark.timeout(900)

ROUND = "round-000001"
EVERY_ANSWER = 100_000


def violations(findings: list[Finding]) -> list[Finding]:
    return [finding for finding in findings if not finding.ok]


def named(findings: list[Finding], check: str) -> list[Finding]:
    return [finding for finding in findings if finding.check == check]


# -- generation conditions ---------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    return generated_round(tmp_path_factory.mktemp("generated"))


def copied(session: Path, tmp_path: Path) -> Path:
    """A copy of a module's session for one test to change."""
    copy = tmp_path / "session"
    shutil.copytree(session, copy)
    return copy


@pytest.fixture
def hf_session(generated: Path, tmp_path: Path) -> Path:
    return copied(generated, tmp_path)


def attempt_file(session: Path) -> Path:
    return session / ROUND / "collect-attempt.json"


def generation_file(session: Path) -> Path:
    """The collect phase's record of how its answers were generated."""
    return session / ROUND / "collect.generation.json"


def batched_greedy(session: Path) -> str:
    """A greedy answer's key that its engine call asked together with three others."""
    calls = store.read(generation_file(session))["calls"]
    first = next(call for call in calls if len(call["keys"]) == 4 and call["temperature"] == 0)
    assert first["keys"][1].endswith(":greedy")
    return first["keys"][1]


def regenerate_one(session: Path, key: str) -> tuple[str, str]:
    """(outcome, detail) of regenerating the collect answer `key`, as verify does."""
    r = open_round(session, 1)
    assigned = store.read(session / ROUND / "tasks.json")
    tasks = {t["id"]: Task.model_validate(t) for t in assigned["train"] + assigned["validation"]}
    answers = regeneration.recorded_answers(r, tasks, regeneration.generations(session))
    [answer] = [a for a in answers if a.file == "collect-attempt.json" and a.key == key]
    [(_answer, outcome, detail)] = regeneration.regenerate(r, [answer], tasks)
    return outcome, detail


def edit(path: Path, change: Any) -> None:
    saved = store.read(path)
    change(saved)
    store.write_json(path, saved)


def replace_answer(session: Path, key: str) -> None:
    """Put another program where the collect answer `key` was (a forgery)."""
    task, attempt = key.split(":")

    def replace(saved: dict[str, Any]) -> None:
        saved["attempts"][task][attempt] = fence("python", "print(input())")

    edit(attempt_file(session), replace)


def test_the_conditions_are_recorded_once_per_attempt_file(generated: Path) -> None:
    import torch
    import transformers

    saved = store.read(attempt_file(generated))
    generation = store.read(generation_file(generated))
    config = load(generated / "config.toml")
    [recorded] = generation["conditions"]
    assert recorded["engine"] == "hf" and recorded["precision"] == "float32"
    assert recorded["versions"]["transformers"] == transformers.__version__
    assert recorded["versions"]["torch"] == torch.__version__
    model = Path(config.engine.model)
    files = [*sorted(model.glob("*.safetensors")), model / "config.json"]
    assert recorded["weights_sha256"] == store.sha256_json(
        {file.name: store.sha256_file(file) for file in files}
    )
    assert recorded["adapter_sha256"] is None  # the base model answered
    assert isinstance(recorded["threads"], int) and recorded["threads"] >= 1
    assert recorded["device"].startswith("cpu")
    expected = {"seed": 11, "max_tokens": 64, "batch_size": 4, "min_p": 0.0, "top_p": 1.0}
    assert {k: recorded[k] for k in expected} == expected
    # Each answer asked of the engine is in exactly one call, with its temperature.
    calls = generation["calls"]
    asked = [key for call in calls for key in call["keys"]]
    answered = [f"{task}:{a}" for task, tried in saved["attempts"].items() for a in tried]
    assert sorted(asked) == sorted(answered) and len(set(asked)) == len(asked)
    for call in calls:
        sampled = call["keys"][0].split(":")[1].startswith("sample-")
        assert call["temperature"] == (config.round.sample_temperature if sampled else 0.0)
    assert max(len(call["keys"]) for call in calls) == 4  # answers came from batches
    # The record is in the round's digest, not among finish's inputs (a resumed phase
    # splits its calls otherwise, with the same answers).
    assert "collect.generation.json" in round_files(generated / ROUND)
    inputs = store.read(generated / ROUND / "finish.json")["inputs"]
    assert f"{ROUND}/collect-attempt.json" in inputs
    assert f"{ROUND}/collect.generation.json" not in inputs


def test_an_honest_generated_session_regenerates_identically(hf_session: Path) -> None:
    findings = named(verify_session(hf_session, regenerate=EVERY_ANSWER), "regenerate")
    saved = store.read(attempt_file(hf_session))["attempts"]
    answers = [a for tried in saved.values() for a in tried]
    same = [f for f in findings if f.ok and not f.trusted]
    trusted = [f for f in findings if f.trusted]
    assert not violations(findings), violations(findings)
    assert len(same) == sum(a != "correction" for a in answers) > 0
    assert all("correction: not regenerable" in f.detail for f in trusted), trusted


def test_a_replaced_answer_differs_even_with_its_batch_decoded_again(hf_session: Path) -> None:
    key = batched_greedy(hf_session)
    replace_answer(hf_session, key)
    outcome, detail = regenerate_one(hf_session, key)
    assert outcome == "differs", detail
    assert "its batch of 4 decoded again" in detail, detail


@pytest.fixture(scope="module")
def llamacpp_generated(tmp_path_factory) -> Path:
    pytest.importorskip("llama_cpp")
    return generated_round(tmp_path_factory.mktemp("llamacpp"), engine="llamacpp")


@pytest.mark.slow
def test_on_llama_cpp_an_honest_answer_is_the_same_and_a_replaced_one_differs(
    llamacpp_generated: Path, tmp_path: Path
) -> None:
    """llama.cpp in process answers as alone whatever shares its batch, so a replaced
    answer it decoded in a batch is a forgery (`differs`), not a difference its batch
    might explain (`unreproducible`, taken on trust, as it was until 2026-12-07); and
    every honest answer of the session regenerates identically, batched ones included."""
    session = copied(llamacpp_generated, tmp_path)
    findings = named(verify_session(session, regenerate=EVERY_ANSWER), "regenerate")
    same = [f for f in findings if f.ok and not f.trusted]
    assert not violations(findings), violations(findings)
    assert same and all("correction: not regenerable" in f.detail for f in findings
                        if f.trusted), findings  # fmt: skip
    key = batched_greedy(session)
    replace_answer(session, key)
    outcome, detail = regenerate_one(session, key)
    assert outcome == "differs", detail


def test_regeneration_reads_the_recorded_conditions(hf_session: Path) -> None:
    """The same replaced answer, recorded as generated under another transformers: the
    difference is named as not reproducible here (on trust), not called a forgery."""
    key = batched_greedy(hf_session)

    def claim(generation: dict[str, Any]) -> None:
        generation["conditions"][0]["versions"]["transformers"] = "0.0.1"

    replace_answer(hf_session, key)
    edit(generation_file(hf_session), claim)
    outcome, detail = regenerate_one(hf_session, key)
    assert outcome == "unreproducible", detail
    assert "transformers 0.0.1" in detail, detail
    findings = named(verify_session(hf_session, regenerate=EVERY_ANSWER), "regenerate")
    assert not violations(findings), violations(findings)
    assert any(f.trusted and "not reproducible" in f.detail for f in findings)


@pytest.mark.parametrize(
    ("field", "value", "named_as"),
    [("temperature", 0.5, "temperature 0.5"), ("seed", 12, "seed 12")],
)
def test_an_answer_recorded_as_asked_otherwise_fails(
    hf_session: Path, field: str, value: Any, named_as: str
) -> None:
    """An honest answer whose record says it was asked with another temperature (or
    seed) than the config gives: the record and the session disagree, by name."""
    key = batched_greedy(hf_session)

    def change(generation: dict[str, Any]) -> None:
        if field == "temperature":
            next(c for c in generation["calls"] if key in c["keys"])["temperature"] = value
        else:
            generation["conditions"][0][field] = value

    edit(generation_file(hf_session), change)
    outcome, detail = regenerate_one(hf_session, key)
    assert outcome == "differs" and named_as in detail, detail


# -- likelihood scores -------------------------------------------------------------------


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> Path:
    return finished_round(tmp_path_factory.mktemp("replayed"))


@pytest.fixture(scope="module")
def likelihood_round(replayed: Path, tmp_path_factory) -> Path:
    """The replayed round with its audits and finish run again under the likelihood rule
    (each side scores the audit tasks' references with the tiny model)."""
    session = tmp_path_factory.mktemp("likelihood") / "session"
    shutil.copytree(replayed, session)
    config = load(session / "config.toml")
    config = config.model_copy(
        update={"audit": config.audit.model_copy(update={"rule": "likelihood"})}
    )
    store.write_text(session / "config.toml", dumps(config))
    phases = ("audit-parent", "audit-candidate", "finish")
    for phase in phases:
        (session / ROUND / f"{phase}.json").unlink()
    for phase in phases:
        run_phase(session, 1, phase)
    return session


@pytest.fixture
def scored(likelihood_round: Path, tmp_path: Path) -> Path:
    return copied(likelihood_round, tmp_path)


def test_honest_likelihood_scores_hold_when_scored_again(scored: Path) -> None:
    assert store.read(scored / ROUND / "finish.json")["comparisons"]["audit"]["rule"] == (
        "likelihood"
    )
    findings = verify_session(scored, recheck=True)
    assert not violations(findings), violations(findings)
    rescored = named(findings, "recheck likelihood")
    assert len(rescored) == 2 and all(f.ok and not f.trusted for f in rescored), rescored


def test_a_forged_likelihood_score_fails_the_recheck_by_task(scored: Path) -> None:
    """The candidate's scores all raised alike (it looks better, the decision stands),
    and everything after them rewritten: the audit's sha256, finish's evidence and
    inputs. Every hash
    holds; scoring again with the candidate's weights gives the real numbers."""
    folder = scored / ROUND
    path = folder / "audit-candidate" / LIKELIHOOD
    saved = store.read(path)
    for row in saved["scores"]:
        row["mean_logprob"] += 0.5
    store.write_json(path, saved)
    audit = store.read(folder / "audit-candidate.json")
    audit["likelihood_sha256"] = store.sha256_file(path)
    store.write_json(folder / "audit-candidate.json", audit)
    finish = store.read(folder / "finish.json")
    verdict = decide(open_round(scored, 1))
    assert verdict["accepted"] == finish["accepted"], "the forgery must keep the decision"
    finish.update(verdict)  # its evidence now shows the forged change
    finish["inputs"] = {name: store.sha256_file(scored / name) for name in finish["inputs"]}
    store.write_json(folder / "finish.json", finish)
    assert not violations(verify_session(scored)), "the forgery is not coordinated"
    found = violations(named(verify_session(scored, recheck=True), "recheck likelihood"))
    assert len(found) == 1, found
    assert f"{len(saved['scores'])} score(s) not what the weights give" in found[0].detail
    assert f"{saved['scores'][0]['id']}: recorded" in found[0].detail, found
    assert "audit-candidate/likelihood.json" in found[0].detail, found


def test_a_rejected_candidates_scores_are_named_not_rescorable(scored: Path) -> None:
    """A rejected candidate's weights are deleted by design: its scores cannot be scored
    again, and say so; the parent's still are."""
    (scored / ROUND / "adapter" / "adapter_model.safetensors").unlink()
    judged = {item.file: item for item in rescore.rescore(open_round(scored, 1))}
    parent = judged[f"audit-parent/{LIKELIHOOD}"]
    candidate = judged[f"audit-candidate/{LIKELIHOOD}"]
    assert parent.ok and not parent.trusted, parent
    assert candidate.trusted and "weights are deleted" in candidate.detail, candidate


# -- the digest in the dataset card ------------------------------------------------------


def test_the_dataset_card_publishes_the_digest_verify_checks(
    replayed: Path, tmp_path: Path
) -> None:
    pytest.importorskip("datasets")
    from codeloop.loop.dataset import export_dataset
    from codeloop.loop.digest import round_digest

    session = copied(replayed, tmp_path)
    summary = export_dataset(session, tmp_path / "dataset")
    card = (tmp_path / "dataset" / "README.md").read_text()
    published = re.search(r"session digest: `([0-9a-f]{64})`, round 1's", card)
    assert published is not None, card
    digest = published.group(1)
    assert digest == round_digest(session, 1) == summary["session_digest"]["digest"]
    assert f"--expect-digest {digest}" in card
    assert summary["session_digest"]["not_covered"] == []
    [held] = named(verify_session(session, expect_digest=digest), "expected digest")
    assert held.ok, held
    # A later edit of any file of the chain, coordinated or not, breaks the published one.
    gate = store.read(session / ROUND / "gate.json")
    store.write_json(session / ROUND / "gate.json", {**gate, "note": "edited"})
    [broken] = named(verify_session(session, expect_digest=digest), "expected digest")
    assert not broken.ok, broken


# -- bench sessions' origin --------------------------------------------------------------


def test_a_bench_session_records_its_presets_origin(tmp_path: Path) -> None:
    from bench.learning import _open, _parser

    args = _parser().parse_args(["--seed", "5", "--engine", "hf"])
    paths = _open(args, tmp_path / "bench")
    differing, rebuilt = origin.compare(paths.root)
    assert rebuilt.config is not None and differing == [], rebuilt
    assert "seed" in rebuilt.trusted and "engine.kind" in rebuilt.trusted, rebuilt.trusted
    [config] = named(verify_session(paths.root), "config")
    assert config.ok and not config.trusted, config


def test_a_session_opened_without_an_origin_is_recorded_as_on_trust(tmp_path: Path) -> None:
    data = load_preset("cpu-demo").model_dump(mode="json", by_alias=True, exclude_none=True)
    data["seed"] = 99
    paths = open_session(tmp_path / "made", validate(data, "a config made in code"))
    assert store.read(paths.root / origin.ORIGIN_FILE)["kind"] == "trust"
    [found] = named(verify_session(paths.root), "config")
    assert found.trusted and "did not record its origin" in found.detail, found
