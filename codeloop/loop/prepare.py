"""prepare: fresh training tasks and validation tasks from other families.

Train tasks are ones no earlier round and no development set used. Validation is
the fixed development set (chosen once, kept in development.json) plus fresh dev
tasks each round. The pool is extended with validated batches until there are
enough tasks, and no problem family may appear on both sides.
"""

from __future__ import annotations

import shutil
from typing import Any

from codeloop import store
from codeloop.errors import ConfigError, IntegrityError, SandboxEnvironmentError
from codeloop.loop.common import Paused, Round, status
from codeloop.sandbox import Interrupted
from codeloop.tasks.order import balanced_order
from codeloop.tasks.pool import pool_tasks, prepare_batch
from codeloop.tasks.schema import Task


def check_assignment(train: list[dict[str, Any]], validation: list[dict[str, Any]], origin: str):
    """No task twice, and no family in both train and validation."""
    ids = [task["id"] for task in train + validation]
    repeated = sorted({task_id for task_id in ids if ids.count(task_id) > 1})
    if repeated:
        raise IntegrityError(f"{origin}: duplicate task id {repeated[0]} in the round's tasks")
    shared = {t["family"] for t in train} & {t["family"] for t in validation}
    if shared:
        raise IntegrityError(
            f"{origin}: problem family {sorted(shared)[0]} is in both train and validation"
        )


def check_toolchains(r: Round) -> None:
    """Run the recipe's worked example in every configured language before the model is asked.

    A missing or broken toolchain would otherwise turn into a round of failed
    answers (or of environment errors the collector refuses): it stops the round
    here with the sandbox's message, which names the language and what to install.
    """
    from codeloop.loop.collect import probe_languages

    languages = list(r.config.tasks.languages)
    r.progress("prepare", 0, len(languages), task="checking the toolchains")
    checks = probe_languages(r, languages)
    broken = [
        f"{language}: {check.status}: {check.feedback.strip()[:400]}"
        for language, check in checks.items()
        if not check.passed
    ]
    if broken:
        raise SandboxEnvironmentError(
            "the sandbox cannot run a known-good program in "
            f"{len(broken)} language(s), so their answers could not be judged; install or "
            "repair the toolchain (`codeloop doctor` shows each one), or remove the language "
            "from tasks.languages:\n" + "\n".join(broken)
        )


def _used_ids(r: Round) -> set[str]:
    used: set[str] = set()
    for number in r.session.rounds():
        tasks_file = r.session.round(number) / "tasks.json"
        if number != r.number and tasks_file.exists():
            saved = store.read(tasks_file)
            used.update(task["id"] for task in saved["train"] + saved["validation"])
    fixed = store.read(r.session.development, {"tasks": []})["tasks"]
    used.update(task["id"] for task in fixed)
    return used


def run(r: Round, resume: bool) -> dict[str, Any]:
    target = r.path("tasks.json")
    if target.exists():
        saved = store.read(target)
        check_assignment(saved["train"], saved["validation"], str(target))
        return {
            "completed": True,
            "tasks_sha256": store.sha256_file(target),
            "train": len(saved["train"]),
            "validation": len(saved["validation"]),
        }
    check_toolchains(r)
    floor = r.config.round.min_free_disk_gib
    free = shutil.disk_usage(r.session.root).free / 1024**3
    if free < floor:
        raise ConfigError(
            f"{r.session.root}: only {free:.1f} GiB free, below round.min_free_disk_gib "
            f"= {floor:g}; free space before preparing round {r.number}"
        )
    used = _used_ids(r)
    fixed = [
        Task.model_validate(t) for t in store.read(r.session.development, {"tasks": []})["tasks"]
    ]
    wanted_train = r.config.round.fresh_tasks
    wanted_dev = r.config.round.validation_tasks * (1 if fixed else 2)
    while True:
        pool = pool_tasks(r.session.root)
        # The pool's whole order, used tasks skipped: each round reaches families the
        # earlier ones did not (see balanced_order).
        train = balanced_order([t for t in pool if t.split == "train"], wanted_train, exclude=used)
        dev = balanced_order([t for t in pool if t.split == "dev"], exclude=used)
        if len(train) >= wanted_train and len(dev) >= wanted_dev:
            break
        r.progress(
            "prepare",
            len(train) + len(dev),
            wanted_train + wanted_dev,
            task="validating a new pool batch in the sandbox",
        )
        r.check_stop()
        try:
            prepare_batch(r.session.root, r.config, stop=r.stop_requested)
        except Interrupted:
            raise Paused(
                f"round {r.number}: paused while validating a pool batch (it is drawn again "
                "on the next run); run again to continue"
            ) from None
    size = r.config.round.validation_tasks
    if not fixed:
        fixed = dev[:size]
        store.write_json(r.session.development, {"tasks": [t.to_json() for t in fixed]})
    fixed_ids = {task.id for task in fixed}
    dev = [task for task in dev if task.id not in fixed_ids]
    validation = [*fixed, *dev[:size]]
    train_rows = [task.to_json() for task in train]
    validation_rows = [task.to_json() for task in validation]
    check_assignment(train_rows, validation_rows, str(target))
    store.write_json(
        target,
        {
            "train": train_rows,
            "validation": validation_rows,
            "parent": status(r.session).get("retained_adapter"),
            "fixed_ids": [task.id for task in fixed],
        },
    )
    return {
        "completed": True,
        "tasks_sha256": store.sha256_file(target),
        "train": len(train_rows),
        "validation": len(validation_rows),
    }
