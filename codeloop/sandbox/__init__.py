"""The polyglot sandbox: check programs in 8 languages, contained and fast.

Public API:
    check_program(language, program, cases, *, checker="lines", limits=None) -> Check
    check_tests(language, program, test, *, limits=None) -> Check
    check_many(requests, *, workers=None) -> list[Check]
    run_program(RunRequest) -> ProgramRun: one program on one stdin, its output and exit
        status as they are (no verdict), thread-safe (`codeloop serve`'s /run_code)
"""

from __future__ import annotations

from codeloop.config import SandboxLimits
from codeloop.sandbox.dispatch import check_many, use_cluster
from codeloop.sandbox.languages import LANGUAGES
from codeloop.sandbox.pool import Interrupted, describe, run_program, shutdown
from codeloop.sandbox.request import (
    STATUSES,
    Case,
    Check,
    CheckRequest,
    ProgramRun,
    RunRequest,
    Step,
)
from codeloop.sandbox.verdict import outputs_match

__all__ = [
    "LANGUAGES",
    "STATUSES",
    "Case",
    "Check",
    "CheckRequest",
    "Interrupted",
    "ProgramRun",
    "RunRequest",
    "SandboxLimits",
    "Step",
    "check_many",
    "check_program",
    "check_tests",
    "describe",
    "outputs_match",
    "run_program",
    "shutdown",
    "use_cluster",
]


def check_program(
    language: str,
    program: str,
    cases: list[dict] | list[Case],
    *,
    checker: str = "lines",
    limits: SandboxLimits | None = None,
    backend: str = "bwrap",
) -> Check:
    """Check a complete stdin/stdout program against `cases` ({input, output})."""
    request = CheckRequest(
        language=language, program=program, cases=cases, checker=checker, limits=limits
    )
    return check_many([request], backend=backend)[0]


def check_tests(
    language: str,
    program: str,
    test: str,
    *,
    limits: SandboxLimits | None = None,
    backend: str = "bwrap",
) -> Check:
    """Check a function-level program against a test program (HumanEval-X style)."""
    request = CheckRequest(language=language, program=program, test=test, limits=limits)
    return check_many([request], backend=backend)[0]
