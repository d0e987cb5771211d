"""uvicorn's HTTP/1.1 protocol (h11) with a deadline for each request's headers.

uvicorn times out idle keep-alive connections, and the app (`limits.Guard`) times out
a slow body, but nothing times out headers that arrive a byte at a time: a slowloris
client holds its connection forever, and `--max-connections` of them make every other
client's request a 503. Here each connection must deliver a request's headers within
`header_timeout_s` of opening (or of its last response); one that does not is closed.
A request whose headers arrived is never cut by this deadline, however long its check.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderDeadline(H11Protocol):
    header_timeout_s: float = 10.0
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._stop()  # a request's headers are in: its handling is not timed here

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self._start()  # waiting for the next request's headers

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


def with_header_timeout(seconds: float) -> type[HeaderDeadline]:
    """The protocol class to give uvicorn (`Config(http=...)`) for a deadline of `seconds`."""
    return type("HeaderDeadline", (HeaderDeadline,), {"header_timeout_s": seconds})
