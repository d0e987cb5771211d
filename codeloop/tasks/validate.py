"""Prove a problem's tests before the model ever sees it: run its references in the sandbox.

A wrong expected output would punish right answers and teach nothing, so a
problem enters the pool only if one of its references passes every case (hidden
and public). A problem whose hidden cases a trivial program passes (one that
prints nothing, echoes its input, or prints a public example's output whatever the
input) would reward an answer that solves nothing, so it is refused. A stdio
problem's trivial outputs are known without running anything; a function task's
trivial programs (`trivial.py`: the zero value, the first argument, a public
example's value) run in the sandbox beside its references.
Each problem is checked once, however many languages it is rendered in. A sandbox
that cannot run at all is an environment error, never a reason to drop a problem:
the build stops and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from codeloop.config import SandboxConfig
from codeloop.errors import SandboxEnvironmentError
from codeloop.tasks.schema import Problem

MAX_REFERENCES = 3
_FEEDBACK_CHARS = 300


@dataclass(frozen=True)
class Verdict:
    """What validation decided about one problem."""

    key: str
    accepted: bool
    verified: bool
    reason: str
    checks: int = 0
    """Reference programs run in the sandbox for this problem."""


def _requests(problem: Problem, sandbox: SandboxConfig) -> tuple[list[Any], list[str]]:
    """The checks of a problem: its references', then (function tasks with a runnable
    reference) its trivial programs'; and the trivial programs' names, in order."""
    from codeloop.sandbox import LANGUAGES, CheckRequest
    from codeloop.tasks.checks import request
    from codeloop.tasks.trivial import trivial_programs

    task = problem.tasks[0]
    references = [ref for ref in task.references if ref.language in LANGUAGES]
    requests = []
    for reference in references[:MAX_REFERENCES]:
        if task.kind == "stdio":
            cases = [case.model_dump() for case in [*task.cases, *task.public_cases]]
            requests.append(
                CheckRequest(
                    language=reference.language,
                    program=reference.code,
                    cases=cases,
                    checker=task.checker,
                    limits=sandbox.limits,
                )
            )
        else:
            requests.append(request(task, reference.code, sandbox))
    trivial = trivial_programs(task) if requests and task.language in LANGUAGES else {}
    requests += [request(task, code, sandbox) for code in trivial.values()]
    return requests, list(trivial)


def validate_problems(
    problems: Sequence[Problem],
    sandbox: SandboxConfig,
    *,
    on_done: Callable[[int, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[Verdict]:
    """A verdict per problem, in order. Problems with a `skip_reason` are dropped unchecked.

    Accepted without proof (`verified=False`): a problem with no runnable reference
    (LiveCodeBench ships none), or a function task whose language the sandbox cannot
    yet compose tests for. Raises `SandboxEnvironmentError` when every reference of
    a stdio problem met an environment error, and the sandbox's `Interrupted` when
    `stop` asks to stop before every check ran.
    """
    from codeloop.sandbox import check_many

    plan: list[tuple[int, int, list[str]]] = []  # (problem, request count, trivial names)
    requests: list[Any] = []
    for index, problem in enumerate(problems):
        made, trivial = (
            ([], []) if problem.skip_reason or not problem.tasks else _requests(problem, sandbox)
        )
        plan.append((index, len(made), trivial))
        requests.extend(made)
    total = len(requests)
    finished = [0]

    def done(_: int, __: Any) -> None:
        finished[0] += 1
        if on_done is not None:
            on_done(finished[0], total)

    checks = (
        check_many(
            requests, workers=sandbox.workers, backend=sandbox.backend, on_done=done, stop=stop
        )
        if requests
        else []
    )
    verdicts: list[Verdict] = []
    position = 0
    for index, count, trivial in plan:
        problem = problems[index]
        results = checks[position : position + count]
        position += count
        references = results[: count - len(trivial)]
        passed_trivially = [
            name
            for name, check in zip(trivial, results[len(references) :], strict=True)
            if check.passed
        ]
        verdict = _verdict(problem, references, passed_trivially)
        verdicts.append(replace(verdict, checks=count))
    return verdicts


def trivial_pass(task: Any) -> str | None:
    """The name of a trivial program that passes every hidden case of a stdio task, if any."""
    from codeloop.sandbox import outputs_match

    if task.kind != "stdio" or not task.cases:
        return None
    outputs: dict[str, Callable[[str], str]] = {
        "the empty program": lambda _input: "",
        "a program that echoes its input": lambda data: data,
    }
    for number, case in enumerate(task.public_cases, 1):
        outputs[f"a program printing public example {number}'s output"] = (
            lambda _input, fixed=case.output: fixed
        )
    for name, output_of in outputs.items():
        if all(outputs_match(c.output, output_of(c.input), task.checker) for c in task.cases):
            return name
    return None


def _verdict(problem: Problem, results: Sequence[Any], passed_trivially: Sequence[str]) -> Verdict:
    if problem.skip_reason:
        return Verdict(problem.key, False, False, f"skipped: {problem.skip_reason}")
    if not problem.tasks:
        return Verdict(problem.key, False, False, "skipped: no tasks")
    trivial = trivial_pass(problem.tasks[0]) or next(iter(passed_trivially), None)
    if trivial is not None:
        return Verdict(problem.key, False, False, f"refused: {trivial} passes every hidden case")
    if not results:
        return Verdict(problem.key, True, False, "unverified: no runnable reference solution")
    task = problem.tasks[0]
    languages = [ref.language for ref in task.references]
    for language, check in zip(languages, results, strict=False):
        if check.passed:
            return Verdict(problem.key, True, True, f"reference passed ({language})")
    failures = [check for check in results if check.status != "environment_error"]
    if failures:
        first = failures[0]
        feedback = " ".join(first.feedback.split())[:_FEEDBACK_CHARS]
        return Verdict(
            problem.key, False, False, f"reference failed: {first.status}: {feedback}".rstrip()
        )
    feedback = " ".join(results[0].feedback.split())[:_FEEDBACK_CHARS]
    if task.kind == "function":
        return Verdict(problem.key, True, False, f"unverified: {feedback}")
    raise SandboxEnvironmentError(
        f"problem {problem.key} (family {problem.family}): the sandbox could not run its "
        f"reference ({feedback}). Run `codeloop doctor` to see what this machine lacks."
    )
