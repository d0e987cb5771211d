"""The keep/discard decision as pure functions: which tasks to sample, and what they say.

Every rule that decides a round lives here, over plain data (greedy comparisons from
`compare`, and each side's seeded sample verdicts per task id), so that the loop
(`loop/gate.py`, `loop/finish.py`) and the simulator that measures the rules' error
rates (`bench/decision_sim.py`) run the very same code. Nothing here reads a file,
asks a model or runs a program. The rules and their thresholds are written down, with
their operating characteristics, in docs/GUARD.md.

Gate rules (`gate.rule`), "is the candidate better on validation?":
  greedy   gained - lost >= min_net_gain and macro pass@1 not lower (one greedy answer per
           task); with `confirm_samples`, the flipped tasks are sampled on both sides and the
           gain must hold there, pooled (a one-sided exact binomial of discordant pairs).
  paired   every validation task is sampled `confirm_samples` times per side (same seed for
           sample i on both sides); promising when the one-sided (1 - confirm_alpha) lower
           bound of the mean per-task pass-rate gain is above 0. No task is selected, so
           nothing is confirmed on the tasks that were chosen because they flipped.
           With `looks` (group-sequential), the samples come in stages, and each look
           stops as soon as the gain's z clears `efficacy_z` (promising) or falls below
           `futility_z` (not promising); the last look decides. Most candidates are
           clearly good or clearly not long before the last stage.
Audit rules (`audit.rule`), "did the candidate lose nothing on the benchmark?":
  strict     the greedy candidate lost no task and the total is not lower (the seed's rule).
  confirmed  the greedy flips (when any was lost) are sampled on both sides; a loss counts
             when its discordant pairs are significantly the parent's (exact binomial),
             or pooled over all flips.
  paired     every audit task is sampled `confirm_samples` times per side; the candidate is
             kept when the one-sided (1 - confirm_alpha) lower bound of the mean per-task
             pass-rate change is above -margin: a non-inferiority test with a stated margin.
  likelihood no generation: the mean per-token log-likelihood each side gives every audit
             task's verified reference program (`evaluate/likelihood.py`); kept when the
             one-sided lower bound of the mean paired change is above -margin nats per
             token. A graded signal where pass rates are near 0, so it sees a collapse that
             a pass rate of 1.6% cannot; it does not see a model that keeps the likelihood
             of right programs and still decodes worse ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from math import comb, copysign, sqrt
from statistics import NormalDist
from typing import Any

from codeloop.config import AuditConfig, GateConfig

Passes = Mapping[str, list[bool]]
"""One side's seeded sample verdicts, per task id (sample i used the same seed on both sides)."""
Scores = Mapping[str, float]
"""One side's graded measure per task id (the likelihood audit: mean log-prob per token)."""


def one_sided_p(wins: int, losses: int) -> float:
    """P(X >= wins) for X ~ Binomial(wins + losses, 1/2): how likely this many of the
    discordant pairs go one way if both sides were equally good (1.0 with none)."""
    n = wins + losses
    if n == 0:
        return 1.0
    return sum(comb(n, i) for i in range(wins, n + 1)) / 2**n


# -- the paired estimate ---------------------------------------------------------------------


@dataclass(frozen=True)
class PairedEstimate:
    """The mean per-task pass-rate change (candidate - parent) over a fixed task set, with
    its standard error, from each task's seeded sample pairs.

    The standard error is the paired one over tasks (the spread of the per-task
    differences, as in Miller 2024, "Adding Error Bars to Evals"): at a true change of
    zero it is the sampling error of the mean, and where the change differs from task to
    task it grows with that spread, so a regression concentrated on a few tasks is judged
    more cautiously, never less.
    """

    tasks: int
    pairs: int
    parent_rate: float
    candidate_rate: float
    change: float
    standard_error: float
    parent_only: int
    candidate_only: int

    def lower(self, alpha: float) -> float:
        """The one-sided (1 - alpha) lower confidence bound of the change."""
        return self.change - NormalDist().inv_cdf(1 - alpha) * self.standard_error

    def to_json(self, alpha: float) -> dict[str, Any]:
        return {**asdict(self), "alpha": alpha, "lower_bound": self.lower(alpha)}


def paired_estimate(parent: Passes, candidate: Passes, ids: list[str]) -> PairedEstimate:
    """The paired estimate over `ids`; every task must have as many samples on both sides."""
    if not ids:
        return PairedEstimate(0, 0, 0.0, 0.0, 0.0, 0.0, 0, 0)
    differences: list[float] = []
    parent_rates: list[float] = []
    candidate_rates: list[float] = []
    pairs = parent_only = candidate_only = 0
    for task_id in ids:
        p, c = parent[task_id], candidate[task_id]
        if len(p) != len(c) or not p:
            raise ValueError(
                f"task {task_id}: {len(p)} parent and {len(c)} candidate samples; a paired "
                "estimate needs the same number (at least one) on both sides"
            )
        parent_rates.append(sum(p) / len(p))
        candidate_rates.append(sum(c) / len(c))
        differences.append(candidate_rates[-1] - parent_rates[-1])
        pairs += len(p)
        worse, better = _discordant(list(zip(p, c, strict=True)))
        parent_only, candidate_only = parent_only + worse, candidate_only + better
    n = len(ids)
    mean = sum(differences) / n
    spread = sum((d - mean) ** 2 for d in differences) / (n - 1) if n > 1 else 0.0
    return PairedEstimate(
        tasks=n,
        pairs=pairs,
        parent_rate=sum(parent_rates) / n,
        candidate_rate=sum(candidate_rates) / n,
        change=mean,
        standard_error=sqrt(spread / n),
        parent_only=parent_only,
        candidate_only=candidate_only,
    )


def paired_change(parent: Scores, candidate: Scores, ids: list[str]) -> PairedEstimate:
    """The paired estimate of a graded measure over `ids` (one value per task and side);
    `parent_rate`/`candidate_rate` are then the sides' means of that measure."""
    if not ids:
        return PairedEstimate(0, 0, 0.0, 0.0, 0.0, 0.0, 0, 0)
    missing = [i for i in ids if i not in parent or i not in candidate]
    if missing:
        raise ValueError(f"task {missing[0]}: no value on both sides; a paired change needs both")
    differences = [candidate[i] - parent[i] for i in ids]
    n = len(ids)
    mean = sum(differences) / n
    spread = sum((d - mean) ** 2 for d in differences) / (n - 1) if n > 1 else 0.0
    return PairedEstimate(
        tasks=n,
        pairs=n,
        parent_rate=sum(parent[i] for i in ids) / n,
        candidate_rate=sum(candidate[i] for i in ids) / n,
        change=mean,
        standard_error=sqrt(spread / n),
        parent_only=0,
        candidate_only=0,
    )


def _discordant(pairs: list[tuple[bool, bool]]) -> tuple[int, int]:
    """(parent alone passed, candidate alone passed) over (parent, candidate) pairs."""
    return sum(p and not c for p, c in pairs), sum(c and not p for p, c in pairs)


def _paired_evidence(rule: GateConfig | AuditConfig, estimate: PairedEstimate) -> dict:
    """What a paired rule records: its settings and the estimate with its lower bound."""
    return {
        "rule": "paired",
        "samples": rule.confirm_samples,
        "temperature": rule.confirm_temperature,
        **estimate.to_json(rule.confirm_alpha),
    }


# -- the gate --------------------------------------------------------------------------------


def greedy_promising(comparison: dict[str, Any], rule: GateConfig) -> tuple[bool, list[str]]:
    """The greedy gate's verdict and the reasons it failed (empty when promising)."""
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


def gate_sample_ids(rule: GateConfig, comparison: dict[str, Any], ids: list[str]) -> list[str]:
    """The validation tasks the gate samples on both sides (in `ids`' order)."""
    if rule.rule == "paired":
        return list(ids)
    if not rule.confirm_samples or not greedy_promising(comparison, rule)[0]:
        return []
    flipped = {*comparison["gained_ids"], *comparison["lost_ids"]}
    return [task_id for task_id in ids if task_id in flipped]


def _gate_flips(rule: GateConfig, comparison: dict[str, Any], sides: dict[str, Passes]):
    """Pooled over the greedy gate's flipped tasks (greedy pairs left out: they are why the
    tasks were chosen), the candidate must pass where the parent fails significantly more
    often than the other way."""
    tasks: list[dict[str, Any]] = []
    parent_only = candidate_only = 0
    for task_id in [*comparison["gained_ids"], *comparison["lost_ids"]]:
        pairs = list(zip(sides["parent"][task_id], sides["candidate"][task_id], strict=True))
        worse, better = _discordant(pairs)
        parent_only, candidate_only = parent_only + worse, candidate_only + better
        tasks.append(
            {
                "id": task_id,
                "flip": "gained" if task_id in comparison["gained_ids"] else "lost",
                "parent_passes": sum(p for p, _c in pairs),
                "candidate_passes": sum(c for _p, c in pairs),
                "pairs": len(pairs),
            }
        )
    pooled = one_sided_p(candidate_only, parent_only)
    return {
        "samples": rule.confirm_samples,
        "temperature": rule.confirm_temperature,
        "alpha": rule.confirm_alpha,
        "tasks": tasks,
        "pooled_parent_only": parent_only,
        "pooled_candidate_only": candidate_only,
        "pooled_p": pooled,
        "confirmed": pooled <= rule.confirm_alpha,
    }


def gate_verdict(
    rule: GateConfig,
    comparison: dict[str, Any],
    sides: dict[str, Passes],
    ids: list[str] | None = None,
) -> tuple[bool, list[str], dict[str, Any] | None]:
    """(promising, reasons it is not, the samples' evidence or None) for the gate.

    `comparison`: `compare(baseline_rows, candidate_rows)` over the validation tasks;
    `sides`: each side's samples of at least `gate_sample_ids(...)`; `ids`: every
    validation task id in order (needed by the paired rule).
    """
    if rule.rule == "paired" and rule.looks:
        outcome, _needed, evidence = _walk_looks(rule, sides, ids or [])
        if outcome is None:
            raise ValueError(f"the gate's look at {_needed} samples per side has no samples yet")
        reasons = [] if outcome else [_sequential_reason(evidence)]
        return outcome, reasons, evidence
    if rule.rule == "paired":
        wanted = gate_sample_ids(rule, comparison, ids or [])
        estimate = paired_estimate(sides["parent"], sides["candidate"], wanted)
        evidence = _paired_evidence(rule, estimate)
        lower = estimate.lower(rule.confirm_alpha)
        evidence["confirmed"] = promising = estimate.tasks > 0 and lower > 0
        reasons = [] if promising else [_paired_gate_reason(estimate, rule.confirm_alpha)]
        return promising, reasons, evidence
    promising, reasons = greedy_promising(comparison, rule)
    if not promising or not rule.confirm_samples:
        return promising, reasons, None
    evidence = _gate_flips(rule, comparison, sides)
    if evidence["confirmed"]:
        return True, [], evidence
    return (
        False,
        [
            f"the gain is not confirmed: sampled again on the {len(evidence['tasks'])} flipped "
            f"validation task(s), the candidate alone passed {evidence['pooled_candidate_only']} "
            f"and the parent alone {evidence['pooled_parent_only']} of "
            f"{sum(t['pairs'] for t in evidence['tasks'])} sample pairs "
            f"(p={evidence['pooled_p']:.3g} > {evidence['alpha']})"
        ],
        evidence,
    )


def gate_samples_needed(rule: GateConfig, sides: dict[str, Passes], ids: list[str]) -> int:
    """How many samples per side and task a sequential gate needs before it can decide: 0
    once the saved looks decide it (a gate without looks asks all its samples at once)."""
    if not rule.looks:
        return 0
    outcome, needed, _evidence = _walk_looks(rule, sides, ids)
    return 0 if outcome is not None else needed


Z_CERTAIN = 99.0
"""The z recorded when every task moved by the same amount (no spread: a certain change);
finite, so that the evidence stays plain JSON."""


def _z(estimate: PairedEstimate) -> float:
    """The gain over its standard error (+-Z_CERTAIN when every task moved alike, 0 when
    none moved)."""
    if estimate.standard_error > 0:
        return estimate.change / estimate.standard_error
    return 0.0 if estimate.change == 0 else copysign(Z_CERTAIN, estimate.change)


def _walk_looks(
    rule: GateConfig, sides: dict[str, Passes], ids: list[str]
) -> tuple[bool | None, int, dict[str, Any]]:
    """The sequential gate over the samples saved so far: (promising, or None while the
    next look's samples are missing; that look's samples per side; the evidence)."""
    looks: list[dict[str, Any]] = []
    estimate = paired_estimate({}, {}, [])
    for index, k in enumerate(rule.looks):
        if any(len(sides[side].get(i, [])) < k for side in ("parent", "candidate") for i in ids):
            return None, k, {"looks": looks}
        cut = {side: {i: list(sides[side][i][:k]) for i in ids} for side in ("parent", "candidate")}
        estimate = paired_estimate(cut["parent"], cut["candidate"], ids)
        z = _z(estimate)
        last = index == len(rule.looks) - 1
        if estimate.tasks and z > rule.efficacy_z:
            stop = "promising"
        elif last:
            stop = "not promising"
        elif rule.futility_z is not None and z < rule.futility_z:
            stop = "futile"
        else:
            stop = ""
        looks.append({"samples": k, "change": estimate.change, "z": z, "stop": stop})
        if stop:
            evidence = {
                **_paired_evidence(rule, estimate),
                "samples": k,
                "efficacy_z": rule.efficacy_z,
                "futility_z": rule.futility_z,
                "looks": looks,
                "confirmed": stop == "promising",
            }
            return stop == "promising", k, evidence
    raise AssertionError("the last look always stops")


def _sequential_reason(evidence: dict[str, Any]) -> str:
    last = evidence["looks"][-1]
    why = "futility bound" if last["stop"] == "futile" else "last look"
    return (
        f"the gain is not shown: at {last['samples']} sample pairs per task over "
        f"{evidence['tasks']} validation tasks the pass rate changed by "
        f"{100 * last['change']:+.1f} points, z = {last['z']:.2f} "
        f"(promising above {evidence['efficacy_z']}; stopped at the {why})"
    )


def _paired_gate_reason(estimate: PairedEstimate, alpha: float) -> str:
    return (
        f"the gain is not shown: over {estimate.tasks} validation tasks x "
        f"{estimate.pairs // max(estimate.tasks, 1)} sample pairs the pass rate changed by "
        f"{100 * estimate.change:+.1f} points "
        f"(standard error {100 * estimate.standard_error:.1f}); its {100 * (1 - alpha):.0f}% "
        f"lower bound {100 * estimate.lower(alpha):+.1f} is not above 0"
    )


# -- the audit -------------------------------------------------------------------------------


def audit_sample_ids(rule: AuditConfig, comparison: dict[str, Any], ids: list[str]) -> list[str]:
    """The audit tasks the audit samples on both sides (in `ids`' order)."""
    if rule.rule == "paired":
        return list(ids)
    if rule.rule in ("strict", "likelihood") or not comparison["lost_ids"]:
        return []  # without a greedy loss nothing needs confirming
    flipped = {*comparison["lost_ids"], *comparison["gained_ids"]}
    return [task_id for task_id in ids if task_id in flipped]


def _audit_flips(rule: AuditConfig, comparison: dict[str, Any], sides: dict[str, Passes]):
    """Which of the greedy audit's flips the samples confirm (the `confirmed` rule)."""
    flipped = [*comparison["lost_ids"], *comparison["gained_ids"]] if comparison["lost_ids"] else []
    tasks: list[dict[str, Any]] = []
    parent_only = candidate_only = 0
    for task_id in flipped:
        lost = task_id in comparison["lost_ids"]
        pairs = list(zip(sides["parent"][task_id], sides["candidate"][task_id], strict=True))
        pairs.append((lost, not lost))  # the greedy answers are a pair too
        worse, better = _discordant(pairs)
        parent_only, candidate_only = parent_only + worse, candidate_only + better
        p = one_sided_p(worse, better) if lost else one_sided_p(better, worse)
        tasks.append(
            {
                "id": task_id,
                "flip": "lost" if lost else "gained",
                "parent_passes": sum(p for p, _c in pairs),
                "candidate_passes": sum(c for _p, c in pairs),
                "pairs": len(pairs),
                "p": p,
                "counted": p <= rule.confirm_alpha,
            }
        )
    pooled = one_sided_p(parent_only, candidate_only)
    return {
        "rule": "confirmed",
        "samples": rule.confirm_samples,
        "temperature": rule.confirm_temperature,
        "alpha": rule.confirm_alpha,
        "tasks": tasks,
        "lost_ids": [t["id"] for t in tasks if t["flip"] == "lost" and t["counted"]],
        "gained_ids": [t["id"] for t in tasks if t["flip"] == "gained" and t["counted"]],
        "excused_ids": [t["id"] for t in tasks if not t["counted"]],
        "pooled_parent_only": parent_only,
        "pooled_candidate_only": candidate_only,
        "pooled_p": pooled,
        "pooled_worse": pooled <= rule.confirm_alpha,
    }


def audit_verdict(
    rule: AuditConfig,
    comparison: dict[str, Any],
    sides: dict[str, Passes],
    ids: list[str] | None = None,
) -> tuple[bool, dict[str, Any] | None]:
    """(clean: the audit found no loss, the samples' evidence or None).

    `comparison`: `compare(parent_rows, candidate_rows)` over the audit's tasks; `sides`:
    each side's samples of at least `audit_sample_ids(...)`; `ids`: every audit task id.
    """
    if rule.rule == "strict":
        return comparison["lost"] == 0 and comparison["after"] >= comparison["before"], None
    if rule.rule == "likelihood":
        raise ValueError("audit.rule = 'likelihood' is decided by likelihood_verdict")
    if rule.rule == "paired":
        estimate = paired_estimate(
            sides["parent"], sides["candidate"], audit_sample_ids(rule, comparison, ids or [])
        )
        lower = estimate.lower(rule.confirm_alpha)
        clean = estimate.tasks > 0 and lower > -rule.margin
        evidence = {**_paired_evidence(rule, estimate), "margin": rule.margin, "worse": not clean}
        return clean, evidence
    evidence = _audit_flips(rule, comparison, sides)
    return not evidence["lost_ids"] and not evidence["pooled_worse"], evidence


def likelihood_verdict(
    rule: AuditConfig, scores: dict[str, Scores], ids: list[str]
) -> tuple[bool, dict[str, Any]]:
    """(clean, evidence) of the likelihood audit: each side's mean per-token log-likelihood
    of every audit task's reference program, paired per task; clean when the one-sided
    (1 - confirm_alpha) lower bound of the mean change is above -margin (nats per token)."""
    estimate = paired_change(scores["parent"], scores["candidate"], ids)
    clean = estimate.tasks > 0 and estimate.lower(rule.confirm_alpha) > -rule.margin
    evidence = {
        "rule": "likelihood",
        "unit": "nats per token",
        **estimate.to_json(rule.confirm_alpha),
        "margin": rule.margin,
        "worse": not clean,
    }
    return clean, evidence


def audit_reasons(comparison: dict[str, Any]) -> str:
    """Which audit tasks (or which estimate) decided a rejection, with their evidence."""
    evidence = comparison.get("confirmation")
    if evidence is None:
        lost = ", ".join(comparison["lost_ids"]) or "none"
        total = f"{comparison['before']} -> {comparison['after']}"
        return f"lost {comparison['lost']} task(s) at greedy ({lost}), total {total}"
    if evidence["rule"] == "likelihood":
        return (
            f"over {evidence['tasks']} audit tasks the reference programs' mean log-likelihood "
            f"changed by {evidence['change']:+.3f} nats per token (standard error "
            f"{evidence['standard_error']:.3f}); its {100 * (1 - evidence['alpha']):.0f}% lower "
            f"bound {evidence['lower_bound']:+.3f} is not above the margin -{evidence['margin']}"
        )
    if evidence["rule"] == "paired":
        return (
            f"over {evidence['tasks']} audit tasks the sampled pass rate changed by "
            f"{100 * evidence['change']:+.1f} points (standard error "
            f"{100 * evidence['standard_error']:.1f}); its {100 * (1 - evidence['alpha']):.0f}% "
            f"lower bound {100 * evidence['lower_bound']:+.1f} is not above the margin "
            f"-{100 * evidence['margin']:.1f}"
        )
    parts = [
        f"{t['id']} confirmed lost (parent {t['parent_passes']}/{t['pairs']}, candidate "
        f"{t['candidate_passes']}/{t['pairs']}, p={t['p']:.3g})"
        for t in evidence["tasks"]
        if t["counted"] and t["flip"] == "lost"
    ]
    if evidence["pooled_worse"]:
        parts.append(
            f"pooled over {len(evidence['tasks'])} flipped task(s) the candidate is worse "
            f"({evidence['pooled_parent_only']} vs {evidence['pooled_candidate_only']} "
            f"discordant samples, p={evidence['pooled_p']:.3g})"
        )
    return "; ".join(parts)
