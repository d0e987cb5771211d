"""What `codeloop serve` tells its operators: Prometheus metrics (`/metrics`, the text
exposition format 0.0.4, written here: five metric families need no client library and
no global registry) and one JSON line per request (`Observe`).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime

from codeloop.serve.limits import GONE, ASGIApp, Message, Receive, Scope, Send

ENDPOINTS = frozenset(
    {
        "/run_code",
        "/v1/ping",
        "/v1/check",
        "/v1/check/batch",
        "/health",
        "/metrics",
        "/openapi.json",
    }
)
"""Paths kept as they are in labels and logs; any other is `other` (bounded cardinality)."""
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

access = logging.getLogger("codeloop.serve.access")


def endpoint_of(path: str) -> str:
    return path if path in ENDPOINTS else "other"


def _labels(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return ",".join(f'{name}="{escape(value)}"' for name, value in zip(names, values, strict=True))


def _number(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


class Metrics:
    """The service's counters, histogram and gauges; safe from any thread."""

    def __init__(self, gauges: dict[str, tuple[str, Callable[[], float]]]) -> None:
        self._lock = threading.Lock()
        self.requests: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.verdicts: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.environment_errors: defaultdict[tuple[str], int] = defaultdict(int)
        self._buckets: defaultdict[str, list[int]] = defaultdict(lambda: [0] * len(BUCKETS))
        self._sum: defaultdict[str, float] = defaultdict(float)
        self._count: defaultdict[str, int] = defaultdict(int)
        self.gauges = gauges
        """name -> (help, read): read when scraped (queue depth, programs running)."""

    def request(self, endpoint: str, code: int, seconds: float) -> None:
        with self._lock:
            self.requests[endpoint, str(code)] += 1
            for index, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self._buckets[endpoint][index] += 1
            self._sum[endpoint] += seconds
            self._count[endpoint] += 1

    def verdict(self, endpoint: str, status: str, environment_error: bool) -> None:
        with self._lock:
            self.verdicts[endpoint, status] += 1
            if environment_error:
                self.environment_errors[(endpoint,)] += 1

    def render(self) -> str:
        lines: list[str] = []

        def family(name: str, kind: str, text: str) -> None:
            lines.extend((f"# HELP {name} {text}", f"# TYPE {name} {kind}"))

        def counter(name: str, text: str, names: tuple[str, ...], values: dict) -> None:
            family(name, "counter", text)
            for key, count in sorted(values.items()):
                lines.append(f"{name}{{{_labels(names, key)}}} {count}")

        with self._lock:
            counter(
                "codeloop_serve_requests_total",
                "HTTP requests answered, by endpoint and status code.",
                ("endpoint", "code"),
                self.requests,
            )
            counter(
                "codeloop_serve_verdicts_total",
                "Outcomes of sandbox work: /run_code's SandboxFusion status, /v1/check's "
                "check status.",
                ("endpoint", "status"),
                self.verdicts,
            )
            counter(
                "codeloop_serve_environment_errors_total",
                "Sandbox work the sandbox could not carry out (never a verdict on a program).",
                ("endpoint",),
                self.environment_errors,
            )
            name = "codeloop_serve_request_seconds"
            family(name, "histogram", "Time from a request's arrival to its answer, seconds.")
            for endpoint in sorted(self._count):
                label = _labels(("endpoint",), (endpoint,))
                for bound, count in zip(BUCKETS, self._buckets[endpoint], strict=True):
                    lines.append(f'{name}_bucket{{{label},le="{bound}"}} {count}')
                lines.append(f'{name}_bucket{{{label},le="+Inf"}} {self._count[endpoint]}')
                lines.append(f"{name}_sum{{{label}}} {_number(self._sum[endpoint])}")
                lines.append(f"{name}_count{{{label}}} {self._count[endpoint]}")
        for gauge, (text, read) in sorted(self.gauges.items()):
            family(gauge, "gauge", text)
            lines.append(f"{gauge} {_number(read())}")
        return "\n".join(lines) + "\n"


class Observe:
    """ASGI middleware, outermost: times each request, counts it in `metrics`, and logs
    one JSON line for it (with what the handler put in `scope["state"]["log"]`)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        identity = secrets.token_hex(6)
        scope.setdefault("state", {})["log"] = {}
        code = 500
        sent = False

        async def sending(message: Message) -> None:
            nonlocal code, sent
            if message["type"] == "http.response.start":
                code, sent = message["status"], True
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-request-id", identity.encode()),
                ]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            seconds = time.monotonic() - started
            if not sent and scope["state"].get("log", {}).get("outcome") == "client gone":
                code = GONE  # nothing was answered: the client hung up first
            endpoint = endpoint_of(scope["path"])
            self.metrics.request(endpoint, code, seconds)
            client = scope.get("client")
            line = {
                "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
                "event": "request",
                "id": identity,
                "client": f"{client[0]}:{client[1]}" if client else None,
                "method": scope["method"],
                "path": scope["path"] if endpoint != "other" else scope["path"][:200],
                "status": code,
                "ms": round(seconds * 1000, 1),
                **scope["state"].get("log", {}),
            }
            access.info(json.dumps(line, ensure_ascii=False))


class JsonLines(logging.Formatter):
    """One JSON object per log line; an access line (already JSON) passes as it is."""

    def format(self, record: logging.LogRecord) -> str:
        if record.name == access.name:
            return record.getMessage()
        line = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "event": "log",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)
