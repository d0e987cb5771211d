"""Scoring answers to codeloop tasks: the one evaluator of the loop and of `codeloop eval`.

A round's collect, baseline, candidate and audits, and `codeloop eval` on a task
suite (validation, curriculum-test, jsonl:PATH, or HumanEval through the
recipe), all turn an answer into a verdict here: the program is the answer's code
block, checked in the sandbox against the task's hidden tests (or its public
ones, for the correction turn). So the audit of a round and `codeloop eval` on the
same answers cannot disagree. HumanEval(-X) samples in their official formats reach
the sandbox through `check_requests` too (`evaluate.runner`), keeping each sample's
first verdict as the official harnesses do.

An `environment_error` is never a failed answer. A check that reports one is run
once more on freshly started sandbox workers (a worker that died, a killed warm
sandbox, a failed Ray chunk: infrastructure noise, not the program). Only if the
re-run reports one again does the language's known-good probe (the recipe's worked
example) run: if the probe fails, the machine is at fault and
`SandboxEnvironmentError` stops the caller; if the probe passes, the program itself
imitated a sandbox failure twice (say, printing "bwrap: ..." and exiting 1) and the
answer fails as a runtime error.

A check with `task_error` set (an `environment_error` where the task's own test
cannot give a verdict: it never called the solution, or cannot be built here) is
the task's fault, not the program's nor the machine's: it is never re-run, never
turned into a runtime error, never a pass. `check_answers` returns it as it is (an
`environment_error` row that is not passed) instead of stopping the caller, so one
broken task does not abort a whole round: the loop never trains on it (not
passed), and `codeloop eval` lists it under `task_errors`; a reward gives it no
value (see `codeloop.reward`).

The check of a program against a task (`request`) belongs to the tasks layer
(`codeloop.tasks.checks`), which validation shares; it is imported here so that
callers of the evaluator find it beside `check_answers`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from math import comb
from typing import Any

from codeloop import recipe
from codeloop.config import SandboxConfig
from codeloop.errors import SandboxEnvironmentError
from codeloop.sandbox import Check, CheckRequest, check_many
from codeloop.tasks.checks import request
from codeloop.tasks.schema import Task


def sample_seed(root_seed: int, task_id: str, index: int) -> int:
    """Seed of sample `index` of a task: stable across restarts and batches."""
    digest = hashlib.sha256(f"{root_seed}:{task_id}:sample-{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def program_of(task: Task, answer: str) -> str | None:
    """The program in an answer, or None when the answer has no usable code block."""
    try:
        return recipe.source(answer, task.language)
    except ValueError:
        return None


def probe_languages(sandbox: SandboxConfig, languages: list[str]) -> dict[str, Check]:
    """Run the recipe's worked example (a known-good program) in each language.

    Tells a broken toolchain or sandbox (the probe fails) from a program that only
    looks like one; a round's prepare runs it before the model is asked.
    """
    known = [language for language in languages if language in recipe.WORKED_ANSWERS]
    found = {
        language: Check(
            status="environment_error",
            feedback=f"{language}: no known-good program (not one of codeloop's languages)",
        )
        for language in languages
        if language not in recipe.WORKED_ANSWERS
    }
    if not known:
        return found
    requests = [
        CheckRequest(
            language=language,
            program=recipe.WORKED_ANSWERS[language],
            cases=[recipe.WORKED_CASE],
            limits=sandbox.limits,
        )
        for language in known
    ]
    checks = check_many(requests, workers=sandbox.workers, backend=sandbox.backend)
    return {**found, **dict(zip(known, checks, strict=True))}


def _env(check: Check) -> bool:
    return check.status == "environment_error"


def _machine(check: Check) -> bool:
    """An environment error that may be the machine's (or the program's): not the task's."""
    return _env(check) and not check.task_error


def check_requests(
    requests: list[CheckRequest | None],
    sandbox: SandboxConfig,
    *,
    stop: Callable[[], bool] | None = None,
    on_done: Callable[[int, Check], None] | None = None,
    rerun: bool = True,
) -> list[Check]:
    """Check requests in parallel; None (an answer without code) fails without a run.

    A check that reports `environment_error` is run once more on freshly started
    workers (never one with `task_error`: the task's test is at fault, and stays an
    `environment_error`). A re-run that reports it again while its language's
    known-good probe passes is the program's own doing and fails as a runtime error;
    one whose probe fails too stays an `environment_error`, for the caller to stop on
    (never a wrong answer). `on_done` hears each check once, with the verdict of its
    re-run where it had one. Raises `sandbox.Interrupted` when `stop` asks for it
    (before the re-runs, which are never cut short).

    With `rerun` False, every first verdict stands, environment errors included: how
    `codeloop eval` scores HumanEval(-X) samples in their official formats, whose
    results have always been the sandbox's one verdict per sample.
    """
    results: list[Check | None] = [None] * len(requests)
    where = [index for index, item in enumerate(requests) if item is not None]
    for index, item in enumerate(requests):
        if item is None:
            results[index] = Check(status="wrong_answer", feedback="The answer has no code block.")

    def judged(check: Check) -> bool:
        """Whether the check's environment error is re-run and then judged."""
        return rerun and _machine(check)

    def first(i: int, check: Check) -> None:
        if on_done is not None and not judged(check):  # a re-run reports the rest
            on_done(where[i], check)

    checked = check_many(
        [requests[index] for index in where],  # type: ignore[misc]
        workers=sandbox.workers,
        backend=sandbox.backend,
        stop=stop,
        on_done=first,
    )
    again = [i for i, check in enumerate(checked) if judged(check)]
    if again:
        rechecked = check_many(
            [requests[where[i]] for i in again],  # type: ignore[misc]
            workers=sandbox.workers,
            backend=sandbox.backend,
            fresh=True,
        )
        for i, check in zip(again, rechecked, strict=True):
            checked[i] = check
            if on_done is not None:
                on_done(where[i], check)
    suspects = {requests[i].language for i, c in zip(where, checked, strict=True) if judged(c)}  # type: ignore[union-attr]
    broken = {
        lang for lang, c in probe_languages(sandbox, sorted(suspects)).items() if not c.passed
    }
    for index, check in zip(where, checked, strict=True):
        if judged(check) and requests[index].language not in broken:  # type: ignore[union-attr]
            check = Check(
                status="runtime_error",
                feedback="The program failed in a way that imitates a sandbox error, twice "
                "(the sandbox itself works).",
            )
        results[index] = check
    return [result for result in results if result is not None]


def check_answers(
    items: list[tuple[Task, str]],
    sandbox: SandboxConfig,
    *,
    public: bool = False,
    stop: Callable[[], bool] | None = None,
    on_done: Callable[[int, Check], None] | None = None,
) -> list[Check]:
    """Check (task, answer) pairs in parallel; an answer without code fails without a run.

    Raises `sandbox.Interrupted` when `stop` asks for it before a check starts, and
    `SandboxEnvironmentError` when the machine (not the answer) failed a check. A
    check whose task cannot give a verdict (`task_error`) comes back as it is: an
    `environment_error` that is not passed and is no failure of the program's.
    """
    requests: list[CheckRequest | None] = []
    for task, answer in items:
        program = program_of(task, answer)
        requests.append(None if program is None else request(task, program, sandbox, public))
    checks = check_requests(requests, sandbox, stop=stop, on_done=on_done)
    require_verdicts([(task.id, task.language) for task, _answer in items], checks)
    return checks


def require_verdicts(labels: list[tuple[str, str]], checks: list[Check]) -> None:
    """Raise `SandboxEnvironmentError` for the first check the machine failed.

    `labels` are the checks' (task id, language). What `check_requests` left an
    `environment_error` without `task_error` failed its re-run and its language's
    known-good probe: no verdict of the program's, and a broken machine, which must
    stop the caller rather than count as a failed answer.
    """
    for (task_id, language), check in zip(labels, checks, strict=True):
        if _machine(check):
            raise SandboxEnvironmentError(
                f"task {task_id} ({language}): the sandbox could not check the program, "
                f"and a known-good {language} program fails too, so no verdict was "
                f"recorded: {check.feedback.strip()[:400]}"
            )


def summary(rows: list[dict], binding: dict[str, Any]) -> dict[str, Any]:
    """Counts per language and macro pass@1 (the mean of the languages' pass rates)."""
    languages: dict[str, dict[str, int]] = {}
    for row in rows:
        entry = languages.setdefault(row["language"], {"total": 0, "passed": 0})
        entry["total"] += 1
        entry["passed"] += int(row["passed"])
    rates = [v["passed"] / v["total"] for v in languages.values() if v["total"]]
    return {
        "completed": True,
        "total": len(rows),
        "passed": sum(r["passed"] for r in rows),
        "languages": dict(sorted(languages.items())),
        "macro_pass_at_1": sum(rates) / len(rates) if rates else 0.0,
        "binding": binding,
    }


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one task with `c` of `n` samples correct (Chen et al., 2021)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)
