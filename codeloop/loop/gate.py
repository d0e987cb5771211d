"""gate: is the candidate adapter promising on validation? A paired comparison.

The same validation tasks are answered by the retained model (baseline) and the
candidate, so each task is a pair: gained (failed, now passes), lost (passed, now
fails). The exact McNemar test asks how likely that split of the discordant pairs
is if the two models were equally good. The rule is the config's `[gate]`:
gained - lost >= min_net_gain, macro pass@1 not lower than baseline minus
max_macro_drop, and (if set) McNemar p <= max_p_value.
"""

from __future__ import annotations

from typing import Any

from codeloop.config import GateConfig
from codeloop.evaluate.compare import compare, mcnemar_exact

__all__ = ["compare", "mcnemar_exact", "promising", "run"]


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
