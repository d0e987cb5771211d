"""The guard's rules as pure functions, and their error rates where docs/GUARD.md states them.

The decision code is `codeloop/evaluate/guard.py`; the loop and bench/decision_sim.py
call it alike, so the rates asserted here (by the simulator's own draws, fixed seeds)
are those of the rule the loop runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from codeloop.config import AuditConfig, GateConfig
from codeloop.evaluate import guard

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import decision_sim


def test_paired_estimate_by_hand() -> None:
    parent = {"a": [True, True], "b": [False, False], "c": [True, False]}
    candidate = {"a": [True, False], "b": [False, False], "c": [True, True]}
    estimate = guard.paired_estimate(parent, candidate, ["a", "b", "c"])
    # per-task changes -0.5, 0, +0.5: mean 0, spread 0.25 over n - 1 = 2 -> se sqrt(0.25/3)
    assert estimate.change == 0.0
    assert estimate.standard_error == pytest.approx((0.25 / 3) ** 0.5)
    assert (estimate.parent_only, estimate.candidate_only, estimate.pairs) == (1, 1, 6)
    assert estimate.lower(0.05) == pytest.approx(-1.6448536 * (0.25 / 3) ** 0.5)


def test_paired_estimate_refuses_unpaired_samples() -> None:
    with pytest.raises(ValueError, match="same number"):
        guard.paired_estimate({"a": [True]}, {"a": [True, False]}, ["a"])


def _comparison(ids: list[str]) -> dict:
    return {
        "gained": 0, "lost": 0, "gained_ids": [], "lost_ids": [], "before": 0, "after": 0,
        "macro_before": 0.0, "macro_after": 0.0, "mcnemar_p": 1.0,
    }  # fmt: skip


def test_paired_audit_keeps_inside_the_margin_and_rejects_beyond_it() -> None:
    ids = [f"t{i}" for i in range(100)]
    rule = AuditConfig(rule="paired", confirm_samples=2, margin=0.02)
    same = {i: [True, False] for i in ids}
    kept, evidence = guard.audit_verdict(
        rule, _comparison(ids), {"parent": same, "candidate": same}, ids
    )
    assert kept and evidence["lower_bound"] == 0.0
    # 10 of 100 tasks lose one of two samples: change -5 points, clearly past -2.
    worse = {i: [False, False] if n < 10 else [True, False] for n, i in enumerate(ids)}
    kept, evidence = guard.audit_verdict(
        rule, _comparison(ids), {"parent": same, "candidate": worse}, ids
    )
    assert not kept and evidence["change"] == pytest.approx(-0.05)
    assert "lower bound" in guard.audit_reasons({"confirmation": evidence})


def test_paired_gate_needs_a_lower_bound_above_zero() -> None:
    ids = [f"t{i}" for i in range(50)]
    rule = GateConfig(rule="paired", confirm_samples=2)
    parent = {i: [False, False] for i in ids}
    assert guard.gate_sample_ids(rule, _comparison(ids), ids) == ids
    promising, reasons, _ = guard.gate_verdict(
        rule, _comparison(ids), {"parent": parent, "candidate": parent}, ids
    )
    assert not promising and "not shown" in reasons[0]
    better = {i: [True, False] if n % 2 else [False, False] for n, i in enumerate(ids)}
    promising, reasons, evidence = guard.gate_verdict(
        rule, _comparison(ids), {"parent": parent, "candidate": better}, ids
    )
    assert promising and not reasons and evidence["change"] == pytest.approx(0.25)


def test_the_paired_gate_needs_samples() -> None:
    with pytest.raises(ValueError, match="confirm_samples"):
        GateConfig(rule="paired")


def test_greedy_rules_sample_only_the_flips() -> None:
    ids = ["a", "b", "c"]
    flips = {**_comparison(ids), "gained": 1, "gained_ids": ["c"], "lost": 1, "lost_ids": ["a"]}
    assert guard.audit_sample_ids(AuditConfig(rule="confirmed"), flips, ids) == ["a", "c"]
    assert guard.audit_sample_ids(AuditConfig(rule="strict"), flips, ids) == []
    assert guard.audit_sample_ids(AuditConfig(rule="paired"), flips, ids) == ids
    # the greedy gate (net 0 < min_net_gain 1) is not promising: nothing to confirm
    assert guard.gate_sample_ids(GateConfig(confirm_samples=8), flips, ids) == []


def test_the_simulated_draws_share_answers_at_rate_rho() -> None:
    rng = np.random.default_rng(3)
    p = np.full(2000, 0.5)
    parent, candidate = decision_sim.draws(p, p, 4, 0.7, rng)
    agree = float(np.mean(parent == candidate))
    # shared with 0.7, else independent at 0.5: agree 0.7 + 0.3 * 0.5 = 0.85
    assert agree == pytest.approx(0.85, abs=0.02)
