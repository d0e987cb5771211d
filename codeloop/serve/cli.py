"""`codeloop serve`: the sandbox as an HTTP service (docs/SERVICE.md).

FastAPI and uvicorn are imported only when the command runs, so the rest of the CLI
works without them (`pip install 'codeloop[serve]'`).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from pathlib import Path

import typer

from codeloop import config as session_config
from codeloop.errors import CodeloopError, ConfigError
from codeloop.serve.limits import TOKEN_ENV, Settings, resolve_token
from codeloop.serve.metrics import JsonLines

log = logging.getLogger("codeloop.serve")


def _logging() -> None:
    """Every line on stderr one JSON object: ours, uvicorn's, and the access log's
    (`codeloop.serve.access`, whose lines reach this handler through its parent)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    for name in ("codeloop.serve", "uvicorn"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(logging.INFO)
        logger.propagate = False


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port` (0: a free port, which the log line names)."""
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        listener = socket.socket(family, kind, proto)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(2048)  # connections wait in the backlog until uvicorn accepts them
    except OSError as error:
        raise ConfigError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    return listener


def _one_of(value: str, option: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise typer.BadParameter(f"{value!r}: one of {', '.join(choices)}", param_hint=option)
    return value


SANDBOX_ERROR_HTTP = typer.Option(
    504,
    "--sandbox-error-http",
    help="HTTP status of a /run_code SandboxError (the sandbox's failure, not the "
    "program's): 504, which clients retry, or 200 as SandboxFusion answers it.",
    callback=lambda value: int(_one_of(str(value), "--sandbox-error-http", ("504", "200"))),
)
HTTP_PARSER = typer.Option(
    "auto",
    "--http",
    callback=lambda value: _one_of(value, "--http", ("auto", "httptools", "h11")),
    help="HTTP parser (auto: httptools where installed, else h11).",
)
EVENT_LOOP = typer.Option(
    "auto",
    "--loop",
    callback=lambda value: _one_of(value, "--loop", ("auto", "uvloop", "asyncio")),
    help="Event loop (auto: uvloop where installed, else asyncio).",
)

FAST_RUN_CODE = typer.Option(
    True,
    "--fast-run-code/--routed-run-code",
    help="Answer a well-formed /run_code past FastAPI's routing and encoding (the same "
    "answer, less server CPU); --routed-run-code sends each through FastAPI, to compare.",
)
ASYNC_WORKERS = typer.Option(
    True,
    "--async-workers/--thread-workers",
    help="Feed the sandbox workers from the event loop (less server CPU, no idle worker "
    "between requests); --thread-workers waits on each from a thread, to compare.",
)


MAX_PER_CLIENT = typer.Option(
    64,
    "--max-per-client",
    min=0,
    help="Sandbox requests one client (peer address) may have waiting or running; "
    "more get HTTP 429 (0: no cap). Keep it at or above verl's max_concurrent.",
)


def serve(
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (loopback unless you say otherwise)."
    ),
    port: int = typer.Option(8080, "--port", min=0, max=65535, help="Port (0: any free one)."),
    token_file: Path | None = typer.Option(
        None,
        "--token-file",
        help="File holding the bearer token clients must send (default: $CODELOOP_SERVE_TOKEN).",
    ),
    no_auth: bool = typer.Option(
        False, "--no-auth", help="Serve without a token: allowed on a loopback address only."
    ),
    config: Path | None = typer.Option(
        None,
        "--config",
        "-c",
        help="Take the sandbox backend, workers and [cluster] address from this session config.",
    ),
    cluster: str | None = typer.Option(
        None,
        "--cluster",
        help="Ray cluster address ('auto', HOST:PORT): each request runs on one of its nodes.",
    ),
    workers: int | None = typer.Option(
        None, "--workers", min=1, help="Sandbox worker processes (default: one per core)."
    ),
    max_in_flight: int | None = typer.Option(
        None, "--max-in-flight", min=1, help="Programs in the sandbox at once (default: workers)."
    ),
    max_waiting: int = typer.Option(
        64, "--max-waiting", min=0, help="Requests that may wait for a slot; more get HTTP 504."
    ),
    max_per_client: int = MAX_PER_CLIENT,
    queue_timeout: float = typer.Option(
        30.0, "--queue-timeout", min=0.001, help="Seconds a request may wait; then HTTP 504."
    ),
    max_body_mib: float = typer.Option(
        16.0, "--max-body-mib", min=0.001, help="Largest request body; more gets HTTP 413."
    ),
    max_connections: int = typer.Option(
        1024, "--max-connections", min=1, help="Open connections and requests; more get 503."
    ),
    drain_timeout: int = typer.Option(
        120, "--drain-timeout", min=1, help="On SIGTERM, seconds to let running requests finish."
    ),
    sandbox_error_http: int = SANDBOX_ERROR_HTTP,
    http: str = HTTP_PARSER,
    loop: str = EVENT_LOOP,
    fast_run_code: bool = FAST_RUN_CODE,
    async_workers: bool = ASYNC_WORKERS,
) -> None:
    """Serve the sandbox over HTTP: SandboxFusion's /run_code and the native /v1/check."""
    token = resolve_token(host, token_file, no_auth, os.environ)
    # Read once, then gone from this process's environment: nothing it starts (sandbox
    # workers, Ray, a compile service) inherits the token.
    os.environ.pop(TOKEN_ENV, None)
    session = session_config.load(config) if config else None
    sandbox = session.sandbox if session else session_config.SandboxConfig()
    address = cluster or (session.cluster.address if session else None)
    if address and max_in_flight is None:  # one slot per CPU of the cluster
        from codeloop.sandbox.cluster import connect_ray

        max_in_flight = max(1, int(connect_ray(address).cluster_resources().get("CPU", 1)))
    settings = Settings(
        token=token,
        backend=sandbox.backend,
        workers=workers or sandbox.workers,
        cluster=address,
        max_in_flight=max_in_flight,
        max_waiting=max_waiting,
        max_per_client=max_per_client,
        queue_timeout_s=queue_timeout,
        max_body_bytes=int(max_body_mib * (1 << 20)),
        sandbox_error_http=sandbox_error_http,
        fast_run_code=fast_run_code,
        async_workers=async_workers,
    )
    _run(settings, host, port, max_connections, drain_timeout, http, loop)


def _run(
    settings: Settings,
    host: str,
    port: int,
    max_connections: int,
    drain_timeout: int,
    http: str = "auto",
    loop: str = "auto",
) -> None:
    """Serve `settings`' app with uvicorn on `host`:`port` until SIGTERM or SIGINT."""
    try:
        import uvicorn

        from codeloop.serve.app import create_app
        from codeloop.serve.protocol import event_loop, parser, with_header_timeout

        http = parser() if http == "auto" else http
        loop = event_loop() if loop == "auto" else loop
        protocol = with_header_timeout(settings.header_timeout_s, http, settings.max_header_bytes)
        if loop == "uvloop":
            import uvloop  # noqa: F401
    except ImportError as error:
        raise ConfigError(
            f"codeloop serve needs FastAPI and uvicorn (and httptools or uvloop where asked "
            f"for): pip install 'codeloop[serve]' ({error})"
        ) from None
    _logging()
    listener = _listen(host, port)
    bound_host, bound_port = listener.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    log.info("listening on http://%s:%d", shown, bound_port)
    log.info("HTTP parser %s, event loop %s", http, loop)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings),
            log_config=None,
            access_log=False,  # ours: one JSON line per request (metrics.Observe)
            lifespan="on",
            server_header=False,
            limit_concurrency=max_connections,
            http=protocol,
            loop=loop,
            timeout_graceful_shutdown=drain_timeout,
        )
    )
    # On SIGTERM or SIGINT uvicorn stops accepting, lets running requests finish (up to
    # --drain-timeout), runs the lifespan's end, and then ends this process by the same
    # signal, as its default handler would.
    server.run(sockets=[listener])
    if not server.started:
        raise CodeloopError("codeloop serve did not start (see the log lines above)")
