"""Sandbox checks across a Ray cluster: chunks of a batch as Ray tasks, each node's own sandbox.

A chunk of check requests is one Ray task that needs one CPU; on whichever node
Ray places it, the task checks its chunk with that node's local sandbox worker
(`pool.check_many`, so the verdict is the one a local run gives: the same code,
the same isolation). Results are put back by request index, so a chunk that Ray
retries after its worker or node died (`max_retries`) is counted once. At most
`in_flight` chunks run at a time (default: the cluster's CPUs), so a stop request
is honoured before the next chunk starts.

Trust boundary: every node that joins the cluster is trusted as much as this
process. It runs the sandbox and reports the verdicts, so a dishonest node could
call anything "passed", and Ray unpickles on this side whatever a node sends back.
What keeps strangers out is the cluster's edge, not this module: Ray's token
authentication (`RAY_AUTH_MODE=token` and one secret `RAY_AUTH_TOKEN` on every
node and in this process; Ray 2.52 and later) and binding Ray to 127.0.0.1 on one
machine, or to a firewalled private interface across several (README, "Scaling
out"). Within the boundary, what a node answers is still checked as plain data:
`_check_chunk` sends JSON text, and `accept` takes only exactly one `Check` per
request, each valid and from the requested sandbox backend, with the node id and
host it ran on. That guards against faults (a node with a broken or mismatched
install, a truncated answer), not against a dishonest node.

A chunk whose answer is refused, or whose task failed on every Ray retry, is an
infrastructure failure and never a wrong answer: it is checked once more in this
process's local pool (`rerun_locally`), and only if that gives no verdict either
is it reported as an `environment_error` whose feedback names the node and the fault.

Where each check ran is kept on it: `backend` is `ray:<backend>@<host>/<node id,
first 12 hex digits>` for a verdict a Ray node gave, and the local pool's plain
`<backend>` for one rerun here.

One program run (`run_program`, what `codeloop serve --cluster` answers `/run_code`
with) goes the same way: one Ray task, its answer taken as plain data (`accept_run`),
rerun in the local pool when Ray could not carry it out.

Every node needs codeloop installed with the same toolchains (`codeloop doctor`
on each), as for any Ray job.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from codeloop.errors import ConfigError
from codeloop.sandbox.request import (
    FEEDBACK_CHARS,
    Check,
    CheckRequest,
    ProgramRun,
    RunRequest,
    Step,
)

_connected: dict[str, Any] = {}
_NODE_ID = re.compile(r"[0-9a-f]{8,128}")
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


def connect_ray(address: str) -> Any:
    """The `ray` module, connected to the cluster at `address` (once per process).

    The one place codeloop joins a Ray cluster: the sandbox's chunked checks here and
    the engine actors of `codeloop.engines.ray_pool` both go through it, so they share
    one connection. Connecting to another address shuts the previous one down first.
    Warns on stderr when Ray's token authentication is off (README, "Scaling out").

    Raises `ConfigError` when Ray is not installed or the cluster cannot be reached.
    """
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "cluster.address is set but Ray is not installed: pip install 'codeloop[ray]'"
        ) from None
    if _connected.get("address") != address:
        if ray.is_initialized():
            ray.shutdown()
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        except ConnectionError as error:
            raise ConfigError(
                f"cluster.address = {address!r}: could not connect to Ray ({error}). A "
                "cluster started with RAY_AUTH_MODE=token needs RAY_AUTH_MODE=token and "
                "its RAY_AUTH_TOKEN in this process's environment too; one bound to "
                "127.0.0.1 needs RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 here as well "
                "(README, 'Scaling out')"
            ) from error
        _connected["address"] = address
        if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
            print(
                f"codeloop cluster: Ray token authentication is off for {address} "
                "(RAY_AUTH_MODE is not 'token'): anyone who reaches the cluster's ports "
                "can run code on it and report verdicts; see README, 'Scaling out'",
                file=sys.stderr,
            )
    return ray


def _check_chunk(payload: list[dict[str, Any]], backend: str) -> str:
    """Runs on a cluster node: check the chunk with the node's local sandbox worker.

    Answers JSON text: `{"node": <Ray node id>, "host": <hostname>, "checks": [...]}`.
    """
    import ray

    from codeloop.sandbox.pool import check_many

    requests = [CheckRequest.model_validate(item) for item in payload]
    checks = check_many(requests, workers=1, backend=backend)
    return json.dumps(
        {
            "node": ray.get_runtime_context().get_node_id(),
            "host": socket.gethostname(),
            "checks": [check.model_dump(mode="json") for check in checks],
        }
    )


class ChunkRejected(ValueError):
    """What came back for a chunk is not an answer to it; `node` names who sent it."""

    def __init__(self, node: str, reason: str) -> None:
        super().__init__(f"{node} answered a chunk wrongly: {reason}")
        self.node = node


def _where(answer: Any) -> tuple[str, str] | None:
    """The (node id, host) an answer claims, when both are well formed."""
    if not isinstance(answer, dict):
        return None
    node, host = answer.get("node"), answer.get("host")
    if not (isinstance(node, str) and _NODE_ID.fullmatch(node)):
        return None
    if not (isinstance(host, str) and _HOST.fullmatch(host)):
        return None
    return node, host


def _identified(answer: Any) -> tuple[dict[str, Any], str, str]:
    """(the decoded answer, node id, host) of a node's JSON text answer; `ChunkRejected`
    unless it is JSON with a well-formed node id and host."""
    if not isinstance(answer, str):
        raise ChunkRejected("an unidentified node", f"a {type(answer).__name__}, not JSON text")
    try:
        data = json.loads(answer)
    except ValueError as error:
        raise ChunkRejected("an unidentified node", f"not JSON: {error}") from None
    where = _where(data)
    if where is None:
        raise ChunkRejected("an unidentified node", "no well-formed node id and host")
    return data, *where


def accept(answer: Any, count: int, backend: str) -> list[Check]:
    """The `count` checks of a node's answer to one chunk, each marked with where it ran.

    Refuses (`ChunkRejected`) anything but `_check_chunk`'s JSON text holding a
    well-formed node id and host and exactly `count` valid checks from `backend`.
    """
    data, node, host = _identified(answer)
    name = f"Ray node {node[:12]} ({host})"
    checks = data.get("checks")
    if not isinstance(checks, list):
        raise ChunkRejected(name, "no list of checks")
    if len(checks) != count:
        raise ChunkRejected(name, f"{len(checks)} checks for {count} programs")
    accepted = []
    for position, item in enumerate(checks):
        if not isinstance(item, dict):
            raise ChunkRejected(name, f"check {position} is a {type(item).__name__}")
        try:
            check = Check.model_validate(item)
        except ValidationError as error:
            raise ChunkRejected(name, f"check {position} is not a verdict: {error}") from None
        if check.backend != backend:
            raise ChunkRejected(
                name, f"check {position} came from sandbox {check.backend!r}, not {backend!r}"
            )
        check.feedback = check.feedback[:FEEDBACK_CHARS]
        check.backend = f"ray:{backend}@{host}/{node[:12]}"
        accepted.append(check)
    return accepted


def _run_on_node(payload: dict[str, Any], backend: str) -> str:
    """Runs on a cluster node: one program run with the node's local sandbox worker.

    Answers JSON text: `{"node": <Ray node id>, "host": <hostname>, "run": {...}}`.
    """
    import ray

    from codeloop.sandbox.pool import run_program as run_locally

    run = run_locally(RunRequest.model_validate(payload), workers=1, backend=backend)
    return json.dumps(
        {
            "node": ray.get_runtime_context().get_node_id(),
            "host": socket.gethostname(),
            "run": run.model_dump(mode="json"),
        }
    )


def accept_run(answer: Any, backend: str) -> ProgramRun:
    """A node's answer to one program run, marked with where it ran; `ChunkRejected`
    for anything but `_run_on_node`'s JSON text with a valid run from `backend`."""
    data, node, host = _identified(answer)
    name = f"Ray node {node[:12]} ({host})"
    try:
        run = ProgramRun.model_validate(data.get("run"))
    except ValidationError as error:
        raise ChunkRejected(name, f"not a program run: {error}") from None
    if run.backend != backend:
        raise ChunkRejected(name, f"the run came from sandbox {run.backend!r}, not {backend!r}")
    run.backend = f"ray:{backend}@{host}/{node[:12]}"
    return run


_remotes: dict[tuple[Callable[..., str], int], Any] = {}


def _remote(ray: Any, function: Callable[..., str], max_retries: int) -> Any:
    """`function` as a Ray task of one CPU, made once per process (a server asks for
    one per request)."""
    key = (function, max_retries)
    if key not in _remotes:
        _remotes[key] = ray.remote(num_cpus=1, max_retries=max_retries)(function)
    return _remotes[key]


def run_program(
    request: RunRequest,
    *,
    address: str,
    backend: str,
    max_retries: int = 3,
    rerun_locally: bool = True,
) -> ProgramRun:
    """`pool.run_program` as one Ray task on the cluster at `address`.

    Ray retries the task when its worker or node dies (`max_retries`); when every try
    failed, or the answer is refused, the run is made once more in this process's local
    pool (`rerun_locally`), and only when that cannot run either is it an
    `environment_error` naming the fault: never an answer of the program's.
    """
    from codeloop.sandbox.pool import run_program as run_here

    ray = connect_ray(address)
    task = _remote(ray, _run_on_node, max_retries)
    try:
        return accept_run(ray.get(task.remote(request.model_dump(mode="json"), backend)), backend)
    except ChunkRejected as error:
        reason = str(error)
    except Exception as error:  # the task failed on every try: the cluster's fault
        reason = f"the Ray task for this run failed on every try: {error}"
    if rerun_locally:
        run = run_here(request, backend=backend)
        broken = [s for s in (run.compile, run.run) if s and s.status == "environment_error"]
        if not broken:
            return run
        reason += f"\nRerun locally: {broken[0].stderr}"
    step = Step(status="environment_error", stderr=reason[:FEEDBACK_CHARS])
    return ProgramRun(run=step, backend=f"ray:{backend}")


def check_many(
    requests: list[CheckRequest],
    *,
    address: str,
    backend: str,
    chunk: int = 8,
    in_flight: int | None = None,
    max_retries: int = 3,
    rerun_locally: bool = True,
    on_done: Callable[[int, Check], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[Check]:
    """`pool.check_many` fanned out over the Ray cluster at `address`.

    A chunk that failed on every Ray retry, or whose answer `accept` refused, is
    checked again in this process's local pool (`rerun_locally`; False: reported as
    an `environment_error` at once). A stopped batch leaves such chunks out of
    `Interrupted.done`, to be checked when it resumes.
    """
    from codeloop.sandbox.pool import Interrupted

    ray = connect_ray(address)
    remote = _remote(ray, _check_chunk, max_retries)
    chunks = [
        list(range(start, min(start + chunk, len(requests))))
        for start in range(0, len(requests), chunk)
    ]
    limit = in_flight or max(1, int(ray.cluster_resources().get("CPU", 1)))
    results: dict[int, Check] = {}
    failed: dict[int, str] = {}  # request index -> what went wrong with its chunk
    pending: dict[Any, list[int]] = {}
    waiting = list(reversed(chunks))
    stopped = False

    def done(index: int, check: Check) -> None:
        if index in results:  # never counted twice
            return
        results[index] = check
        if on_done is not None:
            on_done(index, check)

    while waiting or pending:
        while waiting and len(pending) < limit and not stopped:
            if stop is not None and stop():
                stopped = True
                break
            indices = waiting.pop()
            payload = [requests[i].model_dump(mode="json") for i in indices]
            pending[remote.remote(payload, backend)] = indices
        if not pending:
            break
        [ready], _rest = ray.wait(list(pending), num_returns=1)
        indices = pending.pop(ready)
        try:
            checks = accept(ray.get(ready), len(indices), backend)
        except ChunkRejected as error:
            failed.update(dict.fromkeys(indices, str(error)))
            continue
        except Exception as error:  # the task failed on every try: the cluster's fault
            reason = f"the Ray task for this chunk failed on every try: {error}"
            failed.update(dict.fromkeys(indices, reason))
            continue
        for index, check in zip(indices, checks, strict=True):
            done(index, check)
    if stopped:
        raise Interrupted(results)
    if failed:
        try:
            _rerun(requests, failed, backend, rerun_locally, done, stop)
        except Interrupted:
            raise Interrupted(dict(results)) from None
    return [results[index] for index in range(len(requests))]


def _rerun(
    requests: list[CheckRequest],
    failed: dict[int, str],
    backend: str,
    rerun_locally: bool,
    done: Callable[[int, Check], None],
    stop: Callable[[], bool] | None,
) -> None:
    """Check the requests of failed chunks once more in the local pool.

    A verdict of the rerun counts; an infrastructure failure of the rerun too (or
    no rerun) is an `environment_error` naming the node's fault, never a wrong answer.
    `Interrupted` passes through when `stop` asks.
    """
    from codeloop.sandbox.pool import Interrupted, get_pool

    indices = sorted(failed)

    def infrastructure(index: int, detail: str, where: str = f"ray:{backend}") -> Check:
        return Check(
            status="environment_error",
            feedback=f"{failed[index]}\n{detail}"[:FEEDBACK_CHARS],
            backend=where,
        )

    def rerun_done(position: int, check: Check) -> None:
        index = indices[position]
        if check.status == "environment_error" and not check.task_error:
            check = infrastructure(index, f"Rerun locally: {check.feedback}", check.backend)
        done(index, check)

    if rerun_locally:
        try:
            get_pool(backend).run([requests[i] for i in indices], rerun_done, stop)
        except Interrupted:
            raise
        except Exception as error:  # the local pool cannot run here either
            for index in indices:
                done(index, infrastructure(index, f"Rerunning it locally failed too: {error}"))
    detail = "The local rerun gave no verdict." if rerun_locally else "(not rerun locally)"
    for index in indices:  # `done` keeps the first verdict of each
        done(index, infrastructure(index, detail))
