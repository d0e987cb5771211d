"""Turning a run into a verdict: output comparison (outside the sandbox: expected
outputs never enter it), the status of a finished run, and the feedback a model sees.

The one place that decides a status: a stdio case's (`case_verdict`), a composed
test's (`test_verdict`), a failed compile's (`compile_failure`) and how a plain run
ended (`run_step`). The checker (`check.py`) and the compiler (`compiler.py`) run
programs and ask here what the run means, so a rule changes in one module.
"""

from __future__ import annotations

import math
import signal
from typing import TYPE_CHECKING, NamedTuple

from codeloop.sandbox import harness
from codeloop.sandbox.language import Language
from codeloop.sandbox.request import FEEDBACK_CHARS, Case, Check, Step, parse_checker

if TYPE_CHECKING:
    from codeloop.sandbox.testbuild import TestBuild

_FIELD_CHARS = 400
_COMPILE_CHARS = 1500


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _float_equal(expected: str, got: str, eps: float) -> bool:
    if expected == got:
        return True
    try:
        want, have = float(expected), float(got)
    except ValueError:
        return False
    if math.isnan(want) or math.isnan(have):
        return math.isnan(want) and math.isnan(have)
    return abs(want - have) <= eps * max(1.0, abs(want))


def outputs_match(expected: str, got: str, checker: str) -> bool:
    """Whether `got` is an accepted answer for `expected` under `checker`."""
    kind, eps = parse_checker(checker)
    if kind == "lines":
        return _lines(expected) == _lines(got)
    want, have = expected.split(), got.split()
    if kind == "tokens":
        return want == have
    return len(want) == len(have) and all(
        _float_equal(a, b, eps) for a, b in zip(want, have, strict=True)
    )


# --- feedback ------------------------------------------------------------------------------


def _clip(text: str, limit: int = _FIELD_CHARS, tail: bool = False) -> str:
    if len(text) <= limit:
        return text
    return "..." + text[-limit:] if tail else text[:limit] + "..."


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _case_feedback(index: int, status: str, case: Case, run: harness.RunResult) -> str:
    parts = [f"Test {index + 1}: {status.replace('_', ' ')}", f"Input:\n{_clip(case.input)}"]
    parts.append(f"Expected output:\n{_clip(case.output)}")
    parts.append(f"Your output:\n{_clip(_decode(run.stdout))}")
    stderr = _decode(run.stderr).strip()
    if stderr:
        parts.append(f"Error output (end):\n{_clip(stderr, tail=True)}")
    return "\n".join(parts)[:FEEDBACK_CHARS]


def _compile_feedback(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()][:30]
    return ("Compilation failed:\n" + _clip("\n".join(lines), _COMPILE_CHARS))[:FEEDBACK_CHARS]


def compiler_output(run: harness.RunResult) -> str:
    """What a compiler printed, stderr then stdout, as text: what a compile's feedback (and
    its cache entry) is made from, decoded as every other output is here."""
    return _decode(run.stderr) + _decode(run.stdout)


def compile_failure(output: str, backend: str, **extra: object) -> Check:
    """The compile_error Check of a compile that failed with `output` (its first lines
    become the feedback), on worker `backend`."""
    return failed_check("compile_error", _compile_feedback(output), backend, **extra)


# --- verdicts ------------------------------------------------------------------------------


def _signal_of(run: harness.RunResult) -> int | None:
    """The signal that ended the program (bwrap reports a killed child as exit 128 + N)."""
    if run.signal is not None:
        return run.signal
    if run.exit_code is not None and 128 < run.exit_code < 160:
        return run.exit_code - 128
    return None


def _run_status(language: Language, run: harness.RunResult) -> str | None:
    """The failure status of a finished run, or None when it exited cleanly."""
    stderr = _decode(run.stderr)
    if run.setup_error:  # from bwrap's status pipe, never from what the program printed
        return "environment_error"
    if run.output_exceeded:
        return "output_limit"
    if run.oom_killed:
        return "memory_limit"
    killed_by = _signal_of(run)
    if run.timed_out or (run.cpu_limited and killed_by in (signal.SIGXCPU, signal.SIGKILL)):
        return "timeout"  # our wall clock, or the CPU limit; never the program's own choice
    if run.partner_cpu_limited and run.exit_code != 0:
        return "timeout"  # the solution's own sandbox used up its CPU time
    if run.exit_code != 0 and any(phrase in stderr for phrase in language.out_of_memory):
        return "memory_limit"
    if run.exit_code != 0:
        return "runtime_error"
    return None


def _parse_error(language: Language, run: harness.RunResult) -> bool:
    """For interpreted languages: did the program fail to parse (a compile error)?"""
    stderr = _decode(run.stderr)
    return (
        any(phrase in stderr for phrase in language.compile_error)
        and (
            not language.compile_error_with or any(p in stderr for p in language.compile_error_with)
        )
        and not any(phrase in stderr for phrase in language.compile_error_without)
    )


class CaseVerdict(NamedTuple):
    """One stdio case's verdict: why it failed (None: it passed) and what the model sees."""

    status: str | None
    feedback: str


def case_verdict(
    language: Language, index: int, case: Case, run: harness.RunResult, checker: str
) -> CaseVerdict:
    """The verdict of case number `index` (from 0) of a stdio check, from its finished run.

    Only the first case's run can say that an interpreted program did not parse (a
    compile_error): every later case ran the same program, so a later parse error
    reads as a runtime error. The output is compared (under `checker`) only when the
    run exited cleanly."""
    status = _run_status(language, run)
    if status == "runtime_error" and index == 0 and _parse_error(language, run):
        return CaseVerdict("compile_error", _compile_feedback(_decode(run.stderr)))
    if status is None and not outputs_match(case.output, _decode(run.stdout), checker):
        status = "wrong_answer"
        return CaseVerdict(status, _case_feedback(index, status, case, run))
    if status == "environment_error":
        return CaseVerdict(status, run.setup_error or _decode(run.stderr)[:FEEDBACK_CHARS])
    return CaseVerdict(status, _case_feedback(index, status, case, run) if status else "")


def run_step(language: Language, run: harness.RunResult) -> Step:
    """The run step of a `ProgramRun` (no verdict, but the same reading of how the run
    ended as a check's): how it ended, and what it printed."""
    status = _run_status(language, run)
    if status == "environment_error":
        detail = run.setup_error or _decode(run.stderr)[:FEEDBACK_CHARS]
        return Step(status="environment_error", stderr=detail, wall_ms=run.wall_ms)
    stdout, stderr = _decode(run.stdout), _decode(run.stderr)
    if status == "timeout":
        return Step(
            status="timeout",
            stdout=stdout,
            stderr=stderr,
            wall_ms=run.wall_ms,
            peak_memory_kib=run.peak_memory_kib,
        )
    code = run.exit_code if run.exit_code is not None else 128 + (run.signal or 0)
    return Step(
        status="finished",
        exit_code=code,
        stdout=stdout,
        stderr=stderr,
        wall_ms=run.wall_ms,
        peak_memory_kib=run.peak_memory_kib,
        memory_limit=status == "memory_limit",
        output_limit=status == "output_limit",
    )


def test_verdict(
    language: Language, build: TestBuild, run: harness.RunResult, compile_ms: float, backend: str
) -> Check:
    """The verdict of a composed test program's run (`backend`: the worker's, recorded)."""
    status = _run_status(language, run)
    stderr = _decode(run.stderr)
    syntax = build.syntax_exit is not None and run.exit_code == build.syntax_exit
    if status == "runtime_error" and (syntax or _parse_error(language, run)):
        status = "compile_error"
    elif status == "runtime_error" or (
        status is None and any(marker in stderr for marker in build.failure_markers)
    ):
        status = "wrong_answer"
    marker = build.success_marker
    stdout = _decode(run.stdout)
    if status is None and build.vacuous_marker and build.vacuous_marker in stdout:
        # Printed by the trusted test side only: the test never called the solution
        # (or ran no test function), so it would pass any program.
        return Check(
            status="environment_error",
            feedback=(
                "The task's test never called the solution (or ran no test function): "
                "a test like that passes any program, so it gives no verdict. Fix the "
                "task's test."
            ),
            compile_ms=compile_ms,
            run_ms=run.wall_ms,
            cases_total=1,
            backend=backend,
            task_error=True,
        )
    if status is None and marker and marker not in stdout:
        status = "wrong_answer"  # exited 0 before the tests finished (e.g. exit(0) inside)
    feedback = ""
    if status is not None:
        output = (_decode(run.stdout) + "\n" + stderr).strip()
        feedback = f"Tests failed ({status.replace('_', ' ')}):\n{_clip(output, 1500, tail=True)}"
    return Check(
        status=status or "passed",
        feedback=feedback[:FEEDBACK_CHARS],  # type: ignore[arg-type]
        compile_ms=compile_ms,
        run_ms=run.wall_ms,
        peak_memory_kib=run.peak_memory_kib,
        cases_passed=0 if status else 1,
        cases_total=1,
        backend=backend,
    )


def failed_check(status: str, feedback: str, backend: str, **extra: object) -> Check:
    """The Check of a check that ended before its program ran to a verdict (refused,
    or its compile failed): `status` and `feedback` (clipped), on worker `backend`."""
    return Check(
        status=status,
        feedback=feedback[:FEEDBACK_CHARS],  # type: ignore[arg-type]
        backend=backend,
        **extra,
    )
