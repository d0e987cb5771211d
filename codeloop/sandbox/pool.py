"""A pool of sandbox worker processes that keeps every core busy.

Each worker is a fresh `python -m codeloop.sandbox.worker` process (never a fork
of the caller, which may hold model threads), talking JSON lines over a pipe.
`check_program` and `check_many` send requests here: nothing model-written runs
in the calling process. A worker that dies during a check (killed, out of memory,
a harness crash) is replaced and the check runs once more on the fresh worker; a
check whose second worker dies too is reported as an environment error, never as
a wrong answer. `check_many(..., fresh=True)` restarts each worker a batch uses
before its first check: the re-run of a check that met an environment error.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from codeloop.sandbox.request import Check, CheckRequest, ProgramRun, RunRequest, Step

WORKER_MODULE = "codeloop.sandbox.worker"
SECRET_ENV = ("CODELOOP_SERVE_TOKEN",)
"""Variables a sandbox worker never inherits (`worker_env`): `codeloop serve`'s bearer
token. Boxes start from an empty environment anyway (bubblewrap's --clearenv); a worker
is the host-side process that starts them, and needs no secret to do it."""


def worker_env() -> dict[str, str]:
    """The environment a worker process starts with: this process's, less SECRET_ENV."""
    return {key: value for key, value in os.environ.items() if key not in SECRET_ENV}


"""What every worker process runs (`python -m WORKER_MODULE`)."""

WORKER_DIED = (
    "sandbox worker died during the {what} (twice, the second time on a freshly started worker)"
)


class Interrupted(Exception):
    """A batch stopped early because its `stop` callback asked; `done` holds what finished.

    Checks already running are finished (a verdict is never cut short), no new one
    starts, so a caller can save `done` and continue from there later.
    """

    def __init__(self, done: dict[int, Check]) -> None:
        super().__init__(f"sandbox batch stopped on request after {len(done)} checks")
        self.done = done


_pools: dict[tuple[str, int], WorkerPool] = {}
_announced: set[str] = set()
_lock = threading.Lock()


class _Worker:
    def __init__(self, backend: str, index: int) -> None:
        self.backend, self.index = backend, index
        self.process: subprocess.Popen[str] | None = None
        self.lock = threading.Lock()
        """Held for one exchange, so that callers on two threads never share its pipe."""

    def _start(self) -> subprocess.Popen[str]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-m", WORKER_MODULE, self.backend, str(self.index)],
                env=worker_env(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
        return self.process

    def restart(self) -> None:
        """Replace the worker process with a freshly started one."""
        with self.lock:
            self.stop()
            self._start()

    def call(self, message: dict) -> dict | None:
        with self.lock:
            process = self._start()
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(json.dumps(message) + "\n")
                process.stdin.flush()
                line = process.stdout.readline()
            except (BrokenPipeError, OSError):
                line = ""
            if not line:
                self.stop()
                return None
            return json.loads(line)

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.stdin.close()  # type: ignore[union-attr]
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe is not None and not pipe.closed:
                    with contextlib.suppress(OSError):  # a dead worker's pipe may not flush
                        pipe.close()
            self.process = None


class WorkerPool:
    """`workers` sandbox worker processes fed from one queue."""

    def __init__(self, backend: str, workers: int) -> None:
        self.backend = backend
        self.workers = [_Worker(backend, index) for index in range(workers)]
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        for worker in self.workers:
            self._idle.put(worker)

    def run(
        self,
        requests: list[CheckRequest],
        on_done: Callable[[int, Check], None] | None = None,
        stop: Callable[[], bool] | None = None,
        fresh: bool = False,
    ) -> list[Check]:
        """Check `requests` over the workers; results in order.

        A worker that dies during a check is restarted and the check runs once more;
        only a second death is an environment error. With `fresh`, each worker this
        batch uses is restarted before its first check.
        """
        results: list[Check | None] = [None] * len(requests)
        todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for index in leaders_first(requests):
            todo.put(index)
        done_lock = threading.Lock()
        stopped = threading.Event()

        def drive(worker: _Worker) -> None:
            if fresh:
                worker.restart()
            while True:
                if stop is not None and (stopped.is_set() or stop()):
                    stopped.set()
                    return
                try:
                    index = todo.get_nowait()
                except queue.Empty:
                    return
                message = {"request": requests[index].model_dump(mode="json")}
                answer = worker.call(message)
                if answer is None:  # the worker died (call() dropped it): once more, fresh
                    answer = worker.call(message)
                if answer is None:
                    check = Check(
                        status="environment_error",
                        backend=self.backend,
                        feedback=WORKER_DIED.format(what="check"),
                    )
                else:
                    check = Check.model_validate(answer["check"])
                results[index] = check
                if on_done is not None:
                    with done_lock:
                        on_done(index, check)

        threads = [
            threading.Thread(target=drive, args=(worker,), daemon=True)
            for worker in self.workers[: max(1, len(requests))]
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if stopped.is_set() and any(result is None for result in results):
            raise Interrupted({i: check for i, check in enumerate(results) if check is not None})
        return [result for result in results if result is not None]

    def call(self, message: dict) -> dict | None:
        """Send one message to a worker no other `call` holds (waiting for one to be
        free) and return its answer: safe from many threads at once, as `codeloop serve`
        calls it. A worker that dies is restarted and the message sent once more; None
        when the fresh worker dies too."""
        worker = self._idle.get()
        try:
            answer = worker.call(message)
            if answer is None:
                answer = worker.call(message)
            return answer
        finally:
            self._idle.put(worker)

    def describe(self) -> str:
        answer = self.workers[0].call({"op": "describe"})
        return answer["describe"] if answer else "sandbox worker failed to start"

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()


def leaders_first(requests: list[CheckRequest]) -> list[int]:
    """The order to start `requests` in: the first answer to each function task, then
    the other answers (each group in its given order).

    A task's test half is compiled by the check of its first answer and loaded from
    the compile cache by every later one (`TestBuild.trusted`): with the leaders
    first, the test halves are built before a task's answers are spread over the
    workers, instead of two workers waiting on one build. Stdio checks share no
    build, so each is its own leader.
    """
    seen: set[tuple[str, str, str, str | None]] = set()
    leaders, followers = [], []
    for index, request in enumerate(requests):
        if request.test is None:
            leaders.append(index)
            continue
        task = (request.language, request.test, request.prompt, request.entry_point)
        (followers if task in seen else leaders).append(index)
        seen.add(task)
    return leaders + followers


def worker_pids(root: int) -> list[int]:
    """The sandbox worker processes below process `root` (a pool's owner: this process,
    or a `codeloop serve`), from /proc: what fault tests and benches kill."""
    from codeloop.sandbox.reaping import descendants

    found = []
    for pid in descendants(root):
        with contextlib.suppress(OSError):
            if WORKER_MODULE.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
    return found


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)))


def get_pool(backend: str = "bwrap", workers: int | None = None) -> WorkerPool:
    """The shared pool for (backend, workers), started on first use."""
    check_backend(backend)
    key = (backend, workers or default_workers())
    with _lock:
        created = key not in _pools
        if created:
            _pools[key] = WorkerPool(*key)
    if created:
        announce_backend(backend)
    return _pools[key]


def check_backend(backend: str) -> None:
    """Refuse a sandbox backend this module does not have, before anything starts."""
    if backend not in ("bwrap", "process"):
        raise ValueError(f"unknown sandbox backend {backend!r}; choose bwrap or process")


def announce_backend(backend: str) -> None:
    """Say once per process on stderr that `backend` is weaker than bwrap (if it is);
    called when a pool starts, not per check."""
    with _lock:
        if backend == "bwrap" or backend in _announced:
            return
        _announced.add(backend)
    print(
        f"codeloop sandbox: WEAKER backend '{backend}' chosen in the config: programs "
        "run without namespace isolation (rlimits, uid and cgroups only)",
        file=sys.stderr,
    )


def describe(backend: str = "bwrap") -> str:
    """How the sandbox isolates programs here, as a real worker reports it."""
    return get_pool(backend, 1).describe()


def check_many(
    requests: Iterable[CheckRequest],
    *,
    workers: int | None = None,
    backend: str = "bwrap",
    on_done: Callable[[int, Check], None] | None = None,
    stop: Callable[[], bool] | None = None,
    fresh: bool = False,
) -> list[Check]:
    """Check every request in this machine's worker pool; results in the order of
    `requests` (`sandbox.check_many` routes a batch here or to a Ray cluster).

    `stop` is asked before each check starts; once it answers True no further check
    starts and `Interrupted` is raised with the checks that finished. With `fresh`,
    the workers the batch uses are restarted first.
    """
    return get_pool(backend, workers).run(list(requests), on_done, stop, fresh=fresh)


def check_one(
    request: CheckRequest, *, workers: int | None = None, backend: str = "bwrap"
) -> Check:
    """Check one request on a free worker of this machine's pool; unlike `check_many`,
    safe to call from many threads at once (each call holds its worker alone)."""
    answer = get_pool(backend, workers).call({"request": request.model_dump(mode="json")})
    return checked(answer, backend)


def checked(answer: dict | None, backend: str) -> Check:
    """The Check in a worker's answer to a check; None (the worker died twice): an
    environment error."""
    if answer is None:
        return Check(
            status="environment_error", backend=backend, feedback=WORKER_DIED.format(what="check")
        )
    return Check.model_validate(answer["check"])


def run_program(
    request: RunRequest, *, workers: int | None = None, backend: str = "bwrap"
) -> ProgramRun:
    """Run one program once on one stdin in the sandbox, on a free worker of this
    machine's pool, and return what it printed (`Sandbox.run_program`); safe to call
    from many threads at once."""
    message = {"op": "run", "request": request.model_dump(mode="json")}
    return program_run(get_pool(backend, workers).call(message), backend)


def program_run(answer: dict | None, backend: str) -> ProgramRun:
    """The ProgramRun in a worker's answer to a run; None (the worker died twice): an
    environment error."""
    if answer is None:
        died = Step(status="environment_error", stderr=WORKER_DIED.format(what="run"))
        return ProgramRun(run=died, backend=backend)
    return ProgramRun.model_validate(answer["run"])


def shutdown() -> None:
    """Stop every worker (also done at exit)."""
    with _lock:
        for pool in _pools.values():
            pool.stop()
        _pools.clear()


atexit.register(shutdown)
