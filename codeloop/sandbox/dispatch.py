"""Where a batch of checks runs: this machine's worker pool (`pool`), or a Ray cluster
(`cluster`) when the session configures one. The one `check_many` callers use; the
cluster builds on the local pool (a node checks its chunk with it), so routing lives
above both rather than in the pool."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from codeloop import clock
from codeloop.sandbox import cluster, pool
from codeloop.sandbox.request import Check, CheckRequest

_cluster: dict[str, object] = {}


def use_cluster(address: str | None, chunk: int = 8) -> None:
    """Send this process's later `check_many` batches to the Ray cluster at `address`.

    None goes back to the local pool. A phase process calls it with the session's
    `[cluster]` config, so every check of the round (collect, export, audits) fans out.
    """
    _cluster.clear()
    if address:
        _cluster.update(address=address, chunk=chunk)


def check_many(
    requests: Iterable[CheckRequest],
    *,
    workers: int | None = None,
    backend: str = "bwrap",
    on_done: Callable[[int, Check], None] | None = None,
    stop: Callable[[], bool] | None = None,
    fresh: bool = False,
) -> list[Check]:
    """Check every request in parallel; results in the order of `requests`.

    `stop` is asked before each check starts; once it answers True no further check
    starts and `Interrupted` is raised with the checks that finished. With a cluster
    (`use_cluster`), the batch fans out over Ray (`cluster.check_many`). With `fresh`,
    the local workers the batch uses are restarted first (on a cluster every chunk is
    a new Ray task anyway, whose node restarts a worker that died).
    """
    with clock.timed("check"):
        if _cluster:
            return cluster.check_many(
                list(requests),
                address=str(_cluster["address"]),
                backend=backend,
                chunk=int(_cluster["chunk"]),  # type: ignore[call-overload]
                on_done=on_done,
                stop=stop,
            )
        return pool.check_many(
            requests, workers=workers, backend=backend, on_done=on_done, stop=stop, fresh=fresh
        )
