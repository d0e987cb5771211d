"""gate: is the candidate adapter better on validation? A paired comparison.

The same validation tasks are answered by the retained model (baseline) and the
candidate, so each task is a pair: gained (failed, now passes), lost (passed, now
fails), with the exact McNemar p. What decides "promising" is the config's `[gate]`
rule, in `codeloop/evaluate/guard.py` (written down with its error rates in
docs/GUARD.md): `greedy` (gained - lost >= min_net_gain, macro pass@1 not lower, and
with `confirm_samples` the flips sampled again on both sides) or `paired` (every
validation task sampled on both sides; promising when the lower confidence bound of
the mean pass-rate gain is above 0). This phase asks for the samples the rule needs
(resumably, into the round's gate-confirm folder); `verdict` then reads saved files
only, so finish and `codeloop verify` recompute the very same gate.
"""

from __future__ import annotations

from typing import Any

from codeloop import store
from codeloop.evaluate import guard
from codeloop.evaluate.compare import compare, mcnemar_exact
from codeloop.loop import confirm

__all__ = ["compare", "mcnemar_exact", "promising", "run", "sample", "verdict"]

promising = guard.greedy_promising


def comparison(r) -> dict[str, Any]:
    """The greedy paired comparison of the round's baseline and candidate rows."""
    before = store.read(r.path("baseline-rows.json"))["rows"]
    after = store.read(r.path("candidate-rows.json"))["rows"]
    return compare(before, after)


def validation_ids(r) -> list[str]:
    """The round's validation task ids, in order."""
    return [task["id"] for task in r.assigned["validation"]]


def verdict(r, greedy: dict[str, Any]) -> tuple[bool, list[str], dict[str, Any] | None]:
    """(promising, reasons, evidence) from the saved rows and samples alone."""
    rule = r.config.gate
    ids = validation_ids(r)
    if rule.looks:
        return guard.gate_verdict(rule, greedy, confirm.saved_looks(r, ids), ids)
    sides = confirm.saved_passes(r, confirm.GATE, guard.gate_sample_ids(rule, greedy, ids))
    return guard.gate_verdict(rule, greedy, sides, ids)


def sample(r, greedy: dict[str, Any]) -> None:
    """Ask both models the samples the gate rule needs (resumably; none when it needs none).
    A sequential gate asks look by look and stops asking once a look decides."""
    rule = r.config.gate
    ids = validation_ids(r)
    wanted = set(guard.gate_sample_ids(rule, greedy, ids))
    if not wanted:
        return
    tasks = [task for task in r.tasks("validation") if task.id in wanted]
    adapters = {"parent": r.parent_path, "candidate": str(r.candidate_adapter)}
    if not rule.looks:
        confirm.sample(r, tasks, adapters, confirm.GATE)
        return
    previous = 0
    for k in rule.looks:
        if previous and not guard.gate_samples_needed(
            rule, confirm.saved_looks(r, ids, upto=previous), ids
        ):
            return
        confirm.sample(r, tasks, adapters, confirm.look_name(k), span=(previous, k))
        previous = k


def run(r, resume: bool) -> dict[str, Any]:
    candidate = r.result("candidate")
    if candidate.get("skipped"):
        return {"completed": True, "skipped": True, "reason": candidate.get("reason", "")}
    greedy = comparison(r)
    sample(r, greedy)
    promising_now, reasons, evidence = verdict(r, greedy)
    found = {} if evidence is None else {"confirmation": evidence}
    return {
        "completed": True,
        "skipped": False,
        "promising": promising_now,
        "reasons": reasons,
        "rule": r.config.gate.model_dump(mode="json"),
        **greedy,
        **found,
    }
