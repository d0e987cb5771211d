"""What a user runs on a finished session: `verify`, `export-dataset` and `report`.

One real round (tiny model, replay answers) is run once; each test copies the session.
verify: a finished session holds, and each kind of tampering (changed the way a
careless or dishonest edit would) is caught. report: a real browser (headless
Chromium) renders the page; the test reads its DOM and saves a screenshot.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

from codeloop import store
from codeloop.loop.verify import verify_session
from tests.support.loop_fixtures import finished_round

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_round(tmp_path_factory.mktemp("verify"))


@pytest.fixture
def session(finished: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "session"
    shutil.copytree(finished, copy)
    return copy


def codeloop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codeloop", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "200"},
    )


def verify(session: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return codeloop("verify", "--session", str(session), *flags)


def violated(session: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in verify_session(session):
        if not finding.ok:
            found.setdefault(finding.check, []).append(finding.detail)
    return found


def test_a_finished_session_holds_and_its_rows_pass_again(session: Path) -> None:
    result = verify(session, "--recheck")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every check holds" in result.stdout
    assert "recheck" in result.stdout  # the rows were run again


def test_a_tampered_answer_is_caught(session: Path) -> None:
    rows_file = session / "round-000001" / "collect-rows.json"
    rows = store.read(rows_file)
    row = next(r for r in rows["rows"] if r.get("verified"))
    row["verified"][0]["program"] += "\n# edited after collect\n"
    store.write_json(rows_file, rows)
    assert "collect" in violated(session)
    result = verify(session)
    assert result.returncode == 1
    assert "VIOLATED" in result.stdout and "collect-rows.json" in result.stdout


@pytest.mark.parametrize("edit", ["accepted", "decision"])
def test_an_edited_decision_is_caught(session: Path, edit: str) -> None:
    """finish.json is not one of its own hashed inputs: verify recomputes the decision
    from the round's rows and compares."""
    assert "decision" not in violated(session)
    finish_file = session / "round-000001" / "finish.json"
    finish = store.read(finish_file)
    if edit == "accepted":
        finish["accepted"] = not finish["accepted"]
    else:
        finish["decision"] = "Candidate accepted after a careful look"
    store.write_json(finish_file, finish)
    assert "decision" in violated(session)


def test_a_validation_task_planted_in_train_jsonl_is_caught(session: Path) -> None:
    folder = session / "round-000001"
    tasks = store.read(folder / "tasks.json")
    data = folder / "train.jsonl"
    lines = data.read_text().splitlines()
    row = json.loads(lines[0])
    row["task_id"] = tasks["validation"][0]["id"]
    data.write_text("\n".join([json.dumps(row), *lines]) + "\n")
    # Re-hash it everywhere, as a forger would: only the content can give it away.
    digest = store.sha256_file(data)
    for name in ("export.json", "train.jsonl.manifest.json"):
        recorded = store.read(folder / name)
        recorded["data_sha256" if name == "export.json" else "dataset_sha256"] = digest
        store.write_json(folder / name, recorded)
    found = violated(session)
    assert any("validation task or family" in detail for detail in found["export rows"]), found


def test_a_swapped_adapter_file_is_caught(session: Path) -> None:
    weights = session / "round-000001" / "adapter" / "adapter_model.safetensors"
    if not weights.exists():
        pytest.skip("the fixture round rejected its candidate (no weights to swap)")
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    found = violated(session)
    assert "adapter" in found, found


def test_a_changed_tasks_json_is_caught(session: Path) -> None:
    tasks_file = session / "round-000001" / "tasks.json"
    tasks = store.read(tasks_file)
    tasks["train"] = tasks["train"][:-1]
    store.write_json(tasks_file, tasks)
    found = violated(session)
    assert "tasks" in found and "finish inputs" not in found, found


def test_verify_refuses_a_folder_that_is_no_session(tmp_path: Path) -> None:
    result = verify(tmp_path)
    assert result.returncode != 0
    assert "not a session folder" in result.stdout + result.stderr


def test_export_dataset_writes_a_folder_datasets_loads(session: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "dataset"
    result = codeloop("export-dataset", "--session", str(session), "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    loaded = datasets.load_dataset(str(out))["train"]
    trained = [
        json.loads(line)
        for line in (session / "round-000001" / "train.jsonl").read_text().splitlines()
    ]
    assert len(loaded) == len(trained) > 0
    assert sorted(loaded["program_sha256"]) == sorted(
        row["verification"]["program_sha256"] for row in trained
    )
    for row in loaded:
        assert store.sha256_bytes(row["program"].encode()) == row["program_sha256"]
    card = (out / "README.md").read_text()
    assert "license:" in card and "verification: local_execution" in card


def test_export_dataset_refuses_a_tampered_session(session: Path, tmp_path: Path) -> None:
    from codeloop.errors import CodeloopError
    from codeloop.loop.dataset import export_dataset

    rows_file = session / "round-000001" / "collect-rows.json"
    rows_file.write_text(rows_file.read_text().replace('"passed": false', '"passed": true'))
    with pytest.raises(CodeloopError, match="violation"):
        export_dataset(session, tmp_path / "dataset")
    assert not (tmp_path / "dataset").exists()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_report_renders_in_a_browser_with_plots_and_tables(
    session: Path, tmp_path: Path
) -> None:
    # A hostile answer among the tasks the candidate gained: it must show as text.
    rows_file = session / "round-000001" / "candidate-rows.json"
    rows = store.read(rows_file)
    before = {
        r["id"]: r for r in store.read(session / "round-000001" / "baseline-rows.json")["rows"]
    }
    target = rows["rows"][0]
    target["passed"] = not before[target["id"]]["passed"]  # so the report shows it
    target["answer"] = "<script>document.title='owned'</script><img src=x onerror=alert(1)>"
    store.write_json(rows_file, rows)
    result = codeloop("report", "--session", str(session))
    assert result.returncode == 0, result.stdout + result.stderr
    page = session / "report.html"
    assert str(page.resolve()) in result.stdout.replace("\n", "")
    text = page.read_text()
    # Offline: nothing is fetched (namespace URIs in the SVGs are names, not requests).
    assert not re.search(
        r"""(?:src|href)\s*=\s*["']?(?:https?:|//)|url\(\s*["']?(?:https?:|//)|@import""", text
    )
    browser = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,2000"]
    dom = subprocess.run(
        [*browser, "--dump-dom", page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "<title>codeloop report" in dom and "owned" not in dom.split("</title>")[0]
    assert "<script" not in dom and "<img" not in dom
    assert "&lt;script&gt;document.title" in dom  # shown as text, in the changes table
    for plot in ("validation", "loss", "replay"):
        section = dom.split(f'id="plot-{plot}"', 1)
        assert len(section) == 2 and "<svg" in section[1][:2000], plot
    decisions = dom.split('class="decisions"', 1)[1].split("</table>", 1)[0]
    assert decisions.count("<tr>") == 2  # the header and round 1
    assert "accepted" in decisions or "rejected" in decisions
    shot = tmp_path / "report.png"
    subprocess.run(
        [*browser, f"--screenshot={shot}", page.resolve().as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.exists() and shot.stat().st_size > 10_000
    shutil.copy(shot, Path(os.environ.get("CODELOOP_REPORT_SHOT", tmp_path / "kept.png")))


def test_codeloop_eval_agrees_with_the_rounds_audit_on_its_answers(
    session: Path, tmp_path: Path
) -> None:
    """One evaluator: the audit's own answers, scored again by `codeloop eval`, give the
    audit's verdicts task by task."""
    from codeloop.config import load
    from codeloop.evaluate.answers import Answers
    from codeloop.evaluate.runner import score
    from codeloop.tasks.schema import Task

    folder = session / "round-000001"
    if store.read(folder / "audit-candidate.json").get("skipped"):
        pytest.skip("the fixture round did not run its audit")
    tasks = [Task.model_validate(t) for t in store.read(folder / "audit-tasks.json")["tasks"]]
    rows = store.read(folder / "audit-candidate" / "rows.json")["rows"]
    answers = Answers({row["id"]: [row["answer"]] for row in rows}, {})
    config = load(session / "config.toml")
    summary = score("audit", tasks, answers, tmp_path / "eval", config.sandbox)
    results = [
        json.loads(line) for line in (tmp_path / "eval/results.jsonl").read_text().splitlines()
    ]
    assert [r["passed"] for r in results] == [row["passed"] for row in rows]
    assert summary["passed"] == store.read(folder / "audit-candidate" / "summary.json")["passed"]
