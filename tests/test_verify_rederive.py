"""`verify` re-derives what it can (the config, the tasks) and names the rest as on trust.

A coordinated forger rewrites every sha256 along the chain, so hash checks alone hold
on a forged session. These tests build each forgery of issue 67 on one real small
round (tiny model, replay answers, run once per module) and show which check catches
it: the config rebuilt from its recorded origin, each task rebuilt from its source,
the root digest a reader saved, and a task edited without its id recomputed, which
used to crash `verify --recheck` with a pydantic traceback.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")

from codeloop import store
from codeloop.config import dumps, load
from codeloop.loop import origin
from codeloop.loop.digest import round_digest
from codeloop.loop.verify import Finding, verify_session
from codeloop.tasks.schema import task_id
from tests.support.loop_fixtures import finished_round

pytestmark = pytest.mark.timeout(900)

ROUND = "round-000001"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_round(tmp_path_factory.mktemp("rederive"))


@pytest.fixture
def session(finished: Path, tmp_path: Path) -> Path:
    """A copy of the round whose config is recorded as made from the cpu-demo preset
    (with every field the test config changes as an override), as `codeloop run
    --preset` records it."""
    copy = tmp_path / "session"
    shutil.copytree(finished, copy)
    origin.record(copy, origin.from_preset("cpu-demo", load(copy / "config.toml")))
    return copy


def violations(findings: list[Finding]) -> list[Finding]:
    return [finding for finding in findings if not finding.ok]


def named(findings: list[Finding], check: str) -> list[Finding]:
    return [finding for finding in findings if finding.check == check]


def exported_task(session: Path) -> dict[str, Any]:
    """A train task with a row in train.jsonl and more than one hidden case."""
    folder = session / ROUND
    rows = [line for line in (folder / "train.jsonl").read_text().splitlines() if line.strip()]
    exported = {json.loads(line)["task_id"] for line in rows}
    tasks = store.read(folder / "tasks.json")["train"]
    return next(t for t in tasks if t["id"] in exported and len(t["cases"]) > 1)


def rehash_chain(session: Path) -> None:
    """Every recorded sha256 along the round's chain recomputed from the files as they
    are now, as a forger who knows the code would: prepare, collect, export, the
    baseline's and candidate's rows, the audits' summaries and finish.json's inputs."""
    folder = session / ROUND
    links = {
        "prepare.json": ("tasks_sha256", "tasks.json"),
        "collect.json": ("rows_sha256", "collect-rows.json"),
        "baseline.json": ("rows_sha256", "baseline-rows.json"),
        "candidate.json": ("rows_sha256", "candidate-rows.json"),
        "export.json": ("data_sha256", "train.jsonl"),
        "train.jsonl.manifest.json": ("dataset_sha256", "train.jsonl"),
        "audit-parent.json": ("summary_sha256", "audit-parent/summary.json"),
        "audit-candidate.json": ("summary_sha256", "audit-candidate/summary.json"),
    }
    for name, (key, target) in links.items():
        record = store.read(folder / name, None)
        if record is not None and key in record:
            record[key] = store.sha256_file(folder / target)
            store.write_json(folder / name, record)
    finish = store.read(folder / "finish.json")
    finish["inputs"] = {name: store.sha256_file(session / name) for name in finish["inputs"]}
    store.write_json(folder / "finish.json", finish)


def replace_everywhere(session: Path, old: str, new: str) -> None:
    """`old` replaced by `new` in every file of the round and the pool."""
    for path in [*(session / ROUND).rglob("*"), *(session / "pool").rglob("*")]:
        if path.is_file() and path.suffix in {".json", ".jsonl"}:
            text = path.read_text()
            if old in text:
                path.write_text(text.replace(old, new))


def test_an_honest_session_holds_with_its_config_and_tasks_rebuilt(session: Path) -> None:
    findings = verify_session(session)
    assert not violations(findings), violations(findings)
    [config] = named(findings, "config")
    assert config.ok and not config.trusted, config
    rebuilt = named(findings, "tasks rebuilt") + named(findings, "audit tasks rebuilt")
    assert len(rebuilt) >= 3 and all(f.ok and not f.trusted for f in rebuilt), rebuilt
    # The test config's own choices are overrides of the preset: named, on trust.
    [overrides] = named(findings, "config overrides")
    assert overrides.trusted and "engine.kind" in overrides.detail, overrides


def test_the_cli_prints_the_digest_and_checks_an_expected_one(session: Path) -> None:
    digest = round_digest(session, 1)
    assert digest is not None and len(digest) == 64
    command = [sys.executable, "-m", "codeloop", "verify", "--session", str(session)]
    good = subprocess.run(
        [*command, "--expect-digest", digest], capture_output=True, text=True, timeout=300
    )
    assert good.returncode == 0, good.stdout + good.stderr
    assert f"round 1 digest {digest}" in good.stdout and "on trust" in good.stdout
    bad = subprocess.run(
        [*command, "--expect-digest", "0" * 64], capture_output=True, text=True, timeout=300
    )
    assert bad.returncode == 1 and "expected digest" in bad.stdout, bad.stdout + bad.stderr


def test_an_edited_config_fails_by_field_name(session: Path) -> None:
    """The issue's edit: the training settings changed in config.toml, and the audit's
    margin loosened with the decision rewritten to match; no sha256 covers config.toml."""
    config = load(session / "config.toml")
    forged = config.model_copy(
        update={
            "train": config.train.model_copy(update={"learning_rate": 0.5}),
            "audit": config.audit.model_copy(update={"margin": 0.5}),
        }
    )
    store.write_text(session / "config.toml", dumps(forged))
    findings = verify_session(session)
    [config_check] = named(findings, "config")
    assert not config_check.ok, config_check
    assert "train.learning_rate" in config_check.detail, config_check.detail
    assert "audit.margin" in config_check.detail, config_check.detail
    assert [f.check for f in violations(findings)] == ["config"], violations(findings)


def test_a_config_that_cannot_be_rebuilt_is_named_as_taken_on_trust(session: Path) -> None:
    mine = session.parent / "mine.toml"
    shutil.copy(session / "config.toml", mine)
    origin.record(session, origin.from_file(mine))
    [users] = named(verify_session(session), "config")
    assert users.ok and users.trusted and "user's own file" in users.detail, users
    (session / origin.ORIGIN_FILE).unlink()
    [unrecorded] = named(verify_session(session), "config")
    assert unrecorded.trusted and origin.ORIGIN_FILE in unrecorded.detail, unrecorded
    recorded = origin.from_preset("cpu-demo", load(session / "config.toml"))
    origin.record(session, {**recorded, "preset_sha256": "0" * 64})
    [changed] = named(verify_session(session), "config")
    assert changed.trusted and "is not the one the session recorded" in changed.detail, changed


def test_an_edited_task_without_its_id_recomputed_fails_a_named_check(session: Path) -> None:
    """The uncoordinated edit: a hidden case cut from a task whose id is left as it was,
    tasks.json's sha256 rewritten. verify must name the task, not crash."""
    folder = session / ROUND
    task = exported_task(session)
    tasks = store.read(folder / "tasks.json")
    for entry in tasks["train"]:
        if entry["id"] == task["id"]:
            entry["cases"] = entry["cases"][:1]
    store.write_json(folder / "tasks.json", tasks)
    rehash_chain(session)
    findings = verify_session(session, recheck=True)
    [content] = named(findings, "task content")
    assert not content.ok and task["id"] in content.detail, content
    assert "does not match its id" in content.detail, content.detail
    assert any(f.check == "export rows" and task["id"] in f.detail for f in violations(findings))


def test_a_task_cut_to_its_first_hidden_case_with_its_id_recomputed_fails(session: Path) -> None:
    """The coordinated forgery of issue 67: a train task cut down to its first hidden
    case, its id recomputed with `task_id` and replaced everywhere, every sha256
    rewritten. Every hash holds; the task rebuilt from the curriculum does not match,
    and the digest saved before the forgery no longer does either."""
    published = round_digest(session, 1)
    task = exported_task(session)
    cut = task["cases"][:1]
    content = {k: task[k] for k in ("family", "language", "kind", "statement", "public_cases")}
    new_id = task_id(**content, cases=cut, checker=task["checker"], function=task["function"])
    folder = session / ROUND
    tasks = store.read(folder / "tasks.json")
    for entry in tasks["train"]:
        if entry["id"] == task["id"]:
            entry["cases"] = cut
    store.write_json(folder / "tasks.json", tasks)
    replace_everywhere(session, task["id"], new_id)
    rehash_chain(session)
    findings = verify_session(session, expect_digest=published)
    assert {f.check for f in violations(findings)} == {"tasks rebuilt", "expected digest"}, (
        violations(findings)
    )
    [rebuilt] = [f for f in named(findings, "tasks rebuilt") if not f.ok]
    assert new_id in rebuilt.detail and "cases" in rebuilt.detail, rebuilt.detail
    assert round_digest(session, 1) != published
