"""audit-parent and audit-candidate: the full benchmark, under identical conditions.

Run when the gate is promising, or every `round.audit_every` rounds. Under
`audit.rule = "likelihood"` each side also scores every audit task's verified reference
program (teacher forcing, `evaluate/likelihood.py`) into its folder's likelihood.json,
which is what finish then decides on; the greedy answers stay for the report. The suite's
task list is fixed once per round (audit-tasks.json) so both sides answer the
same tasks, and each summary carries a binding (datasets, max tokens,
temperature, prompt, toolchains, engine, model, revision, precision, limits):
finish refuses to compare audits whose bindings differ.
"""

from __future__ import annotations

from typing import Any

from codeloop import recipe, store
from codeloop.engines.base import adapter_sha256
from codeloop.evaluate import likelihood
from codeloop.evaluate.suites import suite_tasks
from codeloop.loop.collect import Collector
from codeloop.loop.common import Round
from codeloop.sandbox.languages import toolchain_version
from codeloop.tasks.schema import Task


def due(r: Round) -> bool:
    gate = r.result("gate")
    if gate.get("skipped"):
        return False
    return bool(gate["promising"]) or r.number % r.config.round.audit_every == 0


def suite(r: Round, name: str) -> list[Task]:
    """Every task of the suite `name`, as its definition fixes them (before audit.limit)."""
    return suite_tasks(r.config, name)


def audit_tasks(r: Round) -> list[Task]:
    """The round's audit tasks, chosen once and then read back.

    audit-tasks.json records, per suite, how many tasks its definition holds
    (`declared`) and how many the audit uses (`used`, fewer only under audit.limit:
    a smoke-sized audit, labelled so in the decision).
    """
    path = r.path("audit-tasks.json")
    saved = store.read(path, None)
    if saved is None:
        tasks, sizes = [], []
        for name in r.config.audit.suites:
            full = suite(r, name)
            used = full[: r.config.audit.limit] if r.config.audit.limit else full
            sizes.append({"name": name, "declared": len(full), "used": len(used)})
            tasks += used
        store.write_json(
            path,
            {
                "suites": r.config.audit.suites,
                "sizes": sizes,
                "tasks": [task.to_json() for task in tasks],
            },
        )
        saved = store.read(path)
    return [Task.model_validate(task) for task in saved["tasks"]]


def binding(r: Round) -> dict[str, Any]:
    engine = r.config.engine
    return {
        "datasets": {
            "suites": r.config.audit.suites,
            "limit": r.config.audit.limit,
            "tasks_sha256": store.sha256_file(r.path("audit-tasks.json")),
        },
        "max_output_tokens": engine.max_tokens,
        "temperature": 0.0,
        "prompt": recipe.prompt_sha256(),
        "engine": engine.kind,
        "model": engine.model,
        "revision": engine.revision,
        "precision": engine.precision,
        "toolchains": {lang: toolchain_version(lang) for lang in r.config.tasks.languages},
        "sandbox": r.config.sandbox.model_dump(mode="json", exclude={"workers"}),
    }


def run(r: Round, phase: str, resume: bool) -> dict[str, Any]:
    if not due(r):
        return {"completed": True, "skipped": True, "reason": "gate not promising and not due"}
    target = r.parent_path if phase == "audit-parent" else str(r.candidate_adapter)
    tasks = audit_tasks(r)
    folder = r.path(phase)
    collector = Collector(r, phase, tasks, target, explore=False, rows_file=folder / "rows.json")
    result = collector.run()
    result["binding"] = {**binding(r), "rows": result["binding"]}
    store.write_json(folder / "summary.json", result)
    found = {"summary_sha256": store.sha256_file(folder / "summary.json")}
    if r.config.audit.rule == "likelihood":
        found["likelihood_sha256"] = score(r, target, likelihood_tasks(r), folder)
    return {"completed": True, "skipped": False, **found}


LIKELIHOOD = "likelihood.json"
"""Each audit side's file of reference-program log-likelihoods (audit.rule = 'likelihood')."""


def likelihood_tasks(r: Round) -> list[Task]:
    """The tasks whose reference programs the likelihood audit scores (`likelihood.select`:
    `audit.likelihood_suites`, or else the round's own audit tasks)."""
    own = [] if r.config.audit.likelihood_suites else audit_tasks(r)
    return likelihood.select(r.config, own)


def likelihood_binding(r: Round, adapter: str | None) -> dict[str, Any]:
    """What a side's scores are bound to: the weights, the base model, the precision, the
    prompt and the chat rows' form; both sides' must agree but for the adapter."""
    cfg = r.config
    return {
        "adapter_sha256": adapter_sha256(adapter),
        "base_model": cfg.train.base_model or cfg.engine.model,
        "precision": cfg.engine.precision,
        "prompt": recipe.prompt_sha256(),
        "conversation": cfg.export.conversation,
    }


def _scored_before(r: Round, binding: dict[str, Any]) -> dict[str, Any] | None:
    """Scores of the same weights, tasks, model and prompt from an earlier round of the
    session (the scorer is deterministic, so they are what scoring again would give)."""
    for path in sorted(r.session.root.glob(f"round-*/audit-*/{LIKELIHOOD}")):
        saved = store.read(path, None)
        if saved is not None and saved.get("binding") == binding:
            return saved
    return None


def score(r: Round, adapter: str | None, tasks: list[Task], folder) -> str:
    """Score every audit task's reference under `adapter` (resumably: a file bound to
    the same weights and tasks is kept); the scores file's sha256."""
    path = folder / LIKELIHOOD
    expected = {
        **likelihood_binding(r, adapter),
        "tasks_sha256": store.sha256_json([task.id for task in tasks]),
    }
    saved = store.read(path, None)
    if saved is None or saved.get("binding") != expected:
        saved = _scored_before(r, expected)
        if saved is not None:  # a kept candidate is the next parent: its scores are paid for
            store.write_json(path, saved)
    if saved is None or saved.get("binding") != expected:
        cfg = r.config
        scores = likelihood.score_tasks(
            cfg.train.base_model or cfg.engine.model,
            adapter,
            cfg.engine.precision,
            tasks,
            cfg.export.conversation,
        )
        likelihood.write_scores(path, scores, tasks, likelihood_binding(r, adapter))
    return store.sha256_file(path)
