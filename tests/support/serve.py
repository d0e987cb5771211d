"""A real `codeloop serve` app on loopback for tests: uvicorn in a thread of the test
process, on an ephemeral port of 127.0.0.1, stopped (its lifespan drained) on exit."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import uvicorn

from codeloop.serve.app import create_app
from codeloop.serve.limits import Settings
from codeloop.serve.protocol import with_header_timeout


@contextlib.contextmanager
def running(
    settings: Settings, limit_concurrency: int | None = None, http: str | None = None
) -> Iterator[str]:
    """The app for `settings` served by uvicorn on 127.0.0.1, an ephemeral port, in a
    thread; stopped (its lifespan drained) on exit. `http`: the parser ("httptools" or
    "h11"; default: the one `codeloop serve` picks here)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        create_app(settings),
        log_config=None,
        access_log=False,
        lifespan="on",
        limit_concurrency=limit_concurrency,
        http=with_header_timeout(settings.header_timeout_s, http),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive(), "the server stopped while starting"
        assert time.monotonic() < deadline, "the server did not start within 30 s"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        listener.close()
        assert not thread.is_alive(), "the server did not stop within 60 s"
