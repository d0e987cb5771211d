"""Checking one program: compile once, run each case, compare outside the sandbox.

Expected outputs never enter the sandbox: the program only ever sees a case's
input, and its output is compared here. The verdict is one status from a closed
set; an environment problem (toolchain missing, sandbox broken) is its own status
and never counts as a wrong answer.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import signal
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from codeloop.config import SandboxLimits
from codeloop.sandbox import harness, javac_service
from codeloop.sandbox.cache import CompileCache, compile_key, locked, shared_folder
from codeloop.sandbox.function_tests import (
    JAVAC_BATCH_JAR,
    JAVAC_BATCH_MOUNT,
    TaskRefused,
    TestBuild,
    TestContext,
    compose,
    go_check_cache,
    javac_batch,
)
from codeloop.sandbox.languages import Language, get, toolchain_version
from codeloop.sandbox.warm import WarmPython
from codeloop.sandbox.warm import enabled as warm_enabled

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
_FIELD_CHARS = 400
_COMPILE_CHARS = 1500


MAX_PROGRAM_BYTES = 256 * 1024
"""Largest program the sandbox compiles or runs (model answers are a few KiB)."""
CANARY_TTL_S = 120.0
"""How long a worker trusts a toolchain after its canary compiled."""


COMPILE_VIRTUAL_OVERHEAD_MIB = 4096
"""Compile steps' address space beyond their memory limit where no memory cgroup caps
them (javac's JVM reserves about 4 GiB it does not use; see RunLimits)."""


class Case(BaseModel):
    """One test case: what the program reads and what it must print."""

    model_config = ConfigDict(extra="forbid")
    input: str
    output: str


NEEDS_PROMPT = frozenset({"cpp", "go", "java", "rust"})
"""Languages whose function tests are compiled against a proxy built from the trusted
declaration (`prompt`): without one, a check is refused."""


class CheckRequest(BaseModel):
    """One program to check: stdio cases, or (for function tasks) a test program."""

    model_config = ConfigDict(extra="forbid")
    language: str
    program: str
    cases: list[Case] = Field(default_factory=list)
    checker: str = "lines"
    test: str | None = None
    prompt: str = ""
    """For function tests: the task's own code (e.g. HumanEval's prompt), whose helpers the
    test may call; it runs on the test's side, so the program cannot redefine them."""
    entry_point: str | None = None
    """For function tests: the function under test (default: what the test hands to
    `check(...)`)."""
    limits: SandboxLimits | None = None

    @model_validator(mode="after")
    def _something_to_check(self) -> CheckRequest:
        # A check with nothing to run would pass any program: a vacuous verdict is a
        # reward for nothing, so it is refused, never judged "passed".
        if self.test is None and not self.cases:
            raise ValueError("a check needs at least one test case (or a test program)")
        if self.test is not None and not self.test.strip():
            raise ValueError("the test program is empty")
        if self.test is not None and self.language in NEEDS_PROMPT and not self.prompt.strip():
            # Without the function's trusted declaration the test cannot be built apart
            # from the solution, and in one process the solution could forge the verdict.
            raise ValueError(
                f"a {self.language} function test needs `prompt`: the trusted code that "
                "declares the function under test (as HumanEval-X's prompt), so that the "
                "test is compiled apart from the solution"
            )
        if (
            self.test is not None
            and self.language == "javascript"
            and not self.prompt.strip()
            and not self.entry_point
        ):
            raise ValueError(
                "a javascript function test needs `entry_point` (or a `prompt` that "
                "declares it), so that the test runs apart from the solution"
            )
        return self


class Check(BaseModel):
    """The verdict on one program."""

    status: Status
    feedback: str = ""
    compile_ms: float = 0.0
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
        """One line of `codeloop check --batch`'s output (docs/ARCHITECTURE.md)."""
        return {
            "status": self.status,
            "passed": self.passed,
            "feedback": self.feedback,
            "compile_ms": round(self.compile_ms, 1),
            "run_ms": round(self.run_ms, 1),
        }


# --- output comparison ---------------------------------------------------------------------


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
    if not any(phrase in stderr for phrase in language.compile_error):
        return False
    if language.name == "python":
        return "Traceback (most recent call last)" not in stderr
    return "internalCompileFunction" in stderr or "wrapSafe" in stderr


class Sandbox:
    """Checks programs in one worker: its own uid, cgroups and scratch folders."""

    def __init__(self, backend: str = "bwrap", worker: int = 0) -> None:
        self.backend = harness.make_backend(backend, worker)
        self.scratch = shared_folder("scratch", None) / f"w{worker}"
        self.cache = CompileCache()
        self._canary_passed: dict[str, float] = {}
        self._gocache: Path | None = None
        self._pch: Path | None = None
        warm = warm_enabled() and self.backend.name == "bwrap"
        self.warm = WarmPython(self.backend) if warm else None
        """The worker's warm Python sandbox (None: every check starts a cold one)."""
        service = javac_service.enabled() and self.backend.name == "bwrap"
        self.javac = javac_service.JavacService(self.backend, self.scratch) if service else None
        """The worker's javac JVM (None: every Java compile starts its own)."""

    def close(self) -> None:
        """Stop the warm sandbox and the javac service, and remove their cgroups (the
        worker is done)."""
        if self.warm is not None:
            self.warm.stop()
        if self.javac is not None:
            self.javac.stop()

    def describe(self) -> str:
        text = self.backend.describe()
        if self.warm is not None:
            if not self.warm.problem:
                self.warm.problem = self.warm.start()  # said only once it has started
            state = f"off ({self.warm.problem})" if self.warm.problem else "on"
            text += f"; warm Python sandbox: {state}"
        return text

    def _limits(self, language: Language, limits: SandboxLimits) -> harness.RunLimits:
        return harness.RunLimits(
            wall_s=limits.time_s + language.startup_s,
            cpu_s=limits.time_s + language.startup_s,
            memory_mib=limits.memory_mib + language.memory_overhead_mib,
            output_bytes=limits.output_kib * 1024,
            processes=max(limits.processes, language.processes),
            workdir_mib=limits.workdir_mib,
            address_space=language.address_space,
            virtual_overhead_mib=language.virtual_overhead_mib,
        )

    def _compile_limits(self, limits: SandboxLimits) -> harness.RunLimits:
        return harness.RunLimits(
            wall_s=limits.compile_time_s,
            cpu_s=limits.compile_time_s,
            memory_mib=max(2048, limits.memory_mib),
            output_bytes=1 << 20,
            processes=512,
            workdir_mib=512,
            address_space=False,
            virtual_overhead_mib=COMPILE_VIRTUAL_OVERHEAD_MIB,
            file_size_mib=512,
        )

    # -- compilation ---------------------------------------------------------------------

    def _compile_setup(
        self, language: Language, source: str, argv: list[str]
    ) -> tuple[list[str], list[tuple[str, str, bool]], dict[str, str]]:
        """Per-language compile extras: the Go build cache (read-only: only trusted
        warm-ups write it), the C++ precompiled header."""
        binds: list[tuple[str, str, bool]] = []
        env = dict(language.env)
        if language.name == "go":
            if self._gocache is None:
                self._gocache = shared_folder("gocache", self.backend.compile_uid)
            go_binds, go_env = go_check_cache(self, language, self._gocache)
            binds += go_binds
            env.update(go_env)
        if language.name == "cpp" and re.search(r"#\s*include\s*<bits/stdc\+\+\.h>", source):
            pch = self._ensure_pch(language)
            if pch is not None:
                binds.append((str(pch), "/pch", False))
                argv = [argv[0], "-I/pch", *argv[1:]]
        return argv, binds, env

    def _ensure_pch(self, language: Language) -> Path | None:
        """Build <bits/stdc++.h> once per toolchain and flags, shared by all workers."""
        assert language.compile is not None
        flags = [flag for flag in language.compile if flag.startswith(("-O", "-std="))]
        key = compile_key("cpp-pch", toolchain_version("cpp"), flags, {})[:16]
        folder = shared_folder("pch", self.backend.compile_uid) / key
        target = folder / "bits" / "stdc++.h.gch"
        if target.exists():
            return folder
        with locked("pch"):
            if target.exists():
                return folder
            box = harness.prepare_box(self.scratch, self.backend.compile_uid)
            try:
                (box / "stdcxx.h").write_text("#include <bits/stdc++.h>\n")
                argv = [
                    "/usr/bin/g++",
                    *flags,
                    "-x",
                    "c++-header",
                    "/box/stdcxx.h",
                    "-o",
                    "/box/stdc++.h.gch",
                ]
                run = harness.run(
                    self.backend,
                    argv,
                    box=box,
                    compile_step=True,
                    limits=self._compile_limits(SandboxLimits()),
                )
                built = box / "stdc++.h.gch"
                if run.exit_code != 0 or not built.exists():
                    return None
                target.parent.mkdir(parents=True, exist_ok=True)
                temp = target.with_suffix(".tmp")
                shutil.copyfile(built, temp)
                temp.chmod(0o644)
                temp.replace(target)
            finally:
                harness.remove_box(box)
        return folder

    def _compile(
        self,
        language: Language,
        box: Path,
        files: dict[str, bytes],
        limits: SandboxLimits,
        build: TestBuild | None = None,
    ) -> tuple[Check | None, float]:
        """Compile in the sandbox (or load from cache); a Check only when it failed."""
        argv = build.compile if build else language.compile_argv(limits.memory_mib)
        if argv is None:
            return None, 0.0
        source = files.get(language.source, b"").decode("utf-8", errors="replace")
        argv, binds, env = self._compile_setup(language, source, argv)
        if build:
            binds, env = [*binds, *build.binds], {**env, **build.env}
        toolchain = toolchain_version(language.name)
        key = compile_key(language.name, toolchain, argv, files, env, binds)
        outcome = self.cache.load(key, box)
        elapsed = 0.0
        if outcome is None:
            run = self._compile_in_service(language, argv, box, files, limits)
            if run is None:
                run = self._run_compiler(argv, box, env, binds, limits)
            elapsed = run.wall_ms
            stderr = _decode(run.stderr) + _decode(run.stdout)
            if run.setup_error:  # from bwrap's status pipe, never from compiler output
                return self._failed("environment_error", run.setup_error), elapsed
            if run.timed_out:
                return self._failed("compile_error", "Compilation timed out."), elapsed
            outcome = {"ok": run.exit_code == 0, "stderr": stderr}
            if not outcome["ok"]:
                broken = self._broken_toolchain(language, limits)
                if broken is not None:
                    return self._failed("environment_error", broken), elapsed
            # Only a compiler that ran to its own end is a fact about the source: one
            # killed by a signal, the OOM killer or the output cap may do better next time.
            if run.exit_code is not None and not (run.oom_killed or run.output_exceeded):
                self.cache.save(key, box, outcome)
        if not outcome["ok"]:
            feedback = _compile_feedback(outcome["stderr"])
            return self._failed("compile_error", feedback, compile_ms=elapsed), elapsed
        return None, elapsed

    def _compile_in_service(
        self,
        language: Language,
        argv: list[str],
        box: Path,
        files: dict[str, bytes],
        limits: SandboxLimits,
    ) -> harness.RunResult | None:
        """A Java compile by the worker's javac service (None: compile the one-shot way)."""
        if self.javac is None or language.name != "java":
            return None
        batch = javac_batch(self, language)
        if batch is None:
            return None
        request = javac_service.groups_of(argv, f"{JAVAC_BATCH_MOUNT}/{JAVAC_BATCH_JAR}")
        if request is None:
            return None
        return self.javac.compile(
            language,
            batch[0],
            JAVAC_BATCH_MOUNT,
            JAVAC_BATCH_JAR,
            request,
            box,
            files,
            self._compile_limits(limits),
        )

    def _run_compiler(
        self,
        argv: list[str],
        box: Path,
        env: dict[str, str],
        binds: list[tuple[str, str, bool]],
        limits: SandboxLimits,
    ) -> harness.RunResult:
        """A compile step in the sandbox, as the compile uid, under compile limits."""
        return harness.run(
            self.backend,
            argv,
            box=box,
            compile_step=True,
            env=env,
            binds=binds,
            limits=self._compile_limits(limits),
        )

    def _broken_toolchain(self, language: Language, limits: SandboxLimits) -> str | None:
        """After a failed compile: does the language's known-good canary compile here?

        A compiler that cannot write its output, find its libraries or start at all
        fails every source alike; that is the environment's fault, and caching it as
        the source's compile_error would fail a correct answer for good. The canary is
        never cached; a pass is remembered for CANARY_TTL_S per worker. Returns what
        went wrong when the canary fails too, else None.
        """
        passed = self._canary_passed.get(language.name)
        if not language.canary or (passed is not None and time.monotonic() - passed < CANARY_TTL_S):
            return None
        argv = language.compile_argv(limits.memory_mib)
        assert argv is not None
        argv, binds, env = self._compile_setup(language, language.canary, argv)
        box = harness.prepare_box(self.scratch, self.backend.compile_uid)
        try:
            (box / language.source).write_text(language.canary)
            (box / language.source).chmod(0o644)
            run = self._run_compiler(argv, box, env, binds, limits)
        finally:
            harness.remove_box(box)
        if run.exit_code == 0 and not run.setup_error:
            self._canary_passed[language.name] = time.monotonic()
            return None
        detail = run.setup_error or (_decode(run.stderr) + _decode(run.stdout)).strip()
        return (
            f"the {language.name} compiler also fails on a known-good program here, so "
            f"the failure is the toolchain's or the sandbox's: {detail[:400]}"
        )

    def _failed(self, status: str, feedback: str, **extra: object) -> Check:
        return Check(
            status=status,
            feedback=feedback[:FEEDBACK_CHARS],  # type: ignore[arg-type]
            backend=self.backend.name,
            **extra,
        )

    # -- checking ------------------------------------------------------------------------

    def _missing(self, language: Language) -> Check | None:
        missing = language.missing_tools()
        if missing:
            return self._failed(
                "environment_error",
                f"{language.name} toolchain missing: {', '.join(missing)}; "
                f"install with: {language.install}",
            )
        problem = self.backend.problem()
        return self._failed("environment_error", problem) if problem else None

    def check(self, request: CheckRequest) -> Check:
        """Check one request; never raises for anything the program does."""
        try:
            language = get(request.language)
            parse_checker(request.checker)
        except ValueError as error:
            return self._failed("environment_error", str(error))
        problem = self._missing(language)
        if problem:
            return problem
        size = len(request.program.encode("utf-8"))
        if size > MAX_PROGRAM_BYTES:
            # Refused before anything parses it (composers' regexes, compilers): a
            # program of this size is no answer, and must not cost minutes.
            return self._failed(
                "compile_error",
                f"the program is {size} bytes; the sandbox takes at most {MAX_PROGRAM_BYTES}",
                cases_total=max(1, len(request.cases)),
            )
        limits = request.limits or SandboxLimits()
        if request.test is not None:
            return self._check_tests(language, request, limits)
        files = {language.source: request.program.encode("utf-8")}
        box = harness.prepare_box(self.scratch, self.backend.compile_uid)
        try:
            for name, data in files.items():
                (box / name).write_bytes(data)
                (box / name).chmod(0o644)
            failed, compile_ms = self._compile(language, box, files, limits)
            if failed:
                return failed
            return self._run_cases(language, box, request, limits, compile_ms)
        finally:
            harness.remove_box(box)

    def _check_tests(
        self, language: Language, request: CheckRequest, limits: SandboxLimits
    ) -> Check:
        """A function-level task: compose program and test, compile once, run once."""
        try:
            context = TestContext(prompt=request.prompt, entry_point=request.entry_point)
            build = compose(
                self, language, request.program, request.test or "", limits.memory_mib, context
            )
        except TaskRefused as error:
            return self._failed("environment_error", str(error), task_error=True)
        except ValueError as error:
            return self._failed("environment_error", str(error))
        run = self._run_warm(language, build, limits)
        if run is not None:
            return self._test_verdict(language, build, run, 0.0)
        box = harness.prepare_box(self.scratch, self.backend.compile_uid)
        try:
            for name, data in build.files.items():
                path = box / name
                if not path.parent.exists():
                    path.parent.mkdir(parents=True)
                    if self.backend.compile_uid is not None:  # compilers write there
                        os.chown(path.parent, self.backend.compile_uid, self.backend.compile_uid)
                path.write_bytes(data)
                path.chmod(0o644)
            failed, compile_ms = self._compile(language, box, build.files, limits, build)
            if failed:
                return failed
            run = harness.run(
                self.backend,
                build.run,
                box=box,
                stdin=build.stdin,
                limits=self._limits(language, limits),
                env=build.env,
                binds=build.binds,
                partner=build.partner,
                solution_files=build.solution_files,
            )
        finally:
            harness.remove_box(box)
        return self._test_verdict(language, build, run, compile_ms)

    def _run_warm(
        self, language: Language, build: TestBuild, limits: SandboxLimits
    ) -> harness.RunResult | None:
        """A Python function test in the worker's warm sandbox; None: run it cold.

        A warm sandbox that cannot run here (or broke) is switched off for this worker
        with its reason in `describe()`, and the check runs cold: only slower.
        """
        if self.warm is None or self.warm.problem or language.name != "python":
            return None
        program = build.files[language.source]
        run = self.warm.check(program, build.stdin, self._limits(language, limits))
        if run.setup_error is None:
            return run
        self.warm.problem = run.setup_error
        self.warm.stop()
        return None

    def _test_verdict(
        self, language: Language, build: TestBuild, run: harness.RunResult, compile_ms: float
    ) -> Check:
        """The verdict of a composed test program's run."""
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
                backend=self.backend.name,
                task_error=True,
            )
        if status is None and marker and marker not in stdout:
            status = "wrong_answer"  # exited 0 before the tests finished (e.g. exit(0) inside)
        feedback = ""
        if status is not None:
            output = (_decode(run.stdout) + "\n" + stderr).strip()
            feedback = (
                f"Tests failed ({status.replace('_', ' ')}):\n{_clip(output, 1500, tail=True)}"
            )
        return Check(
            status=status or "passed",
            feedback=feedback[:FEEDBACK_CHARS],  # type: ignore[arg-type]
            compile_ms=compile_ms,
            run_ms=run.wall_ms,
            peak_memory_kib=run.peak_memory_kib,
            cases_passed=0 if status else 1,
            cases_total=1,
            backend=self.backend.name,
        )

    def _run_cases(
        self,
        language: Language,
        box: Path,
        request: CheckRequest,
        limits: SandboxLimits,
        compile_ms: float,
    ) -> Check:
        run_limits = self._limits(language, limits)
        argv = language.run_argv(limits.memory_mib)
        total_ms = 0.0
        peak: int | None = None
        for index, case in enumerate(request.cases):
            run = harness.run(
                self.backend,
                argv,
                box=box,
                stdin=case.input.encode("utf-8"),
                limits=run_limits,
                env=language.env,
            )
            total_ms += run.wall_ms
            if run.peak_memory_kib is not None:
                peak = max(peak or 0, run.peak_memory_kib)
            status = _run_status(language, run)
            if status == "runtime_error" and index == 0 and _parse_error(language, run):
                status = "compile_error"
                feedback = _compile_feedback(_decode(run.stderr))
            elif status is None and not outputs_match(
                case.output, _decode(run.stdout), request.checker
            ):
                status = "wrong_answer"
                feedback = _case_feedback(index, status, case, run)
            elif status == "environment_error":
                feedback = run.setup_error or _decode(run.stderr)[:FEEDBACK_CHARS]
            else:
                feedback = _case_feedback(index, status, case, run) if status else ""
            if status is not None:
                return Check(
                    status=status,
                    feedback=feedback,
                    compile_ms=compile_ms,  # type: ignore[arg-type]
                    run_ms=total_ms,
                    peak_memory_kib=peak,
                    cases_passed=index,
                    cases_total=len(request.cases),
                    backend=self.backend.name,
                )
        return Check(
            status="passed",
            compile_ms=compile_ms,
            run_ms=total_ms,
            peak_memory_kib=peak,
            cases_passed=len(request.cases),
            cases_total=len(request.cases),
            backend=self.backend.name,
        )
