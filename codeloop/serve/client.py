"""A Python client of `codeloop serve`'s native API, so that trainers on many nodes share
one sandbox service (`CodeReward(url=...)` uses it).

It needs httpx only (a core dependency), not the server's FastAPI. Checks go out as
`/v1/check/batch` streams, a few hundred per request, and come back as the sandbox's
own `Check`s, in the order asked.

Infrastructure failures are never verdicts. A check the server could not take in time
(503/504), a connection that dropped, or a check that met an `environment_error` is sent
again (with backoff, up to `retries` times); what still has no verdict raises
`SandboxEnvironmentError`, never comes back as a failed check. A request the server
refuses for what it is (401 without the token, 413/422 over a limit) raises `ServeError`
at once: sending it again would not change the answer.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from codeloop.errors import CodeloopError, SandboxEnvironmentError
from codeloop.sandbox.request import Check, CheckRequest

TOKEN_ENV = "CODELOOP_SERVE_TOKEN"
RETRY_STATUSES = (502, 503, 504)


class ServeError(CodeloopError):
    """The server refused a request for what it is (auth, size, limits): not retried."""


class ServeClient:
    """`check` and `check_many` against the `codeloop serve` at `url`.

    `token`: the bearer token (default: `$CODELOOP_SERVE_TOKEN`; none for a server run
    with `--no-auth`). `batch`: checks per `/v1/check/batch` request (at most the
    server's `max_batch`). `timeout`: seconds one batch may take, connection excluded.
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        batch: int = 256,
        retries: int = 4,
        timeout: float = 3600.0,
        backoff_s: float = 1.0,
    ) -> None:
        if batch < 1 or retries < 0:
            raise ValueError("batch must be >= 1 and retries >= 0")
        token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = url.rstrip("/")
        self.batch, self.retries, self.backoff_s = batch, retries, backoff_s
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=httpx.Timeout(timeout, connect=10.0)
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ServeClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def check(self, request: CheckRequest) -> Check:
        [found] = self.check_many([request])
        return found

    def check_many(self, requests: Sequence[CheckRequest]) -> list[Check]:
        """Every request's `Check`, in order; see the module for what is retried."""
        found: dict[int, Check] = {}
        pending = list(range(len(requests)))
        why = ""
        for attempt in range(self.retries + 1):
            again: list[int] = []
            for start in range(0, len(pending), self.batch):
                chunk = pending[start : start + self.batch]
                for index, answer in self._stream(chunk, requests):
                    if "error" in answer:
                        again.append(index)
                        why = f"HTTP {answer['error']['status']}: {answer['error']['detail']}"
                        continue
                    verdict = _check(answer)
                    if verdict.status == "environment_error" and attempt < self.retries:
                        again.append(index)
                        why = f"environment error: {verdict.feedback.strip()[:300]}"
                        continue
                    found[index] = verdict
            pending = sorted(again)
            if not pending:
                break
            if attempt < self.retries:
                time.sleep(self.backoff_s * 2**attempt)
        if pending:
            raise SandboxEnvironmentError(
                f"codeloop serve at {self.url}: {len(pending)} of {len(requests)} checks got "
                f"no verdict after {self.retries + 1} tries (last: {why})"
            )
        return [found[index] for index in range(len(requests))]

    def _stream(
        self, chunk: list[int], requests: Sequence[CheckRequest]
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """(index, answer line) for each check of `chunk`; checks whose line never came
        (a dropped connection, a 503/504 for the whole batch) as error lines."""
        body = {"requests": [requests[i].model_dump(mode="json") for i in chunk]}
        seen: set[int] = set()
        failure = {"status": 0, "detail": "the stream ended early"}
        try:
            with self._http.stream("POST", "/v1/check/batch", json=body) as answer:
                if answer.status_code in RETRY_STATUSES:
                    failure = {"status": answer.status_code, "detail": _detail(answer)}
                elif answer.status_code != 200:
                    raise ServeError(
                        f"codeloop serve at {self.url} refused the batch: HTTP "
                        f"{answer.status_code}: {_detail(answer)}"
                    )
                else:
                    for raw in answer.iter_lines():
                        if raw.strip():
                            line = json.loads(raw)
                            seen.add(line["index"])
                            yield chunk[line["index"]], line
        except httpx.TransportError as error:
            failure = {"status": 0, "detail": f"{type(error).__name__}: {error}"}
        for position, index in enumerate(chunk):
            if position not in seen:
                yield index, {"error": failure}


def _check(answer: dict[str, Any]) -> Check:
    return Check.model_validate({k: v for k, v in answer.items() if k not in ("index", "passed")})


def _detail(answer: httpx.Response) -> str:
    answer.read()
    try:
        return str(answer.json().get("detail", answer.text))[:500]
    except ValueError:
        return answer.text[:500]
