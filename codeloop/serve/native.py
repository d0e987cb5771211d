"""codeloop's own API: `POST /v1/check` takes a `CheckRequest` (stdio cases with their
checker, or a function test kept apart from the solution) and answers the `Check` that
`codeloop check` and `sandbox.check_many` give for it, as JSON, with `passed`.

`POST /v1/check/batch` takes `{"requests": [CheckRequest, ...]}` and streams one JSON
line per check as each finishes (NDJSON, in finishing order, each with its `index`): a
`Check` with `passed`, or `{"index", "error": {"status", "detail"}}` for a check the
server could not take in time (504: send it again). A batch is validated whole before
any check starts; at most `slots` of its checks wait for the sandbox at once, so one
batch never fills the queue other clients wait in. A client that goes away stops the
checks of its batch that have not started.

Unlike `/run_code`, the expected outputs and the test never reach the program: the
verdict is the sandbox's, not the client's reading of what the program printed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from codeloop.config import SandboxLimits
from codeloop.sandbox.languages import HOMES
from codeloop.sandbox.request import Check, CheckRequest
from codeloop.serve.limits import Refused, Settings, check_size, check_text

log = logging.getLogger("codeloop.serve")

MAX_OUTPUT_KIB = 64 * 1024
MAX_PROCESSES = 512
MAX_WORKDIR_MIB = 1024


def within_limits(request: CheckRequest, settings: Settings) -> None:
    """`Refused` (413 for sizes, 422 for limits) for a check this server does not take.
    Limits are never lowered: that would change the verdict the client asked for."""
    check_text(request.model_dump())
    check_size("the program", request.program, settings.max_code_bytes)
    check_size("the test", request.test, settings.max_code_bytes)
    check_size("the prompt", request.prompt, settings.max_code_bytes)
    if len(request.cases) > settings.max_cases:
        raise Refused(
            413, f"the check has {len(request.cases)} cases; this server takes {settings.max_cases}"
        )
    for index, case in enumerate(request.cases):
        check_size(f"case {index}'s input", case.input, settings.max_stdin_bytes)
        check_size(f"case {index}'s output", case.output, settings.max_stdin_bytes)
    limits = request.limits or SandboxLimits()
    maxima = {
        "time_s": settings.max_run_timeout_s,
        "compile_time_s": settings.max_compile_timeout_s,
        "memory_mib": settings.max_memory_mib,
        "output_kib": MAX_OUTPUT_KIB,
        "processes": MAX_PROCESSES,
        "workdir_mib": MAX_WORKDIR_MIB,
    }
    for field, most in maxima.items():
        if getattr(limits, field) > most:
            raise Refused(
                422, f"limits.{field} {getattr(limits, field)} is above this server's {most}"
            )
    runs = max(1, len(request.cases))
    if runs * limits.time_s > settings.max_check_s:
        raise Refused(
            422,
            f"the check may run {runs} x {limits.time_s:g} s; this server allows "
            f"{settings.max_check_s:g} s per check",
        )


class CheckBatch(BaseModel):
    """The body of `/v1/check/batch`."""

    model_config = ConfigDict(extra="forbid")
    requests: list[CheckRequest] = Field(min_length=1)


NOTES = {home.language.name: home.failure_note for home in HOMES if home.failure_note}
"""Each language's note for a failed check (`Home.failure_note`)."""


def _answer(verdict: Check, language: str) -> dict[str, Any]:
    """The check as JSON, with `passed`, and a `message` where the failure names what this
    server lacks, as the language's home words it (Python's optional scientific runtime:
    `make science`); the verdict itself is the sandbox's, unchanged."""
    answer = {**verdict.model_dump(mode="json"), "passed": verdict.passed}
    note = NOTES.get(language)
    message = note(verdict.feedback) if note is not None and not verdict.passed else ""
    if message:
        answer["message"] = message
    return answer


def batch_within_limits(body: CheckBatch, settings: Settings) -> None:
    """The whole batch refused (413/422) when it or any of its checks is over a limit,
    before any check runs: nothing half-done to account for."""
    if len(body.requests) > settings.max_batch:
        count = len(body.requests)
        raise Refused(413, f"the batch has {count} checks; this server takes {settings.max_batch}")
    for index, item in enumerate(body.requests):
        try:
            within_limits(item, settings)
        except Refused as refused:
            raise Refused(refused.status, f"requests.{index}: {refused.detail}") from None


async def _batch_lines(service: Any, requests: list[CheckRequest]) -> AsyncIterator[str]:
    """One NDJSON line per check, as each finishes; the unstarted ones are cancelled when
    the stream is closed early (the client went away)."""
    finished: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    own = asyncio.Semaphore(service.gate.slots)

    async def one(index: int, wanted: CheckRequest) -> None:
        try:
            async with own:
                verdict = await service.check(None, wanted)
            environment = verdict.status == "environment_error"
            service.metrics.verdict("/v1/check/batch", verdict.status, environment)
            line = {"index": index, **_answer(verdict, wanted.language)}
        except Refused as refused:
            line = {"index": index, "error": {"status": refused.status, "detail": refused.detail}}
        except Exception as error:  # a bug, not the program's fault: never a verdict
            log.exception("batch check %d failed", index)
            line = {"index": index, "error": {"status": 500, "detail": f"server error: {error}"}}
        await finished.put(line)

    tasks = [asyncio.create_task(one(i, wanted)) for i, wanted in enumerate(requests)]
    try:
        for _ in tasks:
            yield json.dumps(await finished.get()) + "\n"
    finally:
        for task in tasks:
            task.cancel()


def routes() -> APIRouter:
    """The native endpoints (through `app.state.service`, as `fusion.routes`)."""
    router = APIRouter(tags=["codeloop"])

    @router.post("/v1/check")
    async def check(body: CheckRequest, request: Request) -> dict:
        service = request.app.state.service
        within_limits(body, service.settings)
        request.state.log.update(language=body.language, cases=len(body.cases))
        verdict = await service.check(request, body)
        environment = verdict.status == "environment_error"
        service.metrics.verdict("/v1/check", verdict.status, environment)
        request.state.log.update(outcome=verdict.status)
        return _answer(verdict, body.language)

    @router.post("/v1/check/batch")
    async def check_batch(body: CheckBatch, request: Request) -> StreamingResponse:
        service = request.app.state.service
        batch_within_limits(body, service.settings)
        request.state.log.update(batch=len(body.requests))
        lines = _batch_lines(service, body.requests)
        return StreamingResponse(lines, media_type="application/x-ndjson")

    return router
