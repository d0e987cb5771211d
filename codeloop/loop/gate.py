"""gate: is the candidate adapter promising on validation? A paired comparison.

The same validation tasks are answered by the retained model (baseline) and the
candidate, so each task is a pair: gained (failed, now passes), lost (passed, now
fails). The exact McNemar test asks how likely that split of the discordant pairs
is if the two models were equally good. The rule is the config's `[gate]`:
gained - lost >= min_net_gain, macro pass@1 not lower than baseline minus
max_macro_drop, and (if set) McNemar p <= max_p_value. With `confirm_samples`, a gate
the greedy counts call promising must also see its gain confirmed by seeded samples of
both models on the flipped tasks (`confirm.gate_evidence`): one greedy answer per task
flips on any change of weights, so greedy gains alone also promote a candidate whose
weights moved and whose skill did not.
"""

from __future__ import annotations

from typing import Any

from codeloop.config import GateConfig
from codeloop.evaluate.compare import compare, mcnemar_exact
from codeloop.loop import confirm

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
    found: dict[str, Any] = {}
    if verdict and r.config.gate.confirm_samples:
        found["confirmation"] = evidence = sample_flips(r, comparison)
        verdict, reasons = confirmed(evidence)
    return {
        "completed": True,
        "skipped": False,
        "promising": verdict,
        "reasons": reasons,
        "rule": r.config.gate.model_dump(mode="json"),
        **comparison,
        **found,
    }


def sample_flips(r, comparison: dict[str, Any]) -> dict[str, Any]:
    """Sample both models on the validation tasks `comparison` flipped (resumably, into
    the round's gate-confirm folder) and return the pooled evidence."""
    flipped = {*comparison["gained_ids"], *comparison["lost_ids"]}
    tasks = [task for task in r.tasks("validation") if task.id in flipped]
    adapters = {"parent": r.parent_path, "candidate": str(r.candidate_adapter)}
    confirm.sample(r, tasks, adapters, confirm.GATE)
    return confirm.gate_evidence(r, comparison)


def confirmed(evidence: dict[str, Any]) -> tuple[bool, list[str]]:
    """The gate's verdict once its flips were sampled, and why not when it fails."""
    if evidence["confirmed"]:
        return True, []
    return False, [
        f"the gain is not confirmed: sampled again on the {len(evidence['tasks'])} flipped "
        f"validation task(s), the candidate alone passed {evidence['pooled_candidate_only']} "
        f"and the parent alone {evidence['pooled_parent_only']} of "
        f"{sum(t['pairs'] for t in evidence['tasks'])} sample pairs "
        f"(p={evidence['pooled_p']:.3g} > {evidence['alpha']})"
    ]
