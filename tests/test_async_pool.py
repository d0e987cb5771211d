"""`sandbox.async_pool`: the worker pool `codeloop serve` feeds from its event loop.

Real workers and the real sandbox. What it must keep of the thread pool's guarantees:
the same answers; a caller that gives up never leaves a half-read answer in a worker's
pipe for the next request to read; a worker killed mid-request is started again and
the request answered; a request left when the pool stops is an environment error,
never a wrong answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import pytest

from codeloop.config import SandboxLimits
from codeloop.sandbox import CheckRequest, check_many, run_program
from codeloop.sandbox.async_pool import AsyncWorkerPool
from codeloop.sandbox.pool import worker_pids
from codeloop.sandbox.request import RunRequest

pytestmark = pytest.mark.timeout(120)

LIMITS = SandboxLimits(time_s=10.0)


def program(text: str, stdin: str = "") -> RunRequest:
    return RunRequest(language="python", program=text, stdin=stdin, limits=LIMITS)


async def started(workers: int) -> AsyncWorkerPool:
    pool = AsyncWorkerPool("bwrap", workers)
    await pool.start()
    return pool


def test_it_answers_as_the_thread_pool() -> None:
    echo = program("print(input()[::-1])", "olleh\n")
    check = CheckRequest(
        language="python",
        program="a, b = map(int, input().split())\nprint(a + b)",
        cases=[{"input": "2 3\n", "output": "5\n"}, {"input": "1 1\n", "output": "3\n"}],
        every_case=True,
    )

    async def both() -> tuple:
        pool = await started(2)
        try:
            return await asyncio.gather(pool.run_program(echo), pool.check_one(check))
        finally:
            await pool.stop()

    ran, checked = asyncio.run(both())
    assert ran.run.stdout == "hello\n"
    alone = run_program(echo)
    for step in ("status", "exit_code", "stdout", "stderr"):
        assert getattr(ran.run, step) == getattr(alone.run, step)
    assert checked.status == "wrong_answer"
    assert checked.status == check_many([check])[0].status
    assert checked.cases_passed == 1


def test_a_caller_that_gives_up_leaves_no_answer_for_the_next() -> None:
    """One worker: the first request is cancelled while its program sleeps; the second
    gets its own output, not the first one's, and the first program did finish."""

    async def go() -> tuple[str, str]:
        pool = await started(1)
        try:
            slow = asyncio.create_task(
                pool.run_program(program("import time\ntime.sleep(1)\nprint('first')"))
            )
            await asyncio.sleep(0.3)
            assert pool.queued == 0, "the slow request should be on the worker by now"
            slow.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await slow
            after = await pool.run_program(program("print('second')"))
            again = await pool.run_program(program("print('third')"))
            return after.run.stdout, again.run.stdout
        finally:
            await pool.stop()

    assert asyncio.run(go()) == ("second\n", "third\n")


def test_a_worker_killed_mid_request_is_replaced_and_the_request_answered() -> None:
    async def go() -> tuple[str, str, int]:
        pool = await started(1)
        try:
            running = asyncio.create_task(
                pool.run_program(program("import time\ntime.sleep(0.6)\nprint('done')"))
            )
            await asyncio.sleep(0.3)
            first = pool.processes[0]
            assert first is not None and first.pid in worker_pids(os.getpid())
            os.kill(first.pid, signal.SIGKILL)
            answer = await running
            fresh = pool.processes[0]
            assert fresh is not None and fresh.pid != first.pid
            return answer.run.status, answer.run.stdout, first.returncode
        finally:
            await pool.stop()

    status, stdout, exit_code = asyncio.run(go())
    assert (status, stdout) == ("finished", "done\n")
    assert exit_code is not None  # the killed worker was reaped


def test_what_is_left_when_the_pool_stops_is_an_environment_error() -> None:
    async def go() -> tuple[str, str]:
        pool = await started(1)
        running = asyncio.create_task(pool.run_program(program("import time\ntime.sleep(5)")))
        queued = asyncio.create_task(
            pool.check_one(
                CheckRequest(
                    language="python", program="print(1)", cases=[{"input": "", "output": "1\n"}]
                )
            )
        )
        await asyncio.sleep(0.3)
        pid = pool.processes[0].pid  # type: ignore[union-attr]
        await pool.stop()
        assert pool.processes == [None]
        assert pid not in worker_pids(os.getpid())
        return (await running).run.status, (await queued).status

    assert asyncio.run(go()) == ("environment_error", "environment_error")


def test_bad_settings_are_refused_before_anything_starts() -> None:
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        AsyncWorkerPool("docker", 2)
    with pytest.raises(ValueError, match="at least one worker"):
        AsyncWorkerPool("bwrap", 0)
    with pytest.raises(RuntimeError, match="not started"):
        asyncio.run(AsyncWorkerPool("bwrap", 1).call({"op": "describe"}))


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_worker_whose_pipe_is_gone_is_replaced_on_either_loop(loop: str) -> None:
    """uvloop raises RuntimeError (not OSError) on writing to a pipe its worker's exit
    closed; the request must still be answered, and the worker's driver live on."""

    async def go() -> list[str]:
        pool = await started(1)
        try:
            outputs = []
            for text in ("one", "two", "three"):
                worker = pool.processes[0]
                assert worker is not None and worker.stdin is not None
                worker.stdin.close()  # its next request finds the pipe closed
                await asyncio.sleep(0.2)
                async with asyncio.timeout(60):  # a dead driver answers never: fail, not hang
                    answer = await pool.run_program(program(f"print('{text}')"))
                outputs.append(answer.run.stdout)
            assert not any(driver.done() for driver in pool._drivers)
            return outputs
        finally:
            await pool.stop()

    if loop == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        found = uvloop.run(go())
    else:
        found = asyncio.run(go())
    assert found == ["one\n", "two\n", "three\n"]
