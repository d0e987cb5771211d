"""Request shapes recorded from ROLL's and LazyLLM's SandboxFusion clients, replayed
against a real `codeloop serve` on loopback (tests/fixtures/serve/replays.json says
where each shape comes from, file and commit).

Each answer must have SandboxFusion's response shape (its keys, status strings and null
rules), and the client's own reading of it, re-stated below in a few lines from its
source, must give the verdict the program deserves. Shapes this server does not serve
(ROLL's `ruby`) must be refused with a clear 4xx, which the client reports as a failed
call, never as a verdict. LazyLLM's input files (keyed by their host paths) and output
files (`fetch_files`) are served, read back as its `_process_output_files` does.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from codeloop.serve.limits import Settings
from tests.support.serve import running

pytestmark = pytest.mark.timeout(300)

RECORDED = json.loads(
    (Path(__file__).parent / "fixtures" / "serve" / "replays.json").read_text(encoding="utf-8")
)
RESPONSE_KEYS = {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"}
RESULT_KEYS = {"status", "execution_time", "return_code", "stdout", "stderr"}


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    # Neither client sends a token: a loopback server without auth, as docs/SERVICE.md
    # says to run one per training node for them.
    with running(Settings(token=None, max_in_flight=2)) as url:
        yield url


def sandboxfusion_shaped(answer: dict) -> None:
    assert set(answer) == RESPONSE_KEYS
    assert answer["status"] in ("Success", "Failed", "SandboxError")
    assert isinstance(answer["message"], str)
    for key in ("compile_result", "run_result"):
        step = answer[key]
        if step is None:
            continue
        assert set(step) == RESULT_KEYS
        assert step["status"] in ("Finished", "TimeLimitExceeded", "Error")
        if step["status"] == "Finished":
            assert isinstance(step["return_code"], int)
            assert isinstance(step["stdout"], str) and isinstance(step["stderr"], str)
            assert step["execution_time"] >= 0


def roll_reads(answer: dict) -> dict:
    """ROLL's `sandbox_result_judge` on one answer: on Success the trimmed stdout is
    compared; on Failed the error type is the last stderr line up to its first colon."""
    run = answer.get("run_result") or {}
    if answer["status"] == "Success":
        return {"status": "Success", "stdout": run.get("stdout", "").strip()}
    lines = (run.get("stderr") or "").strip().splitlines()
    return {"status": answer["status"], "error_type": lines[-1].split(":")[0] if lines else ""}


def lazyllm_reads(answer: dict) -> dict:
    """LazyLLM's `SandboxFusion._execute`: success is status Success and exit code 0;
    `_process_output_files` writes each of the answer's `files` (name -> base64)."""
    run = answer.get("run_result") or {}
    code = run.get("return_code", -1)
    return {
        "success": answer.get("status") == "Success" and code == 0,
        "stdout": run.get("stdout", ""),
        "returncode": code,
        "files": dict(answer.get("files") or {}),
    }


@pytest.mark.parametrize("case", RECORDED["roll"], ids=lambda case: case["name"])
def test_roll_shapes(base: str, case: dict) -> None:
    body = dict(
        case["body"],
        code=case["body"]["code"].replace("@PRELUDE@", RECORDED["roll_python_prelude"]),
    )
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "eagleeye-traceid": str(uuid.uuid4()),
    }
    # ROLL posts to its `code_url` as given: the whole endpoint.
    answer = httpx.post(f"{base}/run_code", content=json.dumps(body), headers=headers, timeout=120)
    expect = case["expect"]
    if "http" in expect:
        assert answer.status_code == expect["http"], answer.text
        assert body["language"] in answer.json()["detail"]
        return
    assert answer.status_code == 200, answer.text
    found = answer.json()
    sandboxfusion_shaped(found)
    if "run_result" in expect:
        assert found["run_result"] is expect["run_result"]
        assert found["compile_result"]["return_code"] != 0
    read = roll_reads(found)
    for key in ("status", "stdout", "error_type"):
        if key in expect:
            assert read[key] == expect[key], (key, found)


def test_lazyllm_pings_first(base: str) -> None:
    ping = httpx.get(f"{base}/v1/ping", timeout=2)  # LazyLLM's own timeout
    assert ping.status_code == 200 and ping.json() == "pong"


@pytest.mark.parametrize("case", RECORDED["lazyllm"], ids=lambda case: case["name"])
def test_lazyllm_shapes(base: str, case: dict) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    answer = httpx.post(f"{base}/run_code", json=case["body"], headers=headers, timeout=120)
    expect = case["expect"]
    if "http" in expect:
        assert answer.status_code == expect["http"], answer.text
        return
    assert answer.status_code == 200, answer.text
    found = answer.json()
    sandboxfusion_shaped(found)
    read = lazyllm_reads(found)
    for key, value in expect.items():
        assert read[key] == value, (key, found)
