"""Headers are bounded before the token is checked (`serve/protocol.py`).

httptools keeps every header a client sends; many large ones once grew the server from
about 78 to 380 MiB before the token was looked at. Past 64 KiB of request line and
headers the server answers 431 and closes the connection, before reading more. On
loopback, with a client that sends a bounded amount and gives up after a few seconds.
"""

from __future__ import annotations

import contextlib
import socket
import time

import pytest

from codeloop.serve.limits import Settings
from tests.support.serve import running

pytestmark = pytest.mark.timeout(120)
TOKEN = "t" * 32


def _send_headers(url: str, header_bytes: int) -> tuple[bytes, int]:
    """Send a POST whose headers take about `header_bytes`, 4 KiB at a time, stopping at
    the first answer; (what came back, the header bytes sent until then)."""
    host, port = url.removeprefix("http://").split(":")
    sent = 0
    answer = b""
    with socket.create_connection((host, int(port)), timeout=5) as client:
        client.sendall(b"POST /run_code HTTP/1.1\r\nHost: x\r\n")
        client.setblocking(False)
        index = 0
        deadline = time.monotonic() + 10
        while sent < header_bytes and time.monotonic() < deadline:
            line = b"X-Pad-%d: %s\r\n" % (index, b"a" * 4000)
            try:
                client.sendall(line)
                sent += len(line)
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                break
            index += 1
            try:
                chunk = client.recv(65536)
            except BlockingIOError:
                continue
            answer += chunk
            break
        if sent >= header_bytes:
            with contextlib.suppress(BlockingIOError, BrokenPipeError, ConnectionResetError):
                client.sendall(b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        client.setblocking(True)
        client.settimeout(5)
        try:
            while chunk := client.recv(65536):
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return answer, sent


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_headers_past_64_kib_are_a_431_before_the_token_is_checked(http: str) -> None:
    with running(Settings(token=TOKEN, workers=1), http=http) as url:
        answer, _sent = _send_headers(url, 1 << 20)
        status = answer.split(b"\r\n", 1)[0]
        if http == "httptools":
            assert status == b"HTTP/1.1 431 Request Header Fields Too Large", answer[:200]
            assert b"over 65536 bytes" in answer
        else:  # h11 refuses at its own 16 KiB bound, earlier still
            assert status.split(b" ")[1] in (b"400", b"431"), answer[:200]
        # headers under the bound reach the token check as before
        answer, _sent = _send_headers(url, 12 << 10)
        assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
