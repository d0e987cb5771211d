"""The ASGI app of `codeloop serve` (`Front`): FastAPI routes (SandboxFusion's in
`fusion`, the native check in `native`, `/health`, `/metrics`) behind three ASGI layers
(outermost first): `Observe` (metrics, one JSON access line per request), `Guard` (the
bearer token, then the body's size and arrival time) and `fusion.FastRunCode` (a
well-formed `/run_code` answered without FastAPI's layers).

Sandbox work leaves the event loop through `Service`: a slot of the bounded queue
(`Gate`), then the next free sandbox worker, fed from the loop itself
(`sandbox.async_pool`; with `Settings.async_workers` False, a thread of the server's
own that waits on `sandbox.pool.run_program`, `check_one`), or with `Settings.cluster`
a Ray task on a node of that cluster, checked there by the node's own worker pool
(`sandbox.cluster.run_program`, `check_many`, from a thread). Programs only ever run in
those workers' sandboxes, never in this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse

from codeloop import __version__
from codeloop.sandbox import cluster, pool
from codeloop.sandbox.async_pool import AsyncWorkerPool, _Job
from codeloop.sandbox.request import Check, CheckRequest, ProgramRun, RunRequest
from codeloop.serve import fusion, native
from codeloop.serve.limits import ASGIApp, Gate, Guard, Receive, Refused, Scope, Send, Settings
from codeloop.serve.metrics import CONTENT_TYPE, Metrics, Observe

T = TypeVar("T")
log = logging.getLogger("codeloop.serve")


class StoppingWorkerPool(AsyncWorkerPool):
    """The event loop's worker pool, where a request whose caller gave up (its client
    went away: `limits.until_gone` cancelled it) also stops its run.

    `AsyncWorkerPool` lets a worker finish a request its caller abandoned, so that the
    pipe never holds a half-read answer; for a server that means a client that hung up
    still occupies a worker for the whole of its time limit, and the requests behind it
    wait. Here the worker running it is killed instead (its sandbox dies with it:
    `--die-with-parent`, `PR_SET_PDEATHSIG`), and the run is not sent again to a fresh
    worker, as a worker that died on its own would have it; the next request starts
    the worker again (the pool's own path for a dead worker)."""

    async def call(self, message: dict) -> dict | None:
        if self._jobs is None or not self._drivers:
            raise RuntimeError("the sandbox worker pool is not started (await start() first)")
        answer: asyncio.Future[dict | None] = asyncio.get_running_loop().create_future()
        job = _Job((json.dumps(message) + "\n").encode(), answer)
        self._jobs.put_nowait(job)
        try:
            return await answer
        except asyncio.CancelledError:
            self._stop(job)
            raise

    def _stop(self, job: _Job) -> None:
        """Kill the worker running `job`, if one took it (one not yet taken is skipped
        by the drivers: its answer is already cancelled)."""
        for index, taken in enumerate(self._taken):
            process = self.processes[index]
            if taken is job and process is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                log.info("sandbox worker %d stopped: its request's client went away", index)

    async def _exchange(self, index: int, line: bytes) -> dict | None:
        taken = self._taken[index]
        if taken is not None and taken.answer.cancelled():
            return None  # the caller is gone (its worker killed): not run again
        return await super()._exchange(index, line)


class Service:
    """The server's state: its settings, queue, metrics, and the sandbox workers it
    feeds or the threads that wait on them (started and stopped with the app's
    lifespan)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.gate = Gate(settings.slots, settings.max_waiting, settings.queue_timeout_s)
        self.executor: ThreadPoolExecutor | None = None
        self.workers: AsyncWorkerPool | None = None
        """This machine's workers, fed from the loop (`Settings.async_workers`)."""
        self.metrics = Metrics(
            {
                "codeloop_serve_queue_depth": (
                    "Requests waiting for a sandbox slot.",
                    lambda: self.gate.waiting,
                ),
                "codeloop_serve_in_flight": (
                    "Requests holding a sandbox slot (their program compiling or running).",
                    lambda: self.gate.running,
                ),
                "codeloop_serve_slots": (
                    "Sandbox slots: requests that may hold one at once.",
                    lambda: self.gate.slots,
                ),
            }
        )

    @contextlib.asynccontextmanager
    async def _slot(self, log: dict | None) -> AsyncIterator[None]:
        """A slot of the bounded queue for the block (the request's access line, `log`,
        gets the wait; a batch's items, `log` None, share one line)."""
        if self.executor is None:
            raise Refused(503, "the server is not running (its lifespan has not started)")
        async with self.gate.slot() as waited:
            if log is not None:
                log["queue_ms"] = round(waited * 1000, 1)
            yield

    async def _in_thread(self, log: dict | None, work: Callable[[], T]) -> T:
        """`work` in a thread of the server's pool once a slot is free. A thread cannot be
        stopped: when the request is cancelled (its client went away), its slot stays
        taken until the thread's work ends, so that slots never outnumber the threads
        and workers that serve them."""
        async with self._slot(log):
            done = asyncio.get_running_loop().run_in_executor(self.executor, work)
            try:
                return await asyncio.shield(done)
            except asyncio.CancelledError:
                await asyncio.wait({done})
                raise

    async def run_program(self, log: dict, wanted: RunRequest) -> ProgramRun:
        settings = self.settings
        if self.workers is not None:
            async with self._slot(log):
                return await self.workers.run_program(wanted)
        if settings.cluster:
            work = functools.partial(
                cluster.run_program, wanted, address=settings.cluster, backend=settings.backend
            )
        else:
            work = functools.partial(
                pool.run_program, wanted, workers=settings.workers, backend=settings.backend
            )
        return await self._in_thread(log, work)

    async def check(self, request: Request | None, wanted: CheckRequest) -> Check:
        settings = self.settings
        log = request.state.log if request else None
        if self.workers is not None:
            async with self._slot(log):
                return await self.workers.check_one(wanted)
        if settings.cluster:
            address, backend = settings.cluster, settings.backend

            def work() -> Check:
                checks = cluster.check_many([wanted], address=address, backend=backend, chunk=1)
                return checks[0]

        else:
            work = functools.partial(
                pool.check_one, wanted, workers=settings.workers, backend=settings.backend
            )
        return await self._in_thread(log, work)


async def _refused(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, Refused)
    headers = {"Retry-After": "1"} if error.status in (503, 504) else None
    return JSONResponse({"detail": error.detail}, status_code=error.status, headers=headers)


async def _invalid(request: Request, error: Exception) -> JSONResponse:
    """A body that is not JSON: 400; JSON that is not the request: 422. Both say why in
    one line (`detail`), with pydantic's list (`errors`)."""
    assert isinstance(error, RequestValidationError)
    errors = list(error.errors())
    kind = request.headers.get("content-type", "")
    if errors and errors[0].get("loc") == ("body",) and "json" not in kind:
        detail = f"send the body as JSON, with Content-Type: application/json (not {kind!r})"
        return JSONResponse({"detail": detail}, status_code=415)
    if any(item.get("type") == "json_invalid" for item in errors):
        found = next(item for item in errors if item.get("type") == "json_invalid")
        reason = (found.get("ctx") or {}).get("error", found.get("msg", ""))
        detail = f"the body is not valid JSON: {reason}"
        status = 400
    else:
        parts = []
        for item in errors[:5]:
            where = ".".join(str(part) for part in item.get("loc", ())[1:]) or "body"
            parts.append(f"{where}: {item.get('msg', 'invalid')}")
        detail = "; ".join(parts)
        status = 422
    # Without pydantic's `input`: an answer never echoes the request (its code) back.
    listed = [{key: item[key] for key in ("type", "loc", "msg") if key in item} for item in errors]
    found = _text({"detail": detail, "errors": jsonable_encoder(listed)})
    return JSONResponse(found, status_code=status)


def _text(value: T) -> T:
    """`value` with every lone surrogate in its strings written as `\\udXXX`: a message
    may quote a character of the body (pydantic's do), and one that cannot be encoded
    as UTF-8 would turn the refusal itself into a 500."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")  # type: ignore[return-value]
    if isinstance(value, dict):
        return {_text(key): _text(item) for key, item in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [_text(item) for item in value]  # type: ignore[return-value]
    return value


def create_app(settings: Settings) -> Front:
    """The app for `settings`; serve it with uvicorn (`codeloop serve`), which runs its
    lifespan: the sandbox threads start with it and are waited for at shutdown."""
    service = Service(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        service.executor = ThreadPoolExecutor(settings.slots, thread_name_prefix="codeloop-serve")
        if settings.async_workers and not settings.cluster:
            service.workers = StoppingWorkerPool(
                settings.backend, settings.workers or pool.default_workers()
            )
            await service.workers.start()
        if settings.cluster:  # once, before any request thread would race to connect
            await asyncio.get_running_loop().run_in_executor(
                service.executor, cluster.connect_ray, settings.cluster
            )
        log.info(
            "sandbox: backend %s, %s, %d slots, %d may wait %g s; auth %s",
            settings.backend,
            f"Ray cluster {settings.cluster}"
            if settings.cluster
            else f"{settings.workers or 'one per core'} workers",
            settings.slots,
            settings.max_waiting,
            settings.queue_timeout_s,
            "on" if settings.token else "OFF (loopback only)",
        )
        try:
            yield
        finally:
            executor, service.executor = service.executor, None
            executor.shutdown(wait=True, cancel_futures=True)
            if service.workers is not None:
                workers, service.workers = service.workers, None
                await workers.stop()
            log.info("drained: no request in the sandbox")

    app = FastAPI(
        title="codeloop serve",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = service
    app.add_exception_handler(Refused, _refused)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.include_router(fusion.routes())
    app.include_router(native.routes())

    @app.get("/health", tags=["service"])
    async def health() -> dict:
        return {
            "status": "ok",
            "version": __version__,
            "backend": settings.backend,
            "cluster": settings.cluster,
            "slots": service.gate.slots,
            "running": service.gate.running,
            "waiting": service.gate.waiting,
        }

    @app.get("/metrics", tags=["service"])
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(service.metrics.render(), media_type=CONTENT_TYPE)

    return Front(app, service)


class Front:
    """The ASGI app uvicorn serves: `Observe`, `Guard` and (with `fast_run_code`)
    `fusion.FastRunCode` around the FastAPI app `api`, outside FastAPI's own middleware
    stack, so that a well-formed `/run_code` passes through none of FastAPI's layers
    (its error, telemetry and body-limit wrappers, the router); every other request goes
    on into `api`, which also runs the lifespan."""

    def __init__(self, api: FastAPI, service: Service) -> None:
        self.api = api
        self.service = service
        inner: ASGIApp = api
        self.layers: tuple[type, ...] = (Observe, Guard)
        """The layers around `api`, outermost first."""
        if service.settings.fast_run_code:
            inner = fusion.FastRunCode(inner, service)
            self.layers += (fusion.FastRunCode,)
        self._chain = Observe(Guard(inner, service.settings), service.metrics)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._chain(scope, receive, send)
