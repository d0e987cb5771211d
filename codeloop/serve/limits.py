"""What keeps `codeloop serve` a service under load and abuse: its settings, the bearer
token (and when it may run without one), the size limits, and the bounded queue in
front of the sandbox.

Pure Python and the ASGI protocol only: `codeloop serve --help` and the token checks
work without FastAPI installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop.errors import ConfigError
from codeloop.sandbox.request import MAX_PROGRAM_BYTES

TOKEN_ENV = "CODELOOP_SERVE_TOKEN"
MIN_TOKEN_CHARS = 16
OPEN_PATHS = frozenset({"/health", "/v1/ping"})
"""Answered without a token: liveness probes of load balancers and SandboxFusion clients."""
WORK_PATHS = frozenset({"/run_code", "/v1/check", "/v1/check/batch"})
"""The paths whose POSTs take sandbox slots: capped per client (`Settings.max_per_client`)
and cancelled when their client goes away (`Guard`)."""
GONE = 499
"""The status an access line records for a request whose client went away before its
answer (nginx's "client closed request"); nothing is sent."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class Settings:
    """Everything `create_app` needs to know; `codeloop serve`'s options fill it."""

    token: str | None = None
    """The bearer token every request but OPEN_PATHS must carry; None: no auth."""
    backend: str = "bwrap"
    workers: int | None = None
    """Sandbox worker processes (None: one per core)."""
    cluster: str | None = None
    """A Ray cluster's address: each request a Ray task on one of its nodes, checked by
    that node's own sandbox (`sandbox.cluster`); None: this machine's worker pool."""
    max_in_flight: int | None = None
    """Programs in the sandbox at once (None: as many as workers)."""
    max_waiting: int = 64
    """Requests that may wait for a free slot; one more is answered 504 at once."""
    max_per_client: int = 64
    """Sandbox requests (`WORK_PATHS`) one client may have open at once, from its body's
    arrival to its answer, waiting or running; one more is answered 429 with
    `Retry-After`, so that one client cannot take the whole queue. A client is its peer
    address (with auth on too: every client sends the server's one token, so a cap per
    token would be a cap on the server). 0: no cap. The default is verl's documented
    `max_concurrent` (64): a trainer at that concurrency is never refused, and verl does
    not retry a 429."""
    queue_timeout_s: float = 30.0
    """How long a request may wait for a slot before it is answered 504."""
    max_body_bytes: int = 16 << 20
    max_code_bytes: int = MAX_PROGRAM_BYTES
    max_stdin_bytes: int = 8 << 20
    max_cases: int = 512
    """Test cases of one `/v1/check`."""
    max_batch: int = 1024
    """Checks of one `/v1/check/batch`."""
    max_check_s: float = 1800.0
    """Longest a `/v1/check` may keep a worker: its cases times its time limit."""
    body_timeout_s: float = 30.0
    """How long a client may take to send its body (slow-drip clients get 408)."""
    header_timeout_s: float = 10.0
    """How long a connection may take to send a request's headers before it is closed
    (slowloris clients; `protocol.HeaderDeadline`)."""
    max_header_bytes: int = 64 << 10
    """A request's line and headers together; past it 431 and the connection closed,
    before the token is checked (`protocol.HeaderDeadline`)."""
    max_run_timeout_s: float = 60.0
    max_compile_timeout_s: float = 120.0
    default_memory_mib: int = 1024
    """The memory of a `/run_code` program that asks for none (SandboxFusion: unlimited)."""
    max_memory_mib: int = 8192
    sandbox_error_http: int = 504
    """The HTTP status of a `/run_code` answer whose run the sandbox could not carry out
    (`SandboxError`): 504 with `Retry-After`, which verl retries where it would score a
    200 `SandboxError` as a failed test (-1); 200 is SandboxFusion's own. The body is
    the same `SandboxError` either way."""
    fast_run_code: bool = True
    """Answer a well-formed `/run_code` past FastAPI's layers (`fusion.FastRunCode`);
    False sends every request through the FastAPI route, for comparison."""
    async_workers: bool = True
    """Reach this machine's sandbox workers from the event loop (`sandbox.async_pool`);
    False: a thread per request waits on `sandbox.pool`'s, for comparison. A cluster
    is always reached from threads (Ray's calls block)."""

    @property
    def slots(self) -> int:
        return self.max_in_flight or self.workers or max(1, len(os.sched_getaffinity(0)))


# --- the token --------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve_token(
    host: str, token_file: Path | None, no_auth: bool, environ: MutableMapping[str, str]
) -> str | None:
    """The bearer token to require (from `token_file`, else CODELOOP_SERVE_TOKEN), or None
    with `no_auth`, which only a server bound to loopback may ask for. ConfigError for
    every other case, saying what to do."""
    token = None
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as error:
            raise ConfigError(f"--token-file {token_file}: {error.strerror or error}") from None
        if not token:
            raise ConfigError(f"--token-file {token_file} is empty")
    elif environ.get(TOKEN_ENV, "").strip():
        token = environ[TOKEN_ENV].strip()
    if no_auth:
        if token is not None:
            raise ConfigError("--no-auth and a token (--token-file or $CODELOOP_SERVE_TOKEN)")
        if not is_loopback(host):
            raise ConfigError(
                f"--no-auth is allowed only on a loopback address (127.0.0.1, ::1, "
                f"localhost), not {host}: set a token to serve on the network"
            )
        return None
    if token is None:
        raise ConfigError(
            f"codeloop serve needs a bearer token: set ${TOKEN_ENV} or give --token-file "
            "(or, bound to loopback only, say --no-auth)"
        )
    if len(token) < MIN_TOKEN_CHARS or any(char.isspace() for char in token):
        raise ConfigError(
            f"the token must be at least {MIN_TOKEN_CHARS} characters, none of them spaces "
            '(e.g. python -c "import secrets; print(secrets.token_urlsafe(32))")'
        )
    return token


# --- errors the endpoints answer with ---------------------------------------------------


class Refused(Exception):
    """A request answered with `status` and a one-line JSON `detail`, before or instead of
    any sandbox work."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def too_large(what: str, size: int, limit: int) -> Refused:
    return Refused(413, f"{what} is {size} bytes; this server takes at most {limit}")


def check_size(what: str, text: str | None, limit: int) -> None:
    size = len(text.encode("utf-8", "surrogatepass")) if text else 0
    if size > limit:
        raise too_large(what, size, limit)


def check_text(value: object, where: str = "body") -> None:
    """`Refused(422)` naming the field of `value` (parsed JSON: dicts, lists, strings) that
    holds a lone surrogate. JSON may escape one (`"\\ud800"`) and Python's parser takes it,
    but it is no Unicode text: it cannot be encoded as UTF-8, so a program, stdin or file
    name holding one cannot reach the sandbox. Refused here, before any of it is
    encoded, it is the client's error (422), never a 500 whose traceback quotes the body."""
    if isinstance(value, str):
        if value.isascii():
            return
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            code = ord(value[error.start])
            raise Refused(
                422,
                f"{where}: a lone surrogate (U+{code:04X}, character {error.start}) is not "
                "Unicode text; send the body as UTF-8 text",
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(key, f"{where}: a key")
            check_text(item, f"{where}.{key}" if where != "body" else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            check_text(item, f"{where}.{index}")


# --- auth and the body, before any handler ----------------------------------------------


async def send_json(send: Send, status: int, body: dict, headers: dict[str, str] | None = None):
    data = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(key.encode(), value.encode()) for key, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


class Guard:
    """ASGI middleware: the bearer token first (nothing of an unauthenticated request is
    read), then the body, read whole up to `max_body_bytes` within `body_timeout_s`
    (413 past the size, 408 past the time) and handed on as one message.

    A sandbox request (a POST to `WORK_PATHS`) is also counted against its client's cap
    (`max_per_client`: 429 past it), and watched until it is answered: when its client
    goes away first, the request's task is cancelled, which gives back its place in the
    queue or its slot and stops its run (`app.Service`). Without that, a client that
    hung up kept its slot until its program ended, and its answer went nowhere."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.token = settings.token.encode() if settings.token else None
        self.open: dict[str, int] = {}
        """Sandbox requests open now, by client (`client_of`)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if self.token is not None and scope["path"] not in OPEN_PATHS:
            scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.token):
                detail = "missing or wrong bearer token (Authorization: Bearer TOKEN)"
                await send_json(send, 401, {"detail": detail}, {"www-authenticate": "Bearer"})
                return
        if scope["method"] != "POST" or scope["path"] not in WORK_PATHS:
            await self._body(scope, headers, receive, send, watch=False)
            return
        client = client_of(scope)
        held, cap = self.open.get(client, 0), self.settings.max_per_client
        if cap and held >= cap:
            detail = (
                f"this client has {held} sandbox requests open (waiting or running); this "
                f"server takes {cap} per client at once: send more as answers come back"
            )
            await send_json(send, 429, {"detail": detail}, {"retry-after": "1"})
            return
        self.open[client] = held + 1
        try:
            await self._body(scope, headers, receive, send, watch=True)
        finally:
            left = self.open[client] - 1
            if left:
                self.open[client] = left
            else:
                del self.open[client]

    async def _body(
        self, scope: Scope, headers: dict[bytes, bytes], receive: Receive, send: Send, watch: bool
    ) -> None:
        """Read the body whole, then hand the request on (watched for its client's
        departure when `watch`)."""
        limit = self.settings.max_body_bytes
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await send_json(
                send, 413, {"detail": too_large("the body", int(declared), limit).detail}
            )
            return
        body = bytearray()
        more = scope["method"] not in ("GET", "HEAD")
        try:  # one deadline for the whole body (asyncio.timeout: no task per message)
            async with asyncio.timeout(self.settings.body_timeout_s if more else None):
                while more:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    body += message.get("body", b"")
                    more = message.get("more_body", False)
                    if len(body) > limit:
                        detail = too_large("the body", len(body), limit).detail
                        await send_json(send, 413, {"detail": detail})
                        return
        except TimeoutError:
            seconds = self.settings.body_timeout_s
            await send_json(send, 408, {"detail": f"the body took over {seconds:g} s to arrive"})
            return
        whole: Message = {"type": "http.request", "body": bytes(body), "more_body": False}
        if watch:
            await until_gone(self.app, scope, whole, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return whole
            return await receive()

        await self.app(scope, replay, send)


def client_of(scope: Scope) -> str:
    """Whom a request counts against for `Settings.max_per_client`: its peer's address
    (without the port: one client's connections share it)."""
    peer = scope.get("client")
    return str(peer[0]) if peer else ""


async def until_gone(app: ASGIApp, scope: Scope, whole: Message, receive: Receive, send: Send):
    """`app` on the request whose body is `whole`, cancelled if its client disconnects
    before the answer's last byte is sent.

    One watcher task reads the server's `receive` (after the body, uvicorn answers it only
    with `http.disconnect`); `app` reads the body, then that same disconnect, from here,
    so nothing else reads the connection. A cancellation of ours ends quietly (the
    access line says `GONE`); any other (the server stopping) goes on up."""
    task = asyncio.current_task()
    assert task is not None
    gone = asyncio.Event()
    answered = cancelled = False

    async def sending(message: Message) -> None:
        nonlocal answered
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            answered = True
        await send(message)

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        nonlocal cancelled
        gone.set()
        if not answered:
            scope.setdefault("state", {}).setdefault("log", {})["outcome"] = "client gone"
            cancelled = True
            task.cancel()

    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return whole
        await gone.wait()
        return {"type": "http.disconnect"}

    watcher = asyncio.create_task(watch())
    try:
        await app(scope, replay, sending)
    except asyncio.CancelledError:
        if not cancelled or task.uncancel() > 0:
            raise
    finally:
        watcher.cancel()


# --- the bounded queue ------------------------------------------------------------------


class Gate:
    """At most `slots` requests in the sandbox at once, at most `max_waiting` waiting for
    one, each for at most `wait_s`: beyond that `Refused(504)` (SandboxFusion's clients
    retry a 504). Used on the event loop only."""

    def __init__(self, slots: int, max_waiting: int, wait_s: float) -> None:
        self.slots, self.max_waiting, self.wait_s = slots, max_waiting, wait_s
        self.running = 0
        self.waiting = 0
        self._free = asyncio.Semaphore(slots)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[float]:
        """Hold a slot for the block; yields the seconds spent waiting for it."""
        started = time.monotonic()
        if self._free.locked() and self.waiting >= self.max_waiting:
            raise Refused(
                504, f"the sandbox is busy: {self.running} running, {self.waiting} waiting"
            )
        self.waiting += 1
        try:
            if self._free.locked():
                async with asyncio.timeout(self.wait_s):
                    await self._free.acquire()
            else:  # a slot is free: taken at once, without a timer
                await self._free.acquire()
        except TimeoutError:
            raise Refused(
                504, f"the sandbox is busy: no slot came free within {self.wait_s:g} s"
            ) from None
        finally:
            self.waiting -= 1
        self.running += 1
        try:
            yield time.monotonic() - started
        finally:
            self.running -= 1
            self._free.release()
