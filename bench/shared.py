"""What several benches share: the curriculum's tier-1 dev tasks, answers checked in the
sandbox, and a training set written as export writes one (with its manifest)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from codeloop import recipe, store
from codeloop.config import SandboxConfig, SplitFractions
from codeloop.sandbox import check_many
from codeloop.tasks import checks, curriculum
from codeloop.tasks.splits import assign_split


def dev_tasks(languages: list[str], variants: int, salt: str, fractions: SplitFractions):
    """Tier-1 dev-family tasks of the preset's split, with each family's title."""
    tasks = []
    for family in curriculum.families():
        name = f"curriculum/{family.name}"
        if family.tier != 1 or assign_split(name, salt, fractions) != "dev":
            continue
        for variant in range(variants):
            problem = curriculum.render_problem(family, variant, 3407, languages)
            tasks += [(task, family.title) for task in problem.tasks]
    return tasks


def check(tasks, answers, public: bool = False):
    """Each answer's check in the sandbox (2 workers), or "no code block"."""
    requests, where, verdicts = [], [], ["no code block"] * len(tasks)
    for index, (task, answer) in enumerate(zip(tasks, answers, strict=True)):
        try:
            program = recipe.source(answer, task.language)
        except ValueError:
            continue
        requests.append(checks.request(task, program, SandboxConfig(), public=public))
        where.append(index)
    for index, result in zip(where, check_many(requests, workers=2), strict=True):
        verdicts[index] = result
    return verdicts


def write_dataset(data: Path, rows: list[dict]) -> Path:
    """`rows` as a training set at `data`, with the manifest export would write beside it."""
    store.write_text(data, "".join(json.dumps(row) + "\n" for row in rows))
    store.write_json(
        Path(f"{data}.manifest.json"),
        {
            "split": "train",
            "verification": "local_execution",
            "rows": len(rows),
            "languages": dict(Counter(row["language"] for row in rows)),
            "dataset_sha256": store.sha256_file(data),
        },
    )
    return data
