"""Sandbox checks across a Ray cluster: chunks of a batch as Ray tasks, each node's own sandbox.

A chunk of check requests is one Ray task that needs one CPU; on whichever node
Ray places it, the task checks its chunk with that node's local sandbox worker
(`pool.check_many`, so the verdict is the one a local run gives: the same code,
the same isolation). Results are put back by request index, so a chunk that Ray
retries after its worker or node died (`max_retries`) is counted once; a chunk
that still fails after its retries is reported as an environment error, never
as a wrong answer. At most `in_flight` chunks run at a time (default: the
cluster's CPUs), so a stop request is honoured before the next chunk starts.

Every node needs codeloop installed with the same toolchains (`codeloop doctor`
on each), as for any Ray job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from codeloop.errors import ConfigError
from codeloop.sandbox.check import Check, CheckRequest

_connected: dict[str, Any] = {}


def _ray(address: str) -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "cluster.address is set but Ray is not installed: pip install 'codeloop[ray]'"
        ) from None
    if _connected.get("address") != address:
        if ray.is_initialized():
            ray.shutdown()
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        _connected["address"] = address
    return ray


def _check_chunk(payload: list[dict[str, Any]], backend: str) -> list[dict[str, Any]]:
    """Runs on a cluster node: check the chunk with the node's local sandbox worker."""
    from codeloop.sandbox.pool import check_many

    requests = [CheckRequest.model_validate(item) for item in payload]
    return [check.model_dump() for check in check_many(requests, workers=1, backend=backend)]


def check_many(
    requests: list[CheckRequest],
    *,
    address: str,
    backend: str,
    chunk: int = 8,
    in_flight: int | None = None,
    max_retries: int = 3,
    on_done: Callable[[int, Check], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[Check]:
    """`pool.check_many` fanned out over the Ray cluster at `address`."""
    from codeloop.sandbox.pool import Interrupted

    ray = _ray(address)
    remote = ray.remote(num_cpus=1, max_retries=max_retries)(_check_chunk)
    chunks = [
        list(range(start, min(start + chunk, len(requests))))
        for start in range(0, len(requests), chunk)
    ]
    limit = in_flight or max(1, int(ray.cluster_resources().get("CPU", 1)))
    results: dict[int, Check] = {}
    pending: dict[Any, list[int]] = {}
    waiting = list(reversed(chunks))
    stopped = False
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
            checks = [Check.model_validate(item) for item in ray.get(ready)]
        except Exception as error:  # the chunk failed on every try: the cluster's fault
            checks = [
                Check(
                    status="environment_error",
                    feedback=f"a cluster node could not check this program: {error}"[:2000],
                    backend=f"ray:{backend}",
                )
                for _ in indices
            ]
        for index, check in zip(indices, checks, strict=True):
            if index in results:  # never counted twice
                continue
            results[index] = check
            if on_done is not None:
                on_done(index, check)
    if stopped:
        raise Interrupted(results)
    return [results[index] for index in range(len(requests))]
