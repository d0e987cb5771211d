"""Round folders shaped as the phases write them, for the display tests
(tests/test_loop_display.py) and the fake phase process those tests start: real phase
outputs where no model or sandbox is needed (`collect.summary`, `run_phase`), the rest
written by hand in the phase's shape."""

from __future__ import annotations

import textwrap
from pathlib import Path

from codeloop import config as session_config
from codeloop import store
from codeloop.loop.audit import suite
from codeloop.loop.collect import summary
from codeloop.loop.common import Round
from codeloop.loop.phases import run_phase

BINDING = {"tasks_sha256": "t", "adapter_sha256": None, "prompt_sha256": "p"}


def make_session(root: Path, languages: list[str], **tables: str) -> store.SessionPaths:
    """A session folder with a config (defaults but for `languages` and the given tables)."""
    text = f"[tasks]\nlanguages = {languages!r}\n".replace("'", '"')
    for name, body in tables.items():
        text += f"\n[{name}]\n{textwrap.dedent(body)}"
    config = session_config.parse(text, "display test config")
    root.mkdir(parents=True, exist_ok=True)
    store.write_text(root / "config.toml", session_config.dumps(config))
    return store.SessionPaths(root)


def tasks(split: str, counts: dict[str, int], number: int) -> list[dict]:
    return [
        {"id": f"r{number}-{split}-{lang}-{i}", "language": lang, "family": f"{lang}-{split}-{i}"}
        for lang, n in counts.items()
        for i in range(n)
    ]


def rows(assigned: list[dict], passed: set[str]) -> list[dict]:
    """Rows as the Collector writes them (the fields the summaries and the gate read)."""
    return [
        {
            "id": task["id"],
            "language": task["language"],
            "family": task["family"],
            "split": "train",
            "passed": task["id"] in passed,
            "status": "passed" if task["id"] in passed else "wrong_answer",
        }
        for task in assigned
    ]


def answered(folder: Path, phase: str, assigned: list[dict], passed: set[str]) -> None:
    """PHASE-rows.json and PHASE.json of an answering phase, via the real summary."""
    found = rows(assigned, passed)
    store.write_json(folder / f"{phase}-rows.json", {"binding": BINDING, "rows": found})
    store.write_json(
        folder / f"{phase}.json",
        {
            **summary(found, BINDING),
            "rows_sha256": store.sha256_file(folder / f"{phase}-rows.json"),
        },
    )


def prepared(paths: store.SessionPaths, number: int, train: dict, validation: dict) -> Path:
    folder = paths.round(number)
    assigned = {
        "train": tasks("train", train, number),
        "validation": tasks("validation", validation, number),
        "parent": store.read(paths.status, {"retained_adapter": None})["retained_adapter"],
        "fixed_ids": [],
    }
    store.write_json(folder / "tasks.json", assigned)
    store.write_json(
        folder / "prepare.json",
        {
            "completed": True,
            "tasks_sha256": store.sha256_file(folder / "tasks.json"),
            "train": len(assigned["train"]),
            "validation": len(assigned["validation"]),
        },
    )
    return folder


def exported(folder: Path, languages: dict[str, int], ready: bool, reason: str) -> None:
    """export.json as export.run returns it (train.jsonl itself is not read here)."""
    store.write_json(
        folder / "export.json",
        {
            "completed": True,
            "ready": ready,
            "reason": reason,
            "rows": sum(languages.values()),
            "languages": languages,
            "without_rows": [lang for lang, n in languages.items() if n == 0],
            "balance": "equal",
            "data_sha256": "0" * 64,
            "dropped_too_long": 0,
        },
    )


def trained_round(
    paths: store.SessionPaths, number: int, baseline: set[str], candidate: set[str]
) -> Path:
    """A round that trained: collect, export, baseline, train and candidate written; the
    gate and the audits (skipped when not due) run for real; finish is left to the caller."""
    folder = prepared(paths, number, {"python": 2, "javascript": 2}, {"python": 3, "javascript": 3})
    assigned = store.read(folder / "tasks.json")
    answered(folder, "collect", assigned["train"], {f"r{number}-train-python-0"})
    exported(folder, {"python": 4, "javascript": 4}, True, "enough verified rows")
    answered(folder, "baseline", assigned["validation"], baseline)
    store.write_json(
        folder / "train.json",
        {"completed": True, "skipped": False, "steps": 2, "adapter_sha256": "a" * 64},
    )
    answered(folder, "candidate", assigned["validation"], candidate)
    run_phase(paths.root, number, "gate")
    return folder


def v(number: int, language: str, *indexes: int) -> set[str]:
    return {f"r{number}-validation-{language}-{i}" for i in indexes}


def audited(folder: Path, parent: int, candidate: int) -> None:
    """The two audit summaries of a due audit (4 Python tasks), as audit.run writes them;
    the recorded sizes are the real suite's (the config's audit.limit is 4)."""
    audit_tasks = tasks("test", {"python": 4}, 0)
    paths = store.SessionPaths(folder.parent)
    r = Round(paths, session_config.load(paths.config), int(folder.name.split("-")[1]))
    declared = len(suite(r, "curriculum-test"))
    store.write_json(
        folder / "audit-tasks.json",
        {
            "suites": ["curriculum-test"],
            "sizes": [{"name": "curriculum-test", "declared": declared, "used": 4}],
            "tasks": audit_tasks,
        },
    )
    binding = {"datasets": {"suites": ["curriculum-test"]}, "model": "m", "engine": "replay"}
    for phase, passed in (("audit-parent", parent), ("audit-candidate", candidate)):
        found = rows(audit_tasks, {t["id"] for t in audit_tasks[:passed]})
        store.write_json(folder / phase / "rows.json", {"binding": BINDING, "rows": found})
        store.write_json(
            folder / phase / "summary.json", {**summary(found, BINDING), "binding": binding}
        )
        store.write_json(
            folder / f"{phase}.json",
            {
                "completed": True,
                "skipped": False,
                "summary_sha256": store.sha256_file(folder / phase / "summary.json"),
            },
        )
