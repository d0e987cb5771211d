"""Weak tasks: the tasks of a suite whose hidden tests a trivial program passes.

A task whose test an answer that solves nothing passes (it returns a zero value,
echoes its argument, or prints a public example's output: `tasks/trivial.py`, the
programs for which the training pool's validation refuses a task) measures little:
`codeloop eval` names such tasks in summary.json (`weak_tasks`, with the program
that passes each in `weak_task_programs`) and in its printed summary, so a user
sees a weak benchmark test. HumanEval-X Rust/38 is one: its test encodes with the
solution's own `encode_cyclic`, so echoing the input in both functions passes it.

Cheap: a stdio task's trivial outputs are known without a run, and the function
tasks' trivial programs are checked in one sandbox batch. A trivial program that
cannot be checked (an environment error) does not make a task weak: only a pass
does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from codeloop.config import SandboxConfig
from codeloop.evaluate import tasks as scoring
from codeloop.evaluate.data import Problems, language_of
from codeloop.sandbox import LANGUAGES, check_many
from codeloop.tasks.schema import Provenance, Task


def trivial_passes(tasks: Sequence[Task], sandbox: SandboxConfig) -> list[str | None]:
    """Per task, the name of a trivial program that passes its hidden tests (None: none)."""
    from codeloop.tasks.trivial import trivial_programs
    from codeloop.tasks.validate import trivial_pass

    found: list[str | None] = [None] * len(tasks)
    plan: list[tuple[int, str]] = []
    requests = []
    for index, task in enumerate(tasks):
        if task.kind == "stdio":
            found[index] = trivial_pass(task)
        elif task.language in LANGUAGES:
            for name, program in trivial_programs(task).items():
                plan.append((index, name))
                requests.append(scoring.request(task, program, sandbox))
    if requests:
        checks = check_many(requests, workers=sandbox.workers, backend=sandbox.backend)
        for (index, name), check in zip(plan, checks, strict=True):
            if check.passed and found[index] is None:
                found[index] = name
    return found


def weak_tasks(labelled: Sequence[tuple[str, Task]], sandbox: SandboxConfig) -> dict[str, str]:
    """{label: the trivial program that passes its task}, in the order given."""
    passes = trivial_passes([task for _label, task in labelled], sandbox)
    return {label: name for (label, _task), name in zip(labelled, passes, strict=True) if name}


def benchmark_tasks(
    suite: str, problems: Problems, task_ids: Iterable[str]
) -> list[tuple[str, Task]]:
    """HumanEval(-X) rows as codeloop function tasks (as the task sources read them),
    labelled with the benchmark's task id; each id once, in the order given."""
    from codeloop.tasks.sources.common import row_sha256
    from codeloop.tasks.sources.humaneval import python_problem
    from codeloop.tasks.sources.humaneval_x import problem_of

    found: list[tuple[str, Task]] = []
    for task_id in dict.fromkeys(task_ids):
        row: dict[str, Any] = problems.rows[task_id]
        provenance = Provenance(
            dataset=suite,
            revision="eval",
            source_row_sha256=row_sha256(row),
            license="Apache-2.0" if suite == "humaneval-x" else "MIT",
        )
        problem = (
            problem_of(language_of(task_id), row, provenance)
            if suite == "humaneval-x"
            else python_problem(row, provenance)
        )
        found.append((task_id, problem.tasks[0]))
    return found
