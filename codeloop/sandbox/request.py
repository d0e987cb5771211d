"""What a check is asked (`CheckRequest`: a program and its cases or test) and what it
answers (`Check`: one status from a closed set, feedback, timings).

An environment problem (toolchain missing, sandbox broken) is its own status and never
counts as a wrong answer.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from codeloop.config import SandboxLimits
from codeloop.sandbox import run_files

if TYPE_CHECKING:
    from codeloop.sandbox.language import Language

Status = Literal[
    "passed",
    "wrong_answer",
    "runtime_error",
    "compile_error",
    "timeout",
    "memory_limit",
    "output_limit",
    "environment_error",
]
STATUSES: tuple[str, ...] = Status.__args__  # type: ignore[attr-defined]
FEEDBACK_CHARS = 2000


MAX_PROGRAM_BYTES = 256 * 1024
"""Largest program the sandbox compiles or runs (model answers are a few KiB)."""


COMPILE_VIRTUAL_OVERHEAD_MIB = 4096
"""Compile steps' address space beyond their memory limit where no memory cgroup caps
them (javac's JVM reserves about 4 GiB it does not use; see RunLimits)."""


class Case(BaseModel):
    """One test case: what the program reads and what it must print."""

    model_config = ConfigDict(extra="forbid")
    input: str
    output: str


def _registered(language: str) -> Language | None:
    """The registry's entry for `language` (None: unknown, which the check reports)."""
    from codeloop.sandbox.languages import LANGUAGES  # the registry imports this module

    return LANGUAGES.get(language)


def parse_checker(checker: str) -> tuple[str, float]:
    """A checker name's kind and tolerance: `lines`, `tokens` or `float:EPS`. ValueError
    for any other: the caller's mistake, refused when the request is made (never an
    environment error of the check)."""
    if checker in ("lines", "tokens"):
        return checker, 0.0
    match = re.fullmatch(r"float:([0-9.eE+-]+)", checker)
    try:
        eps = float(match.group(1)) if match else -1.0
    except ValueError:  # "float:1e5e5": not a number, the same unknown checker
        eps = -1.0
    if eps >= 0 and math.isfinite(eps):
        return "float", eps
    raise ValueError(
        f"unknown checker {checker!r}; use lines, tokens or float:EPS (e.g. float:1e-6)"
    )


class CheckRequest(BaseModel):
    """One program to check: stdio cases, or (for function tasks) a test program."""

    model_config = ConfigDict(extra="forbid")
    language: str
    program: str
    cases: list[Case] = Field(default_factory=list)
    checker: str = "lines"
    """How a stdio case's output is compared (`parse_checker`)."""
    test: str | None = None
    prompt: str = ""
    """For function tests: the task's own code (e.g. HumanEval's prompt), whose helpers the
    test may call; it runs on the test's side, so the program cannot redefine them."""
    entry_point: str | None = None
    """For function tests: the function under test (default: what the test hands to
    `check(...)`)."""
    limits: SandboxLimits | None = None
    every_case: bool = False
    """Stdio cases: run every case even after one failed, so that `cases_passed` counts
    all that pass (partial credit for an RL reward); the status is still the first
    failure's. False: stop at the first failure (a verdict needs no more)."""

    @field_validator("checker")
    @classmethod
    def _known_checker(cls, checker: str) -> str:
        parse_checker(checker)
        return checker

    @model_validator(mode="after")
    def _something_to_check(self) -> CheckRequest:
        # A check with nothing to run would pass any program: a vacuous verdict is a
        # reward for nothing, so it is refused, never judged "passed".
        if self.test is None and not self.cases:
            raise ValueError("a check needs at least one test case (or a test program)")
        if self.test is not None and not self.test.strip():
            raise ValueError("the test program is empty")
        found = _registered(self.language) if self.test is not None else None
        if found is not None and found.needs_prompt and not self.prompt.strip():
            # Without the function's trusted declaration the test cannot be built apart
            # from the solution, and in one process the solution could forge the verdict.
            raise ValueError(
                f"a {self.language} function test needs `prompt`: the trusted code that "
                "declares the function under test (as HumanEval-X's prompt), so that the "
                "test is compiled apart from the solution"
            )
        if (
            found is not None
            and found.needs_entry_point
            and not self.prompt.strip()
            and not self.entry_point
        ):
            raise ValueError(
                f"a {self.language} function test needs `entry_point` (or a `prompt` that "
                "declares it), so that the test runs apart from the solution"
            )
        return self


class Check(BaseModel):
    """The verdict on one program."""

    status: Status
    feedback: str = ""
    compile_ms: float = 0.0
    test_compile_ms: float = 0.0
    """Of `compile_ms`, the time spent compiling the test's trusted half (0 when it came
    from the compile cache: it is compiled once per task, not per answer)."""
    run_ms: float = 0.0
    peak_memory_kib: int | None = None
    cases_passed: int = 0
    cases_total: int = 0
    backend: str = ""
    task_error: bool = False
    """With `environment_error`: the task's own test cannot give a verdict here (it never
    called the solution, ran no test function, or needs what this machine lacks). Not
    the program's doing and not a passing infrastructure fault: never retried, never
    blamed on the program, never a pass."""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def summary(self) -> dict:
        """One line of `codeloop check --batch`'s output."""
        return {
            "status": self.status,
            "passed": self.passed,
            "feedback": self.feedback,
            "compile_ms": round(self.compile_ms, 1),
            "run_ms": round(self.run_ms, 1),
        }


class RunRequest(BaseModel):
    """One program run once on one stdin, its output handed back as it is (no verdict):
    what a SandboxFusion-style `/run_code` asks of `codeloop serve`. It runs in the same
    sandbox as a check's case: compiled there (or loaded from the compile cache), then
    run as the worker's run uid (`Sandbox.run_program`)."""

    model_config = ConfigDict(extra="forbid")
    language: str
    program: str
    stdin: str = ""
    limits: SandboxLimits | None = None
    debug: bool = False
    """Runtime checks on, as SandboxFusion builds: Java runs with assertions (`-ea`), Rust
    is a debug build (overflow checks and debug assertions); other languages as checked."""
    files: dict[str, str] = Field(default_factory=dict)
    """Files put in place before the run starts: path (relative to its working folder,
    or absolute under /work or /tmp: `run_files.check_path`) -> base64 content."""
    fetch_files: list[str] = Field(default_factory=list)
    """Paths (the same rules) read back when the run has ended."""

    @field_validator("files")
    @classmethod
    def _files_fit(cls, files: dict[str, str]) -> dict[str, str]:
        if len(files) > run_files.MAX_FILES:
            raise ValueError(f"{len(files)} files; the sandbox takes {run_files.MAX_FILES}")
        checked = {run_files.check_path(path): content for path, content in files.items()}
        size = sum(len(run_files.decode(path, content)) for path, content in checked.items())
        if size > run_files.MAX_FILE_BYTES:
            raise ValueError(f"the files hold {size} bytes; the sandbox takes "
                             f"{run_files.MAX_FILE_BYTES}")  # fmt: skip
        return checked

    @field_validator("fetch_files")
    @classmethod
    def _fetch_fits(cls, paths: list[str]) -> list[str]:
        if len(paths) > run_files.MAX_FILES:
            limit = run_files.MAX_FILES
            raise ValueError(f"{len(paths)} files to fetch; the sandbox takes {limit}")
        return [run_files.check_path(path) for path in paths]

    @field_validator("program")
    @classmethod
    def _small_enough(cls, program: str) -> str:
        size = len(program.encode("utf-8"))
        if size > MAX_PROGRAM_BYTES:
            raise ValueError(f"the program is {size} bytes; the sandbox takes {MAX_PROGRAM_BYTES}")
        return program


class Step(BaseModel):
    """How one step of a `ProgramRun` (its compile, or its run) ended."""

    status: Literal["finished", "timeout", "environment_error"]
    """finished: it exited (`exit_code`, 128 + N when signal N ended it); timeout: it met
    its time limit; environment_error: the sandbox could not carry it out (`stderr` says
    why), which says nothing about the program."""
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    """A failed compile's: the compiler's first 30 lines (`verdict._compile_feedback`)."""
    wall_ms: float = 0.0
    peak_memory_kib: int | None = None
    memory_limit: bool = False
    """The run was ended for using more than its memory limit."""
    output_limit: bool = False
    """The run was ended for printing more than its output limit (what it printed up to
    the limit is kept)."""


class ProgramRun(BaseModel):
    """What `RunRequest` gave: its compile (None where the language has none) and its
    run (None when the compile did not succeed)."""

    compile: Step | None = None
    run: Step | None = None
    backend: str = ""
    files: dict[str, str] = Field(default_factory=dict)
    """The asked-for `fetch_files` the run left behind: path -> base64 content (none when
    the run timed out or met its output limit)."""
