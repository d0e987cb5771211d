"""`codeloop serve`'s last open doors (issue 66, part 3): a real server on 127.0.0.1
(uvicorn on an ephemeral port, `tests.support.serve`), the real sandbox, real programs.

- A client that goes away gives its place in the queue and its slot back at once, and
  its run is stopped; the next client's program runs on the freed worker.
- One client (one peer address) may have `max_per_client` sandbox requests open; one
  more is 429 with `Retry-After`, while another address is served.
- Bad input is a clear 4xx, never a 5xx: a lone surrogate anywhere in a body is 422 and
  no log line quotes the body; an input file that cannot be written is 422 naming no
  host path.
- The limits a `/run_code` ran under, start-up allowance included, come back in the
  `x-codeloop-limits` header.

Every request has a timeout, every wait a deadline, every loop a bound.
"""

from __future__ import annotations

import base64
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from codeloop.serve.limits import Settings
from tests.support.serve import running

pytestmark = pytest.mark.timeout(180)

TOKEN = "doors-test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ONE_WORKER = Settings(token=TOKEN, workers=1, max_in_flight=1, max_waiting=16)


def wait_for(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll `predicate` every 50 ms for at most `seconds`."""
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not within {seconds:g} s"
        time.sleep(0.05)


def sleeping(marker: str) -> bool:
    """Whether a `sleep MARKER` process lives on this machine (a run's program: the
    sandbox's pid namespaces hide nothing from the host's /proc)."""
    wanted = b"sleep\0" + marker.encode() + b"\0"
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == wanted:
                    return True
            except OSError:  # gone meanwhile, or not ours to read
                continue
    return False


def sleeper(seconds: float) -> tuple[str, str]:
    """A Python program that becomes `sleep SECONDS` (a process findable by its argv),
    and that argument: unique to the test run."""
    marker = f"{seconds + random.random():.6f}"
    code = f"import os\nos.execv('/bin/sleep', ['sleep', '{marker}'])\n"
    return code, marker


def open_request(url: str, body: dict) -> socket.socket:
    """POST /run_code on a raw socket, left open without reading the answer (closing it
    is the client going away)."""
    host, port = url.removeprefix("http://").split(":")
    data = json.dumps(body).encode()
    head = (
        f"POST /run_code HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"authorization: Bearer {TOKEN}\r\ncontent-length: {len(data)}\r\n\r\n"
    ).encode()
    conn = socket.create_connection((host, int(port)), timeout=10)
    conn.sendall(head + data)
    return conn


def health(url: str) -> dict:
    return httpx.get(f"{url}/health", timeout=10).json()


# --- slots: a client that goes away, one client that asks too much --------------------


def test_a_client_that_goes_away_frees_its_place_and_slot_and_its_run_stops() -> None:
    with running(ONE_WORKER) as url:
        holding, held_marker = sleeper(28)
        queued, queued_marker = sleeper(27)
        first = open_request(url, {"code": holding, "run_timeout": 40})
        wait_for(lambda: sleeping(held_marker), 30, "the first program started")
        second = open_request(url, {"code": queued, "run_timeout": 40})
        wait_for(lambda: health(url)["waiting"] == 1, 10, "the second request queued")

        second.close()  # gone while waiting: its place in the queue is given back
        wait_for(lambda: health(url)["waiting"] == 0, 5, "the queued request dropped")
        first.close()  # gone while running: its slot is given back, its run stopped
        wait_for(lambda: not sleeping(held_marker), 10, "the abandoned run stopped")
        wait_for(lambda: health(url)["running"] == 0, 5, "the slot came free")

        started = time.monotonic()
        answer = httpx.post(
            f"{url}/run_code", json={"code": "print(6 * 7)"}, headers=AUTH, timeout=60
        )
        took = time.monotonic() - started
        assert answer.status_code == 200 and answer.json()["run_result"]["stdout"] == "42\n"
        # on the one worker, which the abandoned 28 s program no longer holds
        assert took < 15, f"the next request waited {took:.1f} s"
        assert not sleeping(queued_marker), "the abandoned queued request ran"


def post_from(url: str, address: str, body: dict, into: dict) -> threading.Thread:
    """POST /run_code from the local `address` (a client of its own), in a thread;
    the answer lands in `into["answer"]`."""

    def post() -> None:
        transport = httpx.HTTPTransport(local_address=address)
        with httpx.Client(transport=transport, headers=AUTH, timeout=60) as client:
            into["answer"] = client.post(f"{url}/run_code", json=body)

    thread = threading.Thread(target=post)
    thread.start()
    return thread


def test_one_client_past_its_cap_gets_429_and_another_is_served() -> None:
    settings = Settings(token=TOKEN, workers=1, max_in_flight=1, max_waiting=16, max_per_client=2)
    slow = {"code": "import time\ntime.sleep(2)\nprint('slow')", "run_timeout": 10}
    with running(settings) as url:
        answers: list[dict] = [{}, {}]
        threads = [post_from(url, "127.0.0.1", slow, into) for into in answers]
        wait_for(
            lambda: health(url)["running"] + health(url)["waiting"] == 2, 20, "two requests open"
        )

        refused = post_from(url, "127.0.0.1", {"code": "print(1)"}, third := {})
        other = post_from(url, "127.0.0.2", {"code": "print(2)"}, fourth := {})
        refused.join(timeout=10)
        assert not refused.is_alive()
        answer = third["answer"]
        assert answer.status_code == 429, answer.text
        assert answer.headers["retry-after"] == "1"
        assert "2 per client" in answer.json()["detail"]

        for thread in [*threads, other]:
            thread.join(timeout=60)
            assert not thread.is_alive()
        assert [into["answer"].status_code for into in answers] == [200, 200]
        assert fourth["answer"].status_code == 200  # another client, never capped
        assert fourth["answer"].json()["run_result"]["stdout"] == "2\n"

        again = httpx.post(f"{url}/run_code", json={"code": "print(3)"}, headers=AUTH, timeout=60)
        assert again.status_code == 200  # the first client's requests were answered


def test_the_cap_is_an_option_of_codeloop_serve() -> None:
    from typer.testing import CliRunner

    from codeloop.cli import app

    shown = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "--max-per-client" in shown.output
    assert Settings().max_per_client == 64


# --- bad input: a 4xx, never a 5xx -----------------------------------------------------


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with running(Settings(token=TOKEN, workers=1)) as url:
        yield url


SECRET = "BODY-MARKER-7f3a"
CASE = '[{"input": "", "output": "1"}]'
SURROGATE_BODIES = [
    ("/run_code", f'{{"code": "print(1) # {SECRET} \\ud800"}}', "code"),
    ("/run_code", f'{{"code": "print(1) # {SECRET}", "stdin": "\\udfff"}}', "stdin"),
    ("/run_code", f'{{"code": "# {SECRET}", "files": {{"a\\ud800": "eA=="}}}}', "files"),
    ("/run_code", f'{{"code": "# {SECRET}", "fetch_files": ["\\udc80"]}}', "fetch_files"),
    (
        "/v1/check",
        f'{{"language": "python", "program": "# {SECRET}\\ud800", "cases": {CASE}}}',
        "program",
    ),
    (
        "/v1/check",
        f'{{"language": "python", "program": "# {SECRET}", '
        f'"cases": [{{"input": "\\ud800", "output": "1"}}]}}',
        "cases",
    ),
    (
        "/v1/check/batch",
        f'{{"requests": [{{"language": "python", "program": "# {SECRET}\\udbff", "cases": {CASE}}}]}}',
        "program",
    ),
]


@pytest.mark.parametrize(("path", "body", "field"), SURROGATE_BODIES)
def test_a_lone_surrogate_is_a_422_and_no_log_line_quotes_the_body(
    base: str, caplog: pytest.LogCaptureFixture, path: str, body: str, field: str
) -> None:
    caplog.set_level(logging.DEBUG)
    headers = {**AUTH, "content-type": "application/json"}
    answer = httpx.post(f"{base}{path}", content=body.encode(), headers=headers, timeout=60)
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert field in detail and "surrogate" in detail
    assert SECRET not in answer.text
    logged = "\n".join(logging.Formatter().format(record) for record in caplog.records)
    assert SECRET not in logged, logged[-2000:]
    assert "Traceback" not in logged, logged[-2000:]
    # and the server serves on
    after = httpx.post(f"{base}/run_code", json={"code": "print(5)"}, headers=AUTH, timeout=60)
    assert after.status_code == 200 and after.json()["run_result"]["stdout"] == "5\n"


X = base64.b64encode(b"x").decode()


@pytest.mark.parametrize(
    "files",
    [
        {"a": X, "a/b": X},  # a file and a folder at once
        {"/tmp/d/e": X, "/tmp/d": X},
        {"n" * 300: X},  # a name past NAME_MAX
        {"/tmp/" + "m" * 256: X},
        {"d/" * 2100 + "f": X},  # a path past the host's PATH_MAX once in scratch
    ],
    ids=["file-and-folder", "folder-then-file", "long-name", "long-name-in-tmp", "long-path"],
)
def test_an_input_file_that_cannot_be_written_is_a_422_naming_no_host_path(
    base: str, files: dict[str, str]
) -> None:
    body = {"code": "print(1)", "files": files}
    answer = httpx.post(f"{base}/run_code", json=body, headers=AUTH, timeout=60)
    assert answer.status_code == 422, answer.text[:600]
    assert "retry-after" not in answer.headers
    assert "scratch" not in answer.text and "/var/" not in answer.text
    assert "codeloop" not in answer.json()["detail"]


def test_the_longest_name_is_still_written_and_fetched(base: str) -> None:
    name = "z" * 255
    code = f"print(open('{name}').read())"
    body = {"code": code, "files": {name: X, "/tmp/q/" + name: X}, "fetch_files": [name]}
    answer = httpx.post(f"{base}/run_code", json=body, headers=AUTH, timeout=60)
    assert answer.status_code == 200, answer.text[:600]
    found = answer.json()
    assert found["run_result"]["stdout"] == "x\n" and found["files"] == {name: X}


# --- time limits: what was applied comes back ------------------------------------------


def limits_of(answer: httpx.Response) -> dict[str, float]:
    header = answer.headers["x-codeloop-limits"]
    return {key: float(value) for key, value in (part.split("=") for part in header.split("; "))}


@pytest.mark.parametrize("fast", [True, False], ids=["fast-lane", "fastapi-route"])
def test_the_limits_applied_come_back_with_the_start_up_allowance(fast: bool) -> None:
    settings = Settings(token=TOKEN, workers=1, fast_run_code=fast)
    asked = {"run_timeout": 0.1, "compile_timeout": 30, "memory_limit_MB": 512}
    with running(settings) as url, httpx.Client(headers=AUTH, timeout=120) as client:
        programs = {
            "python": ("print(1)", 0.1, 512),
            "javascript": ("console.log(1)", 0.3, 576),
            "java": (
                "public class Main { public static void main(String[] a) { "
                "System.out.println(1); } }",
                0.6,
                768,
            ),
        }
        for language, (code, run_s, memory) in programs.items():
            answer = client.post(
                f"{url}/run_code", json={"code": code, "language": language, **asked}
            )
            assert answer.status_code == 200, answer.text
            applied = limits_of(answer)
            assert applied["run_timeout"] == pytest.approx(run_s), language
            assert applied["compile_timeout"] == 30
            assert applied["memory_limit_MB"] == memory
        lowered = client.post(f"{url}/run_code", json={"code": "print(1)", "run_timeout": 999})
        assert limits_of(lowered)["run_timeout"] == 60  # the server's maximum
        none = client.post(f"{url}/run_code", json={"code": "print(1)", "memory_limit_MB": 0})
        assert limits_of(none)["memory_limit_MB"] == 1024  # the server's default


# --- a body left unread after an early answer -------------------------------------------


@pytest.mark.parametrize("parser", ["httptools", "h11"])
def test_a_body_left_unread_after_an_early_413_is_not_counted_as_headers(parser: str) -> None:
    """The 413 for a declared length goes out before the body is read; the body that
    then arrives is the old request's, not the next one's headers (it used to be
    counted as such: past 64 KiB, a 431 and the connection closed)."""
    settings = Settings(token=TOKEN, workers=1, max_body_bytes=64 * 1024)
    size = 200 * 1024
    with running(settings, http=parser) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            head = (
                f"POST /run_code HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json"
                f"\r\nauthorization: Bearer {TOKEN}\r\ncontent-length: {size}\r\n\r\n"
            )
            conn.sendall(head.encode())
            first = read_answer(conn)
            assert first.startswith(b"HTTP/1.1 413"), first[:200]
            conn.sendall(b"#" * size)  # the refused body, after its answer
            conn.sendall(f"GET /health HTTP/1.1\r\nhost: {host}\r\n\r\n".encode())
            second = read_answer(conn)
            assert second.startswith(b"HTTP/1.1 200"), second[:200]


def read_answer(conn: socket.socket) -> bytes:
    """One HTTP answer (its head and its content-length of body) from `conn`, or what
    came before the connection closed; bounded by the socket's timeout."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body
