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
from codeloop.config import HumanEvalSource, HumanEvalXSource
from codeloop.loop.collect import Collector
from codeloop.loop.common import Round
from codeloop.sandbox.languages import toolchain_version
from codeloop.tasks import curriculum
from codeloop.tasks.schema import Task
from codeloop.tasks.sources import open_source
from codeloop.tasks.splits import assign_split


def due(r: Round) -> bool:
    gate = r.result("gate")
    if gate.get("skipped"):
        return False
    return bool(gate["promising"]) or r.number % r.config.round.audit_every == 0


def suite(r: Round, name: str) -> list[Task]:
    """Every task of the suite `name`, as its definition fixes them (before audit.limit).

    curriculum-test is variant 0 of every curriculum family in the session's test
    split, in every configured language: fixed by the seed, the split salt and
    fractions and the languages, never by how much of the pool has been built.
    """
    languages = r.config.tasks.languages
    if name == "curriculum-test":
        salt, fractions = r.config.tasks.salt, r.config.tasks.splits
        tasks = [
            task.with_split("test")
            for family in curriculum.families()
            if assign_split(f"curriculum/{family.name}", salt, fractions) == "test"
            for task in curriculum.render_problem(family, 0, r.config.seed, languages).tasks
        ]
    else:
        source = (
            HumanEvalSource(kind="humaneval")
            if name == "humaneval"
            else HumanEvalXSource(kind="humaneval-x", path=r.config.audit.humaneval_x_path)
        )
        opened = open_source(
            source, seed=r.config.seed, languages=languages, where=f"audit.suites ({name})"
        )
        tasks = [task.with_split("test") for p in opened.problems() for task in p.tasks]
    return tasks


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
