"""The sandbox worker pool for an asyncio program (`codeloop serve`): the same worker
processes and JSON-line protocol as `pool.WorkerPool`, reached from the event loop
itself, without a thread per request.

Why: a server that hands each request to a thread which waits on a worker's pipe pays
for the hand-over twice (the submit, then the result's way back to the loop) and
leaves the worker idle in between. Here each worker has one driver task on the loop:
it writes a request, awaits the answer line, hands it to the waiting request and takes
the next queued request at once, so a worker is fed again before the previous answer
is even sent to its client.

The guarantees are `pool.WorkerPool`'s: a worker that dies during a request is started
again and the request sent once more; a second death is an environment error, never a
wrong answer. A request whose caller gave up (its task cancelled) is still finished by
its worker, so that the pipe never holds a half-read answer; one not yet sent is
dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from dataclasses import dataclass

from codeloop.sandbox.pool import (
    WORKER_MODULE,
    announce_backend,
    check_backend,
    checked,
    program_run,
    worker_env,
)
from codeloop.sandbox.request import Check, CheckRequest, ProgramRun, RunRequest

log = logging.getLogger("codeloop.sandbox")

LINE_LIMIT = 1 << 30
"""The longest answer line read from a worker (asyncio's default, 64 KiB, is shorter
than a program's allowed output)."""


@dataclass
class _Job:
    line: bytes
    answer: asyncio.Future[dict | None]


class AsyncWorkerPool:
    """`workers` sandbox worker processes fed from one asyncio queue; `start` and `stop`
    on the loop that will use it."""

    def __init__(self, backend: str, workers: int) -> None:
        check_backend(backend)
        if workers < 1:
            raise ValueError(f"a worker pool needs at least one worker, not {workers}")
        self.backend, self.size = backend, workers
        self.processes: list[asyncio.subprocess.Process | None] = [None] * workers
        self._jobs: asyncio.Queue[_Job] | None = None
        self._drivers: list[asyncio.Task[None]] = []
        self._taken: list[_Job | None] = [None] * workers
        """The job each worker holds now (answered None if the pool stops meanwhile)."""

    @property
    def queued(self) -> int:
        """Requests handed to the pool that no worker has taken yet."""
        return self._jobs.qsize() if self._jobs is not None else 0

    async def start(self) -> None:
        """Start every worker process (warm before the first request) and its driver."""
        announce_backend(self.backend)
        self._jobs = asyncio.Queue()
        for index in range(self.size):
            await self._spawn(index)
        self._drivers = [
            asyncio.create_task(self._drive(index), name=f"codeloop-sandbox-worker-{index}")
            for index in range(self.size)
        ]

    async def stop(self) -> None:
        """Stop the drivers and the workers; requests still queued get None (the
        environment error of a worker that is gone)."""
        for driver in self._drivers:
            driver.cancel()
        for driver in self._drivers:
            with contextlib.suppress(asyncio.CancelledError):
                await driver
        self._drivers = []
        left = [job for job in self._taken if job is not None]
        while self._jobs is not None and not self._jobs.empty():
            left.append(self._jobs.get_nowait())
        for job in left:
            if not job.answer.done():
                job.answer.set_result(None)
        for index in range(self.size):
            await self._end(index)

    async def call(self, message: dict) -> dict | None:
        """Send `message` to the next free worker and return its answer; None when the
        worker died twice (the second time freshly started)."""
        if self._jobs is None or not self._drivers:
            raise RuntimeError("the sandbox worker pool is not started (await start() first)")
        answer: asyncio.Future[dict | None] = asyncio.get_running_loop().create_future()
        self._jobs.put_nowait(_Job((json.dumps(message) + "\n").encode(), answer))
        return await answer

    async def run_program(self, request: RunRequest) -> ProgramRun:
        """`pool.run_program` from the event loop."""
        answer = await self.call({"op": "run", "request": request.model_dump(mode="json")})
        return program_run(answer, self.backend)

    async def check_one(self, request: CheckRequest) -> Check:
        """`pool.check_one` from the event loop."""
        answer = await self.call({"request": request.model_dump(mode="json")})
        return checked(answer, self.backend)

    # --- one worker ---------------------------------------------------------------------

    async def _spawn(self, index: int) -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            WORKER_MODULE,
            self.backend,
            str(index),
            env=worker_env(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT,
        )
        self.processes[index] = process
        return process

    async def _end(self, index: int) -> None:
        """Close worker `index`'s stdin (it exits at the end of its input), killing it
        if it does not within 10 s."""
        process, self.processes[index] = self.processes[index], None
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:  # reaped by the loop's child watcher whenever it exits
                log.warning("sandbox worker %d (pid %d) did not exit", index, process.pid)

    async def _exchange(self, index: int, line: bytes) -> dict | None:
        """One request to worker `index` (started again if it is gone) and its answer;
        None if the worker died meanwhile (then it is reaped)."""
        process = self.processes[index]
        if process is None or process.returncode is not None:
            await self._end(index)
            process = await self._spawn(index)
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(line)
            await process.stdin.drain()
            answer = await process.stdout.readline()
        except (OSError, RuntimeError, ValueError):
            # A closed pipe: OSError (asyncio's loop) or RuntimeError (uvloop's, once the
            # worker's exit closed it); ValueError: a line past LINE_LIMIT.
            answer = b""
        if not answer.endswith(b"\n"):
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await self._end(index)
            return None
        return json.loads(answer)

    async def _drive(self, index: int) -> None:
        assert self._jobs is not None
        while True:
            job = await self._jobs.get()
            if job.answer.done():  # its caller gave up before a worker took it
                continue
            self._taken[index] = job
            try:
                answer = await self._exchange(index, job.line)
                if answer is None:  # the worker died: once more, on a fresh one
                    answer = await self._exchange(index, job.line)
            except Exception:  # a worker that cannot be started: this request's fault
                # is the sandbox's (None, an environment error); the driver goes on
                log.exception("sandbox worker %d failed", index)
                with contextlib.suppress(Exception):
                    await self._end(index)
                answer = None
            self._taken[index] = None
            if not job.answer.done():
                job.answer.set_result(answer)
