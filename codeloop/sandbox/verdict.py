"""Turning facts into a verdict: output comparison (outside the sandbox: expected
outputs never enter it), the status of every check, and the feedback a model sees.

The one place that decides a status. The checker (`check.py`) and the compiler
(`compiler.py`) run programs and report what happened as facts; this module says what
those facts mean, so a rule changes in one module:

- a refused check (`refused`, from a `Refusal`: unknown language, missing toolchain,
  broken sandbox, an oversized program, a test that cannot be built);
- a compile (`compile_verdict`, `trusted_compile_verdict`, `compile_step`, from
  `CompileFacts`: the compiler's output, whether it timed out, a sandbox or toolchain
  failure), never from feedback text;
- a stdio case (`case_verdict`) and a check's cases folded into one verdict
  (`CaseTally`: the first failure's status, which failures end the check);
- a composed test's run (`test_verdict`) and a plain run (`run_step`, `unwrapped_step`).

`tests/test_verdict_table.py` lists every status and the facts that lead to it.
"""

from __future__ import annotations

import math
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple

from codeloop.sandbox import harness
from codeloop.sandbox.language import Language
from codeloop.sandbox.request import FEEDBACK_CHARS, Case, Check, Status, Step, parse_checker

if TYPE_CHECKING:
    from codeloop.sandbox.testbuild import TestBuild

_FIELD_CHARS = 400
_COMPILE_CHARS = 1500
COMPILE_TIMED_OUT = "Compilation timed out."
"""The feedback of a compile that met its wall-clock limit (not cached: it may finish
on a quieter machine)."""


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


def _compile_lines(stderr: str) -> str:
    """A compiler's first 30 non-blank lines, clipped: what a model sees of a failed compile."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()][:30]
    return _clip("\n".join(lines), _COMPILE_CHARS)


def _compile_feedback(stderr: str) -> str:
    return ("Compilation failed:\n" + _compile_lines(stderr))[:FEEDBACK_CHARS]


def compiler_output(run: harness.RunResult) -> str:
    """What a compiler printed, stderr then stdout, as text: what a compile's feedback (and
    its cache entry) is made from, decoded as every other output is here."""
    return _decode(run.stderr) + _decode(run.stdout)


def compile_failure(output: str, backend: str, **extra: object) -> Check:
    """The compile_error Check of a compile that failed with `output` (its first lines
    become the feedback), on worker `backend`."""
    return failed_check("compile_error", _compile_feedback(output), backend, **extra)


# --- compiles ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompileFacts:
    """What one compile did, as the compiler saw it (or as the compile cache kept it).

    Facts only: what they mean (a compile_error, an environment_error, a timeout) is
    `compile_verdict`'s, so that no status travels as feedback text."""

    ok: bool
    """The compiler ran to its end and exited 0 (False for every other outcome)."""
    output: str = ""
    """What the compiler printed, stderr then stdout (`compiler_output`)."""
    ms: float = 0.0
    """Wall time of the compile (0 when its outcome came from the compile cache)."""
    timed_out: bool = False
    """The compile met its wall-clock limit."""
    setup_error: str | None = None
    """The sandbox could not carry the compile out (from bwrap's status pipe)."""
    broken_toolchain: str | None = None
    """After a failed compile, the language's known-good canary failed too: why."""


def compile_verdict(facts: CompileFacts, backend: str) -> Check | None:
    """The Check of a compile that failed (None: it succeeded), on worker `backend`.

    A sandbox that could not run the compiler, or a toolchain that fails its canary too,
    is an environment_error (never the source's fault); a compile that met its time
    limit is a compile_error with COMPILE_TIMED_OUT as its feedback; any other failure
    a compile_error with the compiler's first lines."""
    if facts.setup_error:
        return failed_check("environment_error", facts.setup_error, backend)
    if facts.timed_out:
        return failed_check("compile_error", COMPILE_TIMED_OUT, backend)
    if facts.broken_toolchain:
        return failed_check("environment_error", facts.broken_toolchain, backend)
    if not facts.ok:
        return compile_failure(facts.output, backend, compile_ms=facts.ms)
    return None


def trusted_compile_verdict(facts: CompileFacts, from_task: bool, backend: str) -> Check | None:
    """The Check of a function test's trusted half that failed to compile (None: it
    compiled). A half built from the task alone (`from_task`) that does not compile is
    the task's fault, since no answer could pass it: an environment_error with
    `task_error`, except a timeout, which is this machine's (too slow now)."""
    failed = compile_verdict(facts, backend)
    if failed is None or failed.status != "compile_error" or not from_task:
        return failed
    return failed_check(
        "environment_error",
        "The task's test did not compile (it is built from the task alone, so no "
        f"answer could pass it): {failed.feedback}",
        backend,
        task_error=not facts.timed_out,
    )


def compile_step(facts: CompileFacts) -> Step:
    """The compile step of a `ProgramRun` (no verdict, the same reading as a check's). The
    compile cache keeps whether a compile failed and its output, not its exit status: a
    failed compile reads as exit status 1."""
    trouble = facts.setup_error or facts.broken_toolchain
    if trouble:
        return environment_step(trouble, wall_ms=facts.ms)
    if facts.timed_out:
        return Step(status="timeout", wall_ms=facts.ms)
    if facts.ok:
        return Step(status="finished", exit_code=0, wall_ms=facts.ms)
    return Step(
        status="finished", exit_code=1, stderr=_compile_lines(facts.output), wall_ms=facts.ms
    )


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


ENDS_CHECK: tuple[Status, ...] = ("compile_error", "environment_error")
"""Case failures that end a stdio check even when it runs every case: a program that
does not parse fails every case alike, and a failed sandbox gives no verdict."""


@dataclass
class CaseTally:
    """A stdio check's cases folded into one verdict, one case at a time: the status is
    the first failure's (passed when none failed), `cases_passed` counts the cases that
    passed, and `add` says whether the check goes on to the next case."""

    cases_total: int
    every_case: bool = False
    """Run every case after a failure too (partial credit), except after `ENDS_CHECK`."""
    passed: int = 0
    run_ms: float = 0.0
    peak_memory_kib: int | None = None
    failure: CaseVerdict | None = None
    """The first failing case's verdict (None: none failed yet)."""

    def add(self, run: harness.RunResult, verdict: CaseVerdict) -> bool:
        """Count one case's run and verdict; whether the check runs its next case."""
        self.run_ms += run.wall_ms
        if run.peak_memory_kib is not None:
            self.peak_memory_kib = max(self.peak_memory_kib or 0, run.peak_memory_kib)
        if verdict.status is None:
            self.passed += 1
            return True
        self.failure = self.failure or verdict
        return self.every_case and verdict.status not in ENDS_CHECK

    def check(self, compile_ms: float, backend: str) -> Check:
        """The check's verdict from the cases counted so far (`backend`: the worker's)."""
        status, feedback = self.failure or ("passed", "")
        return Check(
            status=status,  # type: ignore[arg-type]
            feedback=feedback,
            compile_ms=compile_ms,
            run_ms=self.run_ms,
            peak_memory_kib=self.peak_memory_kib,
            cases_passed=self.passed,
            cases_total=self.cases_total,
            backend=backend,
        )


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


def environment_step(detail: str, wall_ms: float = 0.0) -> Step:
    """A `ProgramRun` step the sandbox could not carry out (`detail` says why): no fact
    about the program."""
    return Step(status="environment_error", stderr=detail[:FEEDBACK_CHARS], wall_ms=wall_ms)


def unwrapped_step(
    step: Step, started: bool, stdout: str, fetched: dict[str, str]
) -> tuple[Step, dict[str, str]]:
    """A `run_files`-wrapped run's step once the shell's marks are cut off (`started`:
    the opening mark was there; `stdout`: the program's own), and the files it fetched
    (none unless it finished within its output limit). A run whose program never
    started (its input files could not be put in place) is an environment error: the
    sandbox could not carry it out, which says nothing about the program."""
    if not started and step.status != "environment_error":
        return environment_step(f"the input files could not be put in place: {step.stderr}"), {}
    if step.status != "finished" or step.output_limit:
        fetched = {}
    return step.model_copy(update={"stdout": stdout}), fetched


# --- refusals ------------------------------------------------------------------------------

Refusal = Literal[
    "unknown_language",
    "toolchain_missing",
    "sandbox_broken",
    "program_too_big",
    "task_refused",
    "test_not_composed",
]
"""Why a check ended before any program ran (the fact `refused` reads)."""

REFUSALS: dict[Refusal, tuple[Status, bool]] = {
    "unknown_language": ("environment_error", False),
    "toolchain_missing": ("environment_error", False),
    "sandbox_broken": ("environment_error", False),
    # Refused before anything parses it: a program of this size is no answer.
    "program_too_big": ("compile_error", False),
    # The task's own test cannot be checked as written (`TaskRefused`): the task's fault.
    "task_refused": ("environment_error", True),
    "test_not_composed": ("environment_error", False),
}
"""Each refusal's status and whether it is the task's fault (`Check.task_error`)."""


def refused(reason: Refusal, detail: str, backend: str, **extra: object) -> Check:
    """The Check of a check refused for `reason` (`detail`: the feedback), on `backend`."""
    status, task_error = REFUSALS[reason]
    if task_error:
        extra["task_error"] = True
    return failed_check(status, detail, backend, **extra)
