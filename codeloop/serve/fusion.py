"""SandboxFusion's API (bytedance/SandboxFusion, `sandbox/server/sandbox_api.py`):
`POST /run_code` and `GET /v1/ping`, shaped so that its clients (verl's sandbox_fusion
reward and tool, ROLL, LazyLLM) work unchanged.

A request runs one program once on one stdin in codeloop's sandbox
(`sandbox.run_program`), built as SandboxFusion builds it (Java's `Main.java` run with
`-ea`, Rust as a debug build); the answer carries SandboxFusion's status strings and
null rules:

- `compile_result`: null for languages without a compile step; else how the compile
  ended. `run_result`: null when the compile failed or timed out.
- A step's `status`: `Finished` (it exited: `return_code`, `stdout`, `stderr` set),
  `TimeLimitExceeded` (`return_code` null, what it printed so far kept), `Error` (the
  sandbox could not carry it out: only `stderr`, saying why).
- The top `status`: `SandboxError` when a step is `Error` (its `message` says why);
  else `Failed` when a step timed out or exited non-zero; else `Success`.
- `execution_time`: seconds the step itself ran, never the time queued.
- `files` (path -> base64) are put in place before the program runs, and `fetch_files`
  come back in the answer's `files` when the run finished (`sandbox.run_files`: paths
  relative to the working folder or absolute under /work or /tmp, no `..`; 64 files
  each way, 8 MiB of input files at most). A run whose input files could not be put in
  place is a `SandboxError`, never the program's failure.
"""

from __future__ import annotations

from typing import Literal, Protocol

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codeloop.config import SandboxLimits
from codeloop.sandbox import run_files
from codeloop.sandbox.languages import LANGUAGES as HOME_LANGUAGES
from codeloop.sandbox.languages import home
from codeloop.sandbox.request import ProgramRun, RunRequest, Step
from codeloop.serve.limits import (
    ASGIApp,
    Message,
    Receive,
    Refused,
    Scope,
    Send,
    Settings,
    check_size,
    check_text,
    send_json,
)
from codeloop.serve.metrics import Metrics


class Service(Protocol):
    """What `/run_code` needs of the app's `app.Service` (named here, not imported:
    `app` imports this module)."""

    settings: Settings
    metrics: Metrics

    async def run_program(self, log: dict, wanted: RunRequest) -> ProgramRun: ...


LANGUAGES: dict[str, str] = {
    name: language.name
    for language in HOME_LANGUAGES.values()
    for name in (language.name, *language.aliases)
}
"""SandboxFusion's language names (and the aliases its clients send) -> codeloop's, from
each language home's name and `aliases`."""


class RunCodeRequest(BaseModel):
    """SandboxFusion's `RunCodeRequest`; fields it has that are not listed are ignored."""

    model_config = ConfigDict(extra="ignore")
    code: str
    language: str | None = "python"  # SandboxFusion's own default, part of its API
    stdin: str | None = None
    compile_timeout: float = Field(10, gt=0)
    run_timeout: float = Field(10, gt=0)
    memory_limit_MB: int | None = None  # SandboxFusion's spelling
    memory_limit_mb: int | None = None
    files: dict[str, str | None] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)


class CommandRunResult(BaseModel):
    status: Literal["Finished", "Error", "TimeLimitExceeded"]
    execution_time: float | None = None
    return_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None


class RunCodeResponse(BaseModel):
    status: Literal["Success", "Failed", "SandboxError"]
    message: str
    compile_result: CommandRunResult | None = None
    run_result: CommandRunResult | None = None
    executor_pod_name: str | None = None
    files: dict[str, str] = Field(default_factory=dict)


def run_request(body: RunCodeRequest, settings: Settings) -> RunRequest:
    """The sandbox's request for `body`, within this server's limits; `Refused` (4xx) for
    what it cannot serve. Timeouts and memory above the server's maxima are lowered to
    them; a memory limit of 0 or less (SandboxFusion: none) is the server's default."""
    check_text(body.model_dump())
    name = body.language or "python"
    language = LANGUAGES.get(name)
    if language is None:
        known = ", ".join(LANGUAGES)
        raise Refused(422, f"language {name!r} is not served here; known: {known}")
    check_size("the code", body.code, settings.max_code_bytes)
    check_size("stdin", body.stdin, settings.max_stdin_bytes)
    asked = body.memory_limit_MB if body.memory_limit_MB is not None else body.memory_limit_mb
    memory = asked if asked is not None and asked > 0 else settings.default_memory_mib
    limits = SandboxLimits(
        time_s=min(body.run_timeout, settings.max_run_timeout_s),
        compile_time_s=min(body.compile_timeout, settings.max_compile_timeout_s),
        memory_mib=min(memory, settings.max_memory_mib),
    )
    try:
        wanted = RunRequest(
            language=language,
            program=body.code,
            stdin=body.stdin or "",
            limits=limits,
            debug=True,
            # SandboxFusion writes no file for an empty or null content
            files={path: content for path, content in body.files.items() if content},
            fetch_files=body.fetch_files,
        )
        run_files.check_places(list(wanted.files))
    except ValidationError as error:
        raise Refused(422, "; ".join(e["msg"] for e in error.errors())) from None
    except ValueError as error:  # input files that could not all be written
        raise Refused(422, str(error)) from None
    return wanted


APPLIED = "x-codeloop-limits"
"""The response header that says the limits a `/run_code` ran under (`applied_limits`);
SandboxFusion's clients read the body only."""


def applied_limits(wanted: RunRequest) -> bytes:
    """What the sandbox applied to `wanted`, as `APPLIED`'s value: `run_timeout` (wall and
    CPU seconds) and `memory_limit_MB` with the start-up time and memory its runtime is
    given on top of the asked limit (the JVM: 0.5 s and 256 MiB, node: 0.2 s and 64 MiB;
    `Language.startup_s`, `memory_overhead_mib`), and `compile_timeout`, each after
    this server's maxima and default. A client that sends a `run_timeout` of 0.1 s for
    Java sees here that its program had 0.6 s, where SandboxFusion counts the JVM's
    start in the limit."""
    language = HOME_LANGUAGES[wanted.language]
    limits = wanted.limits or SandboxLimits()
    run = limits.time_s + language.startup_s
    memory = limits.memory_mib + language.memory_overhead_mib
    return b"run_timeout=%s; compile_timeout=%s; memory_limit_MB=%d" % (
        _seconds(run).encode(),
        _seconds(limits.compile_time_s).encode(),
        memory,
    )


def _seconds(value: float) -> str:
    return f"{round(value, 6):g}"


def command_result(step: Step) -> CommandRunResult:
    seconds = step.wall_ms / 1000
    if step.status == "environment_error":
        return CommandRunResult(status="Error", stderr=step.stderr)
    if step.status == "timeout":
        return CommandRunResult(
            status="TimeLimitExceeded",
            execution_time=seconds,
            stdout=step.stdout,
            stderr=step.stderr,
        )
    return CommandRunResult(
        status="Finished",
        execution_time=seconds,
        return_code=step.exit_code,
        stdout=step.stdout,
        stderr=step.stderr,
    )


def response(run: ProgramRun) -> RunCodeResponse:
    """SandboxFusion's answer for `run` (its `parse_run_status` rules)."""
    steps = [command_result(step) for step in (run.compile, run.run) if step is not None]
    compiled = command_result(run.compile) if run.compile is not None else None
    ran = command_result(run.run) if run.run is not None else None
    for step in steps:
        if step.status == "Error":
            return RunCodeResponse(
                status="SandboxError",
                message=step.stderr or "",
                compile_result=compiled,
                run_result=ran,
            )
    failed = any(
        step.status == "TimeLimitExceeded" or (step.return_code or 0) != 0 for step in steps
    )
    return RunCodeResponse(
        status="Failed" if failed else "Success",
        message="",
        compile_result=compiled,
        run_result=ran,
        files=run.files,
    )


async def answer(service: Service, log: dict, wanted: RunRequest) -> tuple[int, RunCodeResponse]:
    """Run `wanted` through the server's sandbox: the HTTP status and SandboxFusion's
    answer, counted in the metrics and put on the access line (`log`)."""
    log["language"] = wanted.language
    found = response(await service.run_program(log, wanted))
    note = home(wanted.language).failure_note
    if note is not None and found.status == "Failed" and found.run_result is not None:
        # what the run missed on this machine, as its home words it (Python's numpy and
        # the rest are an extra: `make science`); the status and output stay as they are
        found.message = note(found.run_result.stderr or "")
    service.metrics.verdict("/run_code", found.status, found.status == "SandboxError")
    log["outcome"] = found.status
    if found.status == "SandboxError":
        # the sandbox's failure, never the program's: answered so the client retries
        return service.settings.sandbox_error_http, found
    return 200, found


RETRY = {"Retry-After": "1"}


class FastRunCode:
    """ASGI middleware, inside `Guard`: a well-formed `POST /run_code` (a JSON body that
    validates, a language served, within the limits) is answered here, with pydantic's
    own JSON parser and encoder, past FastAPI's routing, dependency solving and response
    re-validation, which cost more server CPU than the rest of the request on a 2-core
    machine (docs/PERFORMANCE.md, "Service"). Anything else goes on to the FastAPI route,
    which gives the same answer (it shares `answer`) and words every refusal."""

    def __init__(self, app: ASGIApp, service: Service) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/run_code" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        message = await receive()  # `Guard` hands on the whole body as one message
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return message
            return await receive()

        kind = dict(scope["headers"]).get(b"content-type", b"")
        wanted = None
        try:
            if kind.split(b";")[0].strip().lower() == b"application/json":
                wanted = run_request(
                    RunCodeRequest.model_validate_json(message.get("body", b"")),
                    self.service.settings,
                )
        except (ValueError, Refused):  # pydantic's ValidationError is a ValueError
            pass
        if wanted is None:
            # FastAPI words the refusal, called outside the `except`: an error there must
            # not carry pydantic's error as its context, whose text quotes the body
            await self.app(scope, replay, send)
            return
        log = scope.setdefault("state", {}).setdefault("log", {})
        try:
            status, found = await answer(self.service, log, wanted)
        except Refused as refused:  # the queue is full, or the server is not running
            await send_json(send, refused.status, {"detail": refused.detail}, RETRY)
            return
        data = found.model_dump_json().encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(data)),
            (APPLIED.encode(), applied_limits(wanted)),
        ]
        if status != 200:
            headers.append((b"retry-after", b"1"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})


def routes() -> APIRouter:
    """The SandboxFusion endpoints. They reach the sandbox through the app's `Service`
    (`app.state.service`: its queue, its worker pool, its metrics); a well-formed
    `/run_code` is answered before them, by `FastRunCode`."""
    router = APIRouter(tags=["sandboxfusion"])

    @router.get("/v1/ping")
    async def ping() -> str:
        return "pong"

    @router.post("/run_code", response_model=RunCodeResponse)
    async def run_code(
        body: RunCodeRequest, request: Request, reply: Response
    ) -> RunCodeResponse | JSONResponse:
        service = request.app.state.service
        wanted = run_request(body, service.settings)
        status, found = await answer(service, request.state.log, wanted)
        applied = {APPLIED: applied_limits(wanted).decode()}
        if status != 200:
            headers = {**RETRY, **applied}
            return JSONResponse(found.model_dump(mode="json"), status_code=status, headers=headers)
        reply.headers.update(applied)
        return found

    return router
