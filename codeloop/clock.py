"""Where a phase's seconds go: loading a model, generating answers, checking programs.

Most of a round is either the engine or the sandbox, and which of them a phase waits
on decides whether a faster engine makes the round faster (a collect that waits on
compilers gains little from a faster decoder; docs/PERFORMANCE.md). Each phase runs in
a process of its own, and the phase runner writes this process's totals beside the
phase's result (`round-N/PHASE.clock.json`), so a round's time splits by what it
waited on. Only the outermost of nested timings of one kind counts, so a check that
calls another timed function is not counted twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

SUFFIX = ".clock.json"
"""A phase's clock file is `PHASE` + SUFFIX in its round's folder: timings, not an input
of the decision (finish leaves it out of the files it binds)."""

KINDS = ("load", "generate", "check")
"""What is timed: an engine starting (weights read, an adapter merged or applied),
answers generated, programs checked in the sandbox."""

_spent: dict[str, float] = dict.fromkeys(KINDS, 0.0)
_depth: dict[str, int] = dict.fromkeys(KINDS, 0)


@contextmanager
def timed(kind: str) -> Iterator[None]:
    """Add the block's wall seconds to `kind`'s total (outermost block of a kind only)."""
    if kind not in _spent:
        raise ValueError(f"unknown clock kind {kind!r}; kinds: {', '.join(KINDS)}")
    _depth[kind] += 1
    started = time.perf_counter()
    try:
        yield
    finally:
        _depth[kind] -= 1
        if _depth[kind] == 0:
            _spent[kind] += time.perf_counter() - started


def reset() -> None:
    """Start counting from zero (the phase runner does, before each phase)."""
    for kind in KINDS:
        _spent[kind] = 0.0


def spent() -> dict[str, float]:
    """Seconds per kind since the last `reset`, rounded to milliseconds."""
    return {kind: round(seconds, 3) for kind, seconds in _spent.items()}
