"""Checking one program: compile once, run each case, compare outside the sandbox.

The request and verdict types live in `request.py`, output comparison in `verdict.py`,
and what is particular to a language in its home (`languages/<name>/`).

Expected outputs never enter the sandbox: the program only ever sees a case's
input, and its output is compared here. The verdict is one status from a closed
set; an environment problem (toolchain missing, sandbox broken) is its own status
and never counts as a wrong answer.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from codeloop.config import SandboxLimits
from codeloop.sandbox import harness
from codeloop.sandbox.cache import CompileCache, compile_key, locked, shared_folder
from codeloop.sandbox.function_tests import TaskRefused, TestBuild, TestContext, compose
from codeloop.sandbox.language import Language
from codeloop.sandbox.languages import get, home, toolchain_version
from codeloop.sandbox.languages.java import javac_service
from codeloop.sandbox.languages.java.javac import JAVAC_BATCH_JAR, JAVAC_BATCH_MOUNT, javac_batch
from codeloop.sandbox.request import (
    COMPILE_VIRTUAL_OVERHEAD_MIB,
    FEEDBACK_CHARS,
    MAX_PROGRAM_BYTES,
    Check,
    CheckRequest,
)
from codeloop.sandbox.verdict import (
    _case_feedback,
    _clip,
    _compile_feedback,
    _decode,
    _parse_error,
    _run_status,
    outputs_match,
    parse_checker,
)
from codeloop.sandbox.warm import WarmPython
from codeloop.sandbox.warm import enabled as warm_enabled

COMPILE_TIMED_OUT = "Compilation timed out."
"""The feedback of a compile that met its wall-clock limit (not cached: it may finish
on a quieter machine)."""
CANARY_TTL_S = 120.0
"""How long a worker trusts a toolchain after its canary compiled."""


class Sandbox:
    """Checks programs in one worker: its own uid, cgroups and scratch folders."""

    def __init__(self, backend: str = "bwrap", worker: int = 0) -> None:
        self.backend = harness.make_backend(backend, worker)
        self.scratch = shared_folder("scratch", None) / f"w{worker}"
        self.cache = CompileCache()
        self._canary_passed: dict[str, float] = {}
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
        self.backend.cgroups.close()

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

    def compile_limits(self, limits: SandboxLimits) -> harness.RunLimits:
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
        """The language's compile extras, from its home's `compile_setup` (Go: the shared
        build cache, read-only; C++: the precompiled <bits/stdc++.h>)."""
        env = dict(language.env)
        setup = home(language.name).compile_setup
        if setup is None:
            return argv, [], env
        argv, binds, extra = setup(self, language, source, argv)
        return argv, binds, {**env, **extra}

    def _compile_plan(
        self,
        language: Language,
        files: dict[str, bytes],
        argv: list[str],
        build: TestBuild | None,
    ) -> tuple[list[str], list[tuple[str, str, bool]], dict[str, str], str]:
        """The compile's command, binds and environment (the language's extras and the
        build's), and its compile-cache key."""
        source = files.get(language.source, b"").decode("utf-8", errors="replace")
        argv, binds, env = self._compile_setup(language, source, argv)
        if build:
            binds, env = [*binds, *build.binds], {**env, **build.env}
        toolchain = toolchain_version(language.name)
        return argv, binds, env, compile_key(language.name, toolchain, argv, files, env, binds)

    def _compile(
        self,
        language: Language,
        box: Path,
        files: dict[str, bytes],
        limits: SandboxLimits,
        build: TestBuild | None = None,
        argv: list[str] | None = None,
    ) -> tuple[Check | None, float]:
        """Compile in the sandbox (or load from cache); a Check only when it failed.

        `argv`: the command (default: the build's, else the language's stdio compile)."""
        argv = argv or (build.compile if build else language.compile_argv(limits.memory_mib))
        if argv is None:
            return None, 0.0
        argv, binds, env, key = self._compile_plan(language, files, argv, build)
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
                return self._failed("compile_error", COMPILE_TIMED_OUT), elapsed
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

    def _compile_trusted(
        self, language: Language, box: Path, build: TestBuild, limits: SandboxLimits
    ) -> tuple[Check | None, float]:
        """The test's half into `box`: from the compile cache, else compiled once.

        On a miss it is compiled in a box of its own (the solution's compile never
        sees the test, and the test's never sees the solution), under a lock per key,
        so that workers checking answers to one task build it once between them; then
        that box (sources and products) is copied into `box`. A failure of a half
        built from the task alone (`TrustedHalf.from_task`) is the task's: no answer
        could pass, so it is no verdict on this one; otherwise a compile_error.
        """
        trusted = build.trusted
        assert trusted is not None
        key = self._compile_plan(language, trusted.files, trusted.compile, build)[3]
        outcome = self.cache.load(key, box)
        if outcome is not None and outcome["ok"]:
            return None, 0.0
        with locked(f"trusted-{key[:2]}"):
            own = harness.prepare_box(self.scratch, self.backend.compile_uid)
            try:
                write_box(own, trusted.files, self.backend.compile_uid)
                failed, elapsed = self._compile(
                    language, own, trusted.files, limits, build, trusted.compile
                )
                if failed is None:
                    shutil.copytree(own, box, symlinks=True, dirs_exist_ok=True)
            finally:
                harness.remove_box(own)
        if failed is not None and failed.status == "compile_error" and trusted.from_task:
            # A timeout is this machine's (too slow now), a compiler's error the task's.
            timed_out = failed.feedback == COMPILE_TIMED_OUT
            failed = self._failed(
                "environment_error",
                "The task's test did not compile (it is built from the task alone, so no "
                f"answer could pass it): {failed.feedback}",
                task_error=not timed_out,
            )
        return failed, elapsed

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
            self.compile_limits(limits),
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
            limits=self.compile_limits(limits),
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
        test_ms = 0.0
        try:
            write_box(box, build.files, self.backend.compile_uid)
            failed, compile_ms = self._compile(language, box, build.files, limits, build)
            if failed is None and build.trusted is not None:
                # After the solution's compile, which so never sees the test's sources.
                failed, test_ms = self._compile_trusted(language, box, build, limits)
                compile_ms += test_ms
            if failed:
                return failed.model_copy(
                    update={"compile_ms": compile_ms, "test_compile_ms": test_ms}
                )
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
        verdict = self._test_verdict(language, build, run, compile_ms)
        return verdict.model_copy(update={"test_compile_ms": test_ms})

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
        run = self.warm.check(
            program, build.stdin, self._limits(language, limits), build.success_marker
        )
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
        passed = 0
        failed: tuple[str, str] | None = None  # the first failure: status, feedback
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
            if status is None:
                passed += 1
                continue
            failed = failed or (status, feedback)
            # a program that does not parse, or a sandbox that failed, ends the check
            if not request.every_case or status in ("compile_error", "environment_error"):
                break
        if failed is not None:
            return Check(
                status=failed[0],  # type: ignore[arg-type]
                feedback=failed[1],
                compile_ms=compile_ms,
                run_ms=total_ms,
                peak_memory_kib=peak,
                cases_passed=passed,
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


def write_box(box: Path, files: dict[str, bytes], compile_uid: int | None) -> None:
    """Write `files` into `box`, readable by the sandbox; the folders they create are the
    compile uid's (compilers write their products there)."""
    for name, data in files.items():
        path = box / name
        if not path.parent.exists():
            path.parent.mkdir(parents=True)
            if compile_uid is not None:
                os.chown(path.parent, compile_uid, compile_uid)
        path.write_bytes(data)
        path.chmod(0o644)
