"""Weak tasks: the tasks of a suite whose hidden tests a trivial program passes.

A task whose test an answer that solves nothing passes (it returns a zero value,
echoes its argument, or prints a public example's output: `tasks/trivial.py`, the
programs for which the training pool's validation refuses a task) measures little:
`codeloop eval` names such tasks in summary.json (`weak_tasks`, with the program
that passes each in `weak_task_programs`) and in its printed summary, so a user
sees a weak benchmark test. HumanEval-X Rust/4 is one: its test passes the empty
program. (Rust/38 was one while its test encoded with the solution's own
`encode_cyclic`; the Rust home now gives the test the canonical encoder.)

Cheap: a stdio task's trivial outputs are known without a run, and the function
tasks' trivial programs are checked in one sandbox batch. A benchmark's rows come
here as the function tasks its suite makes of them (`Benchmark.function_tasks`).
A trivial program that cannot be checked (an environment error) does not make a
task weak: only a pass does.
"""

from __future__ import annotations

from collections.abc import Sequence

from codeloop.config import SandboxConfig
from codeloop.sandbox import LANGUAGES, check_many
from codeloop.tasks.checks import request
from codeloop.tasks.schema import Task


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
                requests.append(request(task, program, sandbox))
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
