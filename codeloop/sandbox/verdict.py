"""Turning a run into a verdict: output comparison (outside the sandbox: expected
outputs never enter it), the status of a finished run, and the feedback a model sees.
"""

from __future__ import annotations

import math
import re
import signal

from codeloop.sandbox import harness
from codeloop.sandbox.language import Language
from codeloop.sandbox.request import FEEDBACK_CHARS, Case

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


def parse_checker(checker: str) -> tuple[str, float]:
    """Validate a checker name: `lines`, `tokens` or `float:EPS`."""
    if checker in ("lines", "tokens"):
        return checker, 0.0
    match = re.fullmatch(r"float:([0-9.eE+-]+)", checker)
    if match:
        eps = float(match.group(1))
        if eps >= 0 and math.isfinite(eps):
            return "float", eps
    raise ValueError(
        f"unknown checker {checker!r}; use lines, tokens or float:EPS (e.g. float:1e-6)"
    )


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
