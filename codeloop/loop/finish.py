"""finish: accept or reject the candidate, record why, and keep the session's status.

Accept only if the gate was promising and the audit found no loss. What a loss is
depends on `audit.rule`, decided in `codeloop/evaluate/guard.py` (docs/GUARD.md):
`strict` (the seed's rule, written for a 790-task audit): the greedy candidate lost no
task the retained model solved and the audit total is not lower; `confirmed`: each
flipped task is sampled again on both sides and counts only when the candidate is
significantly worse there, or pooled over all flips; `paired`: every audit task is
sampled on both sides and the mean pass-rate change must be shown above -margin. The
decision records the comparisons (the gate's recomputed from its rows and samples, not
copied from gate.json), the evidence, the sha256 of every input file and the
limitations. It is recomputed from the saved rows alone (`decide`), so `codeloop
verify` can check it.
A rejected adapter's weights and checkpoints are deleted; its reports stay.
"""

from __future__ import annotations

import shutil
from typing import Any

from codeloop import clock, store
from codeloop.errors import IntegrityError
from codeloop.evaluate import guard
from codeloop.evaluate.compare import compare
from codeloop.loop import conditions, confirm, gate
from codeloop.loop.audit import LIKELIHOOD, audit_tasks, due, likelihood_tasks
from codeloop.loop.audit import suite as audit_suite
from codeloop.loop.common import Round, failpoint, status

LIMITATIONS = [
    "Validation and benchmark tests are reused development checks, not proof of general "
    "coding quality.",
    "Fresh validation problem families are reserved before training and never enter replay.",
]
_BINDING_KEYS = (
    "datasets",
    "max_output_tokens",
    "temperature",
    "prompt",
    "engine",
    "model",
    "revision",
    "precision",
    "toolchains",
    "sandbox",
)
_VOLATILE = ("progress.json", "finish.json")


def audit_sizes(r: Round) -> list[dict[str, Any]]:
    """The audit's suites as audit-tasks.json recorded them, checked against their
    definitions now: an audit smaller than declared, or empty, is never compared."""
    saved = store.read(r.path("audit-tasks.json"))
    sizes = saved.get("sizes")
    if not r.config.audit.suites and saved.get("suites") == [] and not saved["tasks"]:
        return []  # no greedy answers: the likelihood rule's references are the audit
    if not saved["tasks"] or not sizes:
        raise IntegrityError(
            f"{r.path('audit-tasks.json')}: the audit holds no task (or no record of its "
            "suites' sizes); an empty audit proves nothing"
        )
    if [entry["name"] for entry in sizes] != list(r.config.audit.suites):
        raise IntegrityError(
            f"{r.path('audit-tasks.json')}: audited suites "
            f"{[entry['name'] for entry in sizes]} differ from audit.suites "
            f"{list(r.config.audit.suites)}"
        )
    limit = r.config.audit.limit
    for entry in sizes:
        declared = len(audit_suite(r, entry["name"]))
        wanted = min(declared, limit) if limit else declared
        if entry["declared"] != declared or entry["used"] != wanted or not entry["used"]:
            raise IntegrityError(
                f"{r.path('audit-tasks.json')}: suite {entry['name']} has {entry['used']} of "
                f"{entry['declared']} tasks recorded, but its definition gives {wanted} of "
                f"{declared}; the audit cannot be smaller than declared"
            )
    if sum(entry["used"] for entry in sizes) != len(saved["tasks"]):
        raise IntegrityError(f"{r.path('audit-tasks.json')}: task list and sizes disagree")
    return sizes


def _audit(r: Round, phase: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    summary_file = r.path(phase) / "summary.json"
    summary = store.read(summary_file)
    rows = store.read(r.path(phase) / "rows.json")["rows"]
    expected = len(store.read(r.path("audit-tasks.json"))["tasks"])
    if not summary.get("completed") or summary["total"] != expected or len(rows) != expected:
        raise IntegrityError(
            f"{summary_file}: incomplete audit ({summary.get('total')} of {expected} tasks); "
            "promotion needs the whole benchmark"
        )
    if summary["passed"] != sum(row["passed"] for row in rows):
        raise IntegrityError(f"{summary_file}: summary differs from its rows")
    return summary, rows


def _audit_comparison(r: Round) -> dict[str, Any]:
    """The greedy audit's paired comparison, refused when its conditions differ."""
    (parent, parent_rows), (candidate, candidate_rows) = (
        _audit(r, "audit-parent"),
        _audit(r, "audit-candidate"),
    )
    differing = [
        key for key in _BINDING_KEYS if parent["binding"].get(key) != candidate["binding"].get(key)
    ]
    if differing:
        raise IntegrityError(
            f"{r.folder}: audit conditions differ between parent and candidate "
            f"({', '.join(differing)}); the audits cannot be compared"
        )
    return compare(parent_rows, candidate_rows)


def _audit_ids(r: Round) -> list[str]:
    return [task["id"] for task in store.read(r.path("audit-tasks.json"))["tasks"]]


def confirm_flips(r: Round) -> None:
    """Sample both sides on the audit tasks the audit rule asks for (before `decide`,
    which reads the samples only): the greedy flips under `confirmed`, all under `paired`."""
    if r.result("gate").get("skipped") or not due(r):
        return
    greedy = _audit_comparison(r)
    wanted = set(guard.audit_sample_ids(r.config.audit, greedy, _audit_ids(r)))
    if not wanted:
        return
    tasks = [task for task in audit_tasks(r) if task.id in wanted]
    confirm.sample(r, tasks, {"parent": r.parent_path, "candidate": str(r.candidate_adapter)})


def saved_likelihoods(r: Round) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Both audit sides' reference scores, with the ids scored, refused unless each file
    scores exactly the audit's scorable tasks, the sides agree on everything but the
    adapter, and each side's adapter is the one its greedy audit answered with."""
    tasks = likelihood_tasks(r)
    ids = [task.id for task in tasks]
    scores: dict[str, dict[str, float]] = {}
    bindings = {}
    for side, phase in (("parent", "audit-parent"), ("candidate", "audit-candidate")):
        path = r.path(phase) / LIKELIHOOD
        data = store.read(path, None)
        if data is None:
            raise IntegrityError(f"{path}: no likelihood scores; run the {phase} phase again")
        found = [row["id"] for row in data["scores"]]
        binding = data.get("binding") or {}
        answered = store.read(r.path(phase) / "summary.json")["binding"]["rows"]
        if found != ids or binding.get("tasks_sha256") != store.sha256_json(
            [task.id for task in tasks]
        ):
            raise IntegrityError(f"{path}: scores {len(found)} tasks, the audit {len(ids)}")
        if binding.get("adapter_sha256") != answered.get("adapter_sha256"):
            raise IntegrityError(
                f"{path}: scored with other weights than {phase}'s answers; it cannot decide"
            )
        scores[side] = {row["id"]: float(row["mean_logprob"]) for row in data["scores"]}
        bindings[side] = {k: v for k, v in binding.items() if k != "adapter_sha256"}
    if bindings["parent"] != bindings["candidate"]:
        raise IntegrityError(f"{r.folder}: the two sides' likelihoods were scored differently")
    return scores, ids


_VALIDATION_KEYS = (
    "gained",
    "lost",
    "gained_ids",
    "lost_ids",
    "mcnemar_p",
    "macro_before",
    "macro_after",
    "languages",
)


def _validation(r: Round, recorded: dict[str, Any]) -> dict[str, Any]:
    """The gate recomputed from the round's validation rows and samples; refused when
    gate.json's verdict or numbers say otherwise, so an edited gate cannot decide."""
    greedy = gate.comparison(r)
    verdict, _reasons, evidence = gate.verdict(r, greedy)
    if verdict != bool(recorded["promising"]):
        raise IntegrityError(
            f"{r.path('gate.json')}: says promising = {recorded['promising']}, but the round's "
            f"validation rows and samples give {verdict}"
        )
    differing = [key for key in _VALIDATION_KEYS if recorded.get(key) != greedy[key]]
    if differing or recorded.get("confirmation") != evidence:
        raise IntegrityError(
            f"{r.path('gate.json')}: its {', '.join(differing) or 'confirmation'} differ(s) "
            "from what the round's validation rows and samples give"
        )
    found = {key: greedy[key] for key in _VALIDATION_KEYS}
    return found if evidence is None else {**found, "confirmation": evidence}


def decide(r: Round) -> dict[str, Any]:
    """The round's decision, from its saved files alone (no model, no sandbox)."""
    recorded = r.result("gate")
    comparisons: dict[str, Any] = {}
    accepted = False
    if not recorded.get("skipped"):
        comparisons["validation"] = _validation(r, recorded)
        if due(r):
            audit = _audit_comparison(r)
            sizes = audit_sizes(r)
            audit["suites"] = sizes
            audit["smoke"] = any(entry["used"] < entry["declared"] for entry in sizes)
            audit["rule"] = r.config.audit.rule
            ids = _audit_ids(r)
            if r.config.audit.rule == "likelihood":
                scores, scored = saved_likelihoods(r)
                clean, evidence = guard.likelihood_verdict(r.config.audit, scores, scored)
            else:
                sides = confirm.saved_passes(
                    r, confirm.AUDIT, guard.audit_sample_ids(r.config.audit, audit, ids)
                )
                clean, evidence = guard.audit_verdict(r.config.audit, audit, sides, ids)
            if evidence is not None:
                audit["confirmation"] = evidence
            comparisons["audit"] = audit
            accepted = bool(recorded["promising"]) and clean
    if accepted:
        decision = "Candidate accepted after validation and full audit"
    elif recorded.get("skipped"):
        decision = "More verified examples needed; continuing collection"
    elif not recorded["promising"]:
        decision = "Candidate rejected at the validation gate; retained model unchanged"
    else:
        decision = "Candidate rejected by the full audit; retained model unchanged"
    audit = comparisons.get("audit")
    if audit and not accepted and recorded.get("promising"):
        decision += f": {guard.audit_reasons(audit)}"
    if audit and audit["smoke"]:
        used = sum(entry["used"] for entry in audit["suites"])
        declared = sum(entry["declared"] for entry in audit["suites"])
        decision += f" (smoke-sized audit: {used} of {declared} tasks, audit.limit)"
    return {"accepted": accepted, "decision": decision, "comparisons": comparisons}


def run(r: Round, resume: bool) -> dict[str, Any]:
    confirm_flips(r)
    verdict = decide(r)
    parent = r.parent
    adapter = r.candidate_adapter
    retained = f"{r.folder.name}/adapter" if verdict["accepted"] else parent
    inputs = {
        str(path.relative_to(r.session.root)): store.sha256_file(path)
        for path in sorted(r.folder.rglob("*.json"))
        # The adapter folder is bound through train.json's adapter_sha256 (its weights
        # and config); training.json beside them holds timings, not inputs, as do the
        # phases' clock files; the generation records say how answers were asked, which
        # a resumed phase splits otherwise (the digest covers them).
        if path.name not in _VOLATILE
        and not path.name.endswith((clock.SUFFIX, conditions.SUFFIX))
        and path.relative_to(r.folder).parts[0] != "adapter"
    }
    if not verdict["accepted"] and adapter.exists():
        for child in adapter.glob("checkpoint-*"):
            shutil.rmtree(child, ignore_errors=True)
        (adapter / "adapter_model.safetensors").unlink(missing_ok=True)
    failpoint("finish-after-weights")
    current = status(r.session)
    history = [entry for entry in current.get("history", []) if entry["round"] != r.number]
    history.append(
        {
            "round": r.number,
            "accepted": verdict["accepted"],
            "decision": verdict["decision"],
            "retained_adapter": retained,
        }
    )
    store.write_json(
        r.session.status,
        {
            **current,
            "retained_adapter": retained,
            "history": sorted(history, key=lambda e: e["round"]),
        },
    )
    failpoint("finish-after-status")
    return {
        "completed": True,
        **verdict,
        "retained_adapter": retained,
        "inputs": inputs,
        "limitations": LIMITATIONS,
    }
