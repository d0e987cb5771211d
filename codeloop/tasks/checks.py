"""The sandbox check of a program written for a task: its tests, as the task states them.

It lives in the tasks layer, beside the schema it reads, because both sides of a
task's life need it: validation checks references and trivial programs with it
before a task enters the pool (`tasks.validate`), and the evaluator checks model
answers with it (`evaluate.scoring`). One function means a reference and an
answer meet the very same test, so a validated task is a task the evaluator can
score; with it in `evaluate`, the tasks layer would import from the layer above it.
"""

from __future__ import annotations

from codeloop.config import SandboxConfig
from codeloop.sandbox.request import CheckRequest
from codeloop.tasks.schema import Task


def request(task: Task, program: str, sandbox: SandboxConfig, public: bool = False) -> CheckRequest:
    """The sandbox check of `program` against the task's hidden (or public) tests."""
    limits = sandbox.limits
    if task.kind == "function":
        assert task.function is not None
        test = task.function.public_tests if public else task.function.tests
        return CheckRequest(
            language=task.language,
            program=program,
            test=test,
            prompt=task.statement,
            entry_point=task.function.entry_point,
            limits=limits,
        )
    cases = task.public_cases if public else task.cases
    return CheckRequest(
        language=task.language,
        program=program,
        checker=task.checker,
        cases=[c.model_dump() for c in cases],
        limits=limits,
    )
