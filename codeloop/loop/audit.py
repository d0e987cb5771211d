"""audit-parent and audit-candidate: the full benchmark, under identical conditions.

Run when the gate is promising, or every `round.audit_every` rounds. The suite's
task list is fixed once per round (audit-tasks.json) so both sides answer the
same tasks, and each summary carries a binding (datasets, max tokens,
temperature, prompt, toolchains, engine, model, revision, precision, limits):
finish refuses to compare audits whose bindings differ.
"""

from __future__ import annotations

from typing import Any

from codeloop import recipe, store
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
    return {
        "completed": True,
        "skipped": False,
        "summary_sha256": store.sha256_file(folder / "summary.json"),
    }
