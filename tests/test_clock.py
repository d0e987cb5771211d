"""codeloop/clock.py: what a phase waited on, counted once per kind."""

from __future__ import annotations

import time

import pytest

from codeloop import clock


def test_nested_timings_of_one_kind_count_once_and_kinds_add_apart() -> None:
    clock.reset()
    with clock.timed("check"):
        with clock.timed("check"):  # e.g. a check batch that re-runs some checks
            time.sleep(0.05)
        time.sleep(0.05)
    with clock.timed("generate"):
        time.sleep(0.02)
    spent = clock.spent()
    assert 0.1 <= spent["check"] < 0.2  # once, not 0.05 + 0.1
    assert 0.02 <= spent["generate"] < spent["check"]
    assert spent["load"] == 0.0
    clock.reset()
    assert clock.spent() == dict.fromkeys(clock.KINDS, 0.0)


def test_a_block_that_raises_is_still_counted_and_unknown_kinds_are_refused() -> None:
    clock.reset()
    with pytest.raises(RuntimeError), clock.timed("load"):
        time.sleep(0.02)
        raise RuntimeError("the engine did not start")
    assert clock.spent()["load"] >= 0.02
    with clock.timed("load"):  # the depth went back to 0: this block counts too
        time.sleep(0.02)
    assert clock.spent()["load"] >= 0.04
    with pytest.raises(ValueError, match="unknown clock kind"), clock.timed("compile"):
        pass
