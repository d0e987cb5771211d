"""codeloop's own API: `POST /v1/check` takes a `CheckRequest` (stdio cases with their
checker, or a function test kept apart from the solution) and answers the `Check` that
`codeloop check` and `sandbox.check_many` give for it, as JSON, with `passed`.

Unlike `/run_code`, the expected outputs and the test never reach the program: the
verdict is the sandbox's, not the client's reading of what the program printed.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from codeloop.config import SandboxLimits
from codeloop.sandbox.request import CheckRequest
from codeloop.serve.limits import Refused, Settings, check_size

MAX_OUTPUT_KIB = 64 * 1024
MAX_PROCESSES = 512
MAX_WORKDIR_MIB = 1024


def within_limits(request: CheckRequest, settings: Settings) -> None:
    """`Refused` (413 for sizes, 422 for limits) for a check this server does not take.
    Limits are never lowered: that would change the verdict the client asked for."""
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
        return {**verdict.model_dump(mode="json"), "passed": verdict.passed}

    return router
