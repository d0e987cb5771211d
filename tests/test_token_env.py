"""The serve token never reaches a sandbox worker's or a box's environment.

`codeloop serve` read CODELOOP_SERVE_TOKEN and left it in its environment, which every
sandbox worker inherited. Now workers start without it (`pool.worker_env`, both pools),
`codeloop serve` drops it once read, and a box starts from an empty environment
(bubblewrap's --clearenv). Read from /proc of the real worker processes and from inside
a real box.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from codeloop.sandbox import pool
from codeloop.sandbox.async_pool import AsyncWorkerPool
from codeloop.sandbox.request import RunRequest
from codeloop.serve.limits import TOKEN_ENV

pytestmark = pytest.mark.timeout(120)
SECRET = "s3cret-token-value-for-the-test"
PROBE = "print(open('/proc/self/environ', 'rb').read().decode())\n"


def _environ(pid: int) -> str:
    """The process's environment, once its exec has finished (read too early, during the
    exec, /proc gives an empty one: the test then failed 1 run in 3); at most 5 s."""
    import time

    deadline = time.monotonic() + 5.0
    while True:
        text = Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")
        if text or time.monotonic() > deadline:
            return text
        time.sleep(0.02)


def test_the_token_is_one_of_the_secrets_workers_never_get() -> None:
    assert TOKEN_ENV in pool.SECRET_ENV


def test_a_threaded_pool_worker_and_its_box_see_no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, SECRET)
    monkeypatch.setenv("CODELOOP_TEST_MARKER", "kept")
    worker = pool._Worker("bwrap", 31)
    try:
        process = worker._start()
        seen = _environ(process.pid)
        assert "CODELOOP_TEST_MARKER=kept" in seen  # the probe reads the right process
        assert SECRET not in seen and TOKEN_ENV not in seen
    finally:
        worker.stop()
    found = pool.run_program(RunRequest(language="python", program=PROBE), workers=1)
    assert found.run is not None and found.run.exit_code == 0, found.run
    assert "=" in found.run.stdout and SECRET not in found.run.stdout  # read, and clean


def test_an_event_loop_pool_worker_and_its_box_see_no_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV, SECRET)
    monkeypatch.setenv("CODELOOP_TEST_MARKER", "kept")

    async def scenario() -> tuple[list[str], str]:
        workers = AsyncWorkerPool("bwrap", 1)
        await workers.start()
        try:
            seen = [_environ(process.pid) for process in workers.processes if process]
            run = await workers.run_program(RunRequest(language="python", program=PROBE))
            assert run is not None and run.run is not None
            return seen, run.run.stdout
        finally:
            await workers.stop()

    seen, box = asyncio.run(scenario())
    assert seen and all("CODELOOP_TEST_MARKER=kept" in text for text in seen)
    assert all(SECRET not in text for text in seen)
    assert "=" in box and SECRET not in box
