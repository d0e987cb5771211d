"""gate: is the candidate adapter promising on validation? A paired comparison.

The same validation tasks are answered by the retained model (baseline) and the
candidate, so each task is a pair: gained (failed, now passes), lost (passed, now
fails). The exact McNemar test asks how likely that split of the discordant pairs
is if the two models were equally good. The rule is the config's `[gate]`:
gained - lost >= min_net_gain, macro pass@1 not lower than baseline minus
max_macro_drop, and (if set) McNemar p <= max_p_value.
"""

from __future__ import annotations

from math import comb
from typing import Any

from codeloop.config import GateConfig
from codeloop.errors import IntegrityError


def mcnemar_exact(gained: int, lost: int) -> float:
    """Two-sided exact McNemar p: a binomial test of the discordant pairs at 1/2."""
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(gained, lost) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _macro(rows: list[dict[str, Any]]) -> float:
    by_language: dict[str, list[bool]] = {}
    for row in rows:
        by_language.setdefault(row["language"], []).append(bool(row["passed"]))
    rates = [sum(v) / len(v) for v in by_language.values() if v]
    return sum(rates) / len(rates) if rates else 0.0


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any]:
    """Paired comparison of two row lists over the same tasks."""
    if [row["id"] for row in before] != [row["id"] for row in after]:
        raise IntegrityError("baseline and candidate answered different tasks; cannot pair them")
    languages: dict[str, dict[str, int]] = {}
    gained = lost = 0
    for old, new in zip(before, after, strict=True):
        entry = languages.setdefault(
            old["language"], {"total": 0, "before": 0, "after": 0, "gained": 0, "lost": 0}
        )
        entry["total"] += 1
        entry["before"] += int(old["passed"])
        entry["after"] += int(new["passed"])
        if new["passed"] and not old["passed"]:
            entry["gained"] += 1
            gained += 1
        elif old["passed"] and not new["passed"]:
            entry["lost"] += 1
            lost += 1
    return {
        "total": len(before),
        "before": sum(r["passed"] for r in before),
        "after": sum(r["passed"] for r in after),
        "gained": gained,
        "lost": lost,
        "mcnemar_p": mcnemar_exact(gained, lost),
        "macro_before": _macro(before),
        "macro_after": _macro(after),
        "languages": dict(sorted(languages.items())),
    }


def promising(comparison: dict[str, Any], rule: GateConfig) -> tuple[bool, list[str]]:
    """The gate's verdict and the reasons it failed (empty when promising)."""
    reasons = []
    net = comparison["gained"] - comparison["lost"]
    if net < rule.min_net_gain:
        reasons.append(f"gained - lost = {net} < {rule.min_net_gain}")
    if comparison["macro_after"] < comparison["macro_before"] - rule.max_macro_drop - 1e-12:
        reasons.append(
            f"macro pass@1 fell from {comparison['macro_before']:.3f} "
            f"to {comparison['macro_after']:.3f}"
        )
    if rule.max_p_value is not None and comparison["mcnemar_p"] > rule.max_p_value:
        reasons.append(f"McNemar p = {comparison['mcnemar_p']:.3g} > {rule.max_p_value}")
    return not reasons, reasons


def run(r, resume: bool) -> dict[str, Any]:
    from codeloop import store

    candidate = r.result("candidate")
    if candidate.get("skipped"):
        return {"completed": True, "skipped": True, "reason": candidate.get("reason", "")}
    before = store.read(r.path("baseline-rows.json"))["rows"]
    after = store.read(r.path("candidate-rows.json"))["rows"]
    comparison = compare(before, after)
    verdict, reasons = promising(comparison, r.config.gate)
    return {
        "completed": True,
        "skipped": False,
        "promising": verdict,
        "reasons": reasons,
        "rule": r.config.gate.model_dump(mode="json"),
        **comparison,
    }
