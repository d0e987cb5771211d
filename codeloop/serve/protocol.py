"""uvicorn's HTTP/1.1 protocol with a deadline for each request's headers.

uvicorn times out idle keep-alive connections, and the app (`limits.Guard`) times out
a slow body, but nothing times out headers that arrive a byte at a time: a slowloris
client holds its connection forever, and `--max-connections` of them make every other
client's request a 503. Here each connection must deliver a request's headers within
`header_timeout_s` of opening (or of its last response); one that does not is closed.
A request whose headers arrived is never cut by this deadline, however long its check.

Nor does anything bound the headers' size: httptools keeps every header it is sent, so
many large headers grew the server from about 78 to 380 MiB before the token was even
looked at. Here the bytes a connection sends before a request's headers are complete are
counted, and past `max_header_bytes` (64 KiB) it is answered 431 and closed at once,
before more is read; the app (and its token check) never sees it.

The deadline is a mixin over either of uvicorn's parsers: httptools (C, llhttp) where it
is installed, as uvicorn itself prefers, else h11 (pure Python). On 2 cores the parser
is part of what a request costs beside its sandbox run (docs/SERVICE.md, "Throughput").
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_HEADER_BYTES = 64 << 10
"""What a request's line and headers may take together, as `limits.Settings` says."""


class HeaderDeadline:
    """The deadline and the headers' size cap, mixed into a uvicorn protocol class
    (`with_header_timeout`)."""

    header_timeout_s: float = 10.0
    max_header_bytes: int = MAX_HEADER_BYTES
    _header_bytes: int = 0
    _awaiting_headers: bool = True
    cycle: Any
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._start()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)  # type: ignore[misc]

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return
        # A request answered before its body was read (413 by its declared length) is
        # complete while its body still arrives: those bytes are its body, discarded by
        # the parser, not the next request's headers.
        counting = self._awaiting_headers and not (self.cycle is not None and self.cycle.more_body)
        super().data_received(data)  # type: ignore[misc]
        if counting and self._awaiting_headers and not self.transport.is_closing():
            self._header_bytes += len(data)
            if self._header_bytes > self.max_header_bytes:
                self._too_large()

    def _too_large(self) -> None:
        """431 and close, written here: the request never reaches the app."""
        self._stop()
        body = b'{"detail": "the request line and headers are over %d bytes"}' % (
            self.max_header_bytes
        )
        head = (
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json"
            b"\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % len(body)
        )
        self.transport.write(head + body)
        self.transport.close()

    def _headers_in(self) -> None:
        if self.cycle is not None and not self.cycle.response_complete:
            self._stop()  # a request's headers are in: its handling is not timed here
            self._awaiting_headers = False

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self._start()  # waiting for the next request's headers
            self._awaiting_headers, self._header_bytes = True, 0

    def _start(self) -> None:
        self._stop()
        self._deadline = self.loop.call_later(self.header_timeout_s, self._too_slow)

    def _stop(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.cycle is None or self.cycle.response_complete:
            self.transport.close()


class H11Deadline(HeaderDeadline, H11Protocol):
    def handle_events(self) -> None:
        super().handle_events()
        self._headers_in()


def parser() -> str:
    """The HTTP parser `codeloop serve` uses here: httptools if installed, else h11."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        return "h11"
    return "httptools"


def event_loop() -> str:
    """The event loop uvicorn's "auto" takes here: uvloop if installed, else asyncio."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def with_header_timeout(
    seconds: float, http: str | None = None, max_header_bytes: int = MAX_HEADER_BYTES
) -> type:
    """The protocol class to give uvicorn (`Config(http=...)`) for a deadline of `seconds`
    and headers of at most `max_header_bytes`, over `http` ("httptools" or "h11";
    default: `parser()`)."""
    if (http or parser()) == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        class HttpToolsDeadline(HeaderDeadline, HttpToolsProtocol):
            def on_headers_complete(self) -> None:
                super().on_headers_complete()
                self._headers_in()

        base: type = HttpToolsDeadline
    else:
        base = H11Deadline
    fields = {"header_timeout_s": seconds, "max_header_bytes": max_header_bytes}
    return type(base.__name__, (base,), fields)
