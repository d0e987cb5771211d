"""Checking one program: compile once, run each case, compare outside the sandbox.

The request and verdict types live in `request.py`; what a run means (each case's
status and feedback, the cases folded into one verdict, a test's verdict, a refusal,
output comparison) in `verdict.py`, which this module asks with the facts it saw (it
names no status itself); and what is particular to a language in its home
(`languages/<name>/`).

Expected outputs never enter the sandbox: the program only ever sees a case's
input, and its output is compared here. The verdict is one status from a closed
set; an environment problem (toolchain missing, sandbox broken) is its own status
and never counts as a wrong answer.
"""

from __future__ import annotations

from pathlib import Path

from codeloop.config import SandboxLimits
from codeloop.sandbox import harness, run_files
from codeloop.sandbox.cache import shared_folder
from codeloop.sandbox.compiler import Compiler
from codeloop.sandbox.function_tests import TaskRefused, TestContext, compose
from codeloop.sandbox.home import Home, WarmRunner
from codeloop.sandbox.language import Language
from codeloop.sandbox.languages import HOMES, get
from codeloop.sandbox.request import (
    MAX_PROGRAM_BYTES,
    Check,
    CheckRequest,
    ProgramRun,
    RunRequest,
    Step,
)
from codeloop.sandbox.verdict import (
    CaseTally,
    Refusal,
    case_verdict,
    compile_step,
    environment_step,
    refused,
    run_step,
    test_verdict,
    unwrapped_step,
)


class Sandbox:
    """Checks programs in one worker: its own uid, cgroups and scratch folders."""

    def __init__(self, backend: str = "bwrap", worker: int = 0) -> None:
        self.backend = harness.make_backend(backend, worker)
        self.scratch = shared_folder("scratch", None) / f"w{worker}"
        self.compiler = Compiler(self.backend, self.scratch)
        """The worker's compiles, its compile cache and compile services (`compiler.py`)."""
        self.warm: WarmRunner | None = None
        """The worker's warm sandbox for function tests (None: every check starts a cold
        one), of the first home that keeps one here (`Home.warm_runner`)."""
        self.warm_home: Home | None = None
        """The home whose tests run in `warm`."""
        for home in HOMES:
            runner = home.warm_runner(self.backend) if home.warm_runner else None
            if runner is not None:
                self.warm, self.warm_home = runner, home
                break

    def close(self) -> None:
        """Stop the warm sandbox and the compile services, and remove their cgroups (the
        worker is done)."""
        if self.warm is not None:
            self.warm.stop()
        self.compiler.close()
        self.backend.cgroups.close()

    def describe(self) -> str:
        text = self.backend.describe()
        if self.warm is not None and self.warm_home is not None:
            if not self.warm.problem:
                self.warm.problem = self.warm.start()  # said only once it has started
            state = f"off ({self.warm.problem})" if self.warm.problem else "on"
            text += f"; warm {self.warm_home.title} sandbox: {state}"
        return text

    def _runs_warm(self, language: Language) -> bool:
        """Whether `language`'s function tests run in the worker's warm sandbox now."""
        if self.warm is None or self.warm.problem or self.warm_home is None:
            return False
        return self.warm_home.language.name == language.name

    def _refused(self, reason: Refusal, detail: str, **extra: object) -> Check:
        return refused(reason, detail, self.backend.name, **extra)

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

    def check(self, request: CheckRequest) -> Check:
        """Check one request; never raises for anything the program does."""
        try:
            language = get(request.language)  # the request's own fields are valid already
        except ValueError as error:
            return self._refused("unknown_language", str(error))
        missing = language.missing_tools()
        if missing:
            return self._refused("toolchain_missing", _missing(language, missing))
        problem = self.backend.problem()
        if problem:
            return self._refused("sandbox_broken", problem)
        size = len(request.program.encode("utf-8"))
        if size > MAX_PROGRAM_BYTES:
            # Refused before anything parses it (composers' regexes, compilers): a
            # program of this size is no answer, and must not cost minutes.
            return self._refused(
                "program_too_big",
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
            failed, compile_ms = self.compiler.compile(language, box, files, limits)
            if failed:
                return failed
            return self._run_cases(language, box, request, limits, compile_ms)
        finally:
            harness.remove_box(box)

    def run_program(self, request: RunRequest) -> ProgramRun:
        """Run one program once on one stdin and hand back what it printed, no verdict:
        compiled in the sandbox (or loaded from the compile cache) and run as a stdio
        case is, under the same limits. Never raises for anything the program does."""
        try:
            language = get(request.language)
        except ValueError as error:
            return self._broken_run(str(error))
        missing = language.missing_tools()
        if missing:
            return self._broken_run(_missing(language, missing))
        problem = self.backend.problem()
        if problem:
            return self._broken_run(problem)
        limits = request.limits or SandboxLimits()
        build = language.compile_argv(limits.memory_mib)
        argv = language.run_argv(limits.memory_mib)
        if request.debug:
            build, argv = language.debug_build(build, argv)
        plain = build is None and argv == language.run_argv(limits.memory_mib)
        if plain and not (request.files or request.fetch_files):
            warm = self._run_warm(language, request, limits)
            if warm is not None:
                return ProgramRun(run=warm, backend=self.backend.name)
        files = {language.source: request.program.encode("utf-8")}
        box = harness.prepare_box(self.scratch, self.backend.compile_uid)
        try:
            (box / language.source).write_bytes(files[language.source])
            (box / language.source).chmod(0o644)
            compiled = None
            if build is not None:
                facts = self.compiler.compile_facts(language, box, files, limits, argv=build)
                compiled = compile_step(facts)
                if not facts.ok:
                    return ProgramRun(compile=compiled, backend=self.backend.name)
            mark = None
            if request.files or request.fetch_files:
                run_files.write_inputs(box, request.files)
                argv, mark = run_files.wrap(list(argv), request.fetch_files)
            run = harness.run(
                self.backend,
                argv,
                box=box,
                stdin=request.stdin.encode("utf-8"),
                limits=self._limits(language, limits),
                env=language.env,
                trailer=mark is not None,
            )
        finally:
            harness.remove_box(box)
        step, fetched = run_step(language, run), {}
        if mark is not None:
            asked = request.fetch_files
            started, stdout, fetched = run_files.split(run.trailer, step.stdout, mark, asked)
            step, fetched = unwrapped_step(step, started, stdout, fetched)
        return ProgramRun(compile=compiled, run=step, backend=self.backend.name, files=fetched)

    def _run_warm(
        self, language: Language, request: RunRequest, limits: SandboxLimits
    ) -> Step | None:
        """`request` run in the worker's warm sandbox where its language keeps one (a
        fork instead of a fresh sandbox and interpreter); None where it does not, or
        broke (then switched off for this worker, and the run goes cold)."""
        if not self._runs_warm(language) or self.warm is None:
            return None
        program = request.program.encode("utf-8")
        stdin = request.stdin.encode("utf-8")
        run = self.warm.check(program, stdin, self._limits(language, limits), None, script=True)
        if run.setup_error is not None:
            self.warm.problem = run.setup_error
            self.warm.stop()
            return None
        return run_step(language, run)

    def _broken_run(self, problem: str) -> ProgramRun:
        return ProgramRun(run=environment_step(problem), backend=self.backend.name)

    def _check_tests(
        self, language: Language, request: CheckRequest, limits: SandboxLimits
    ) -> Check:
        """A function-level task: compose program and test, compile once, run once."""
        run_limits = self._limits(language, limits)
        try:
            context = TestContext(prompt=request.prompt, entry_point=request.entry_point)
            build = compose(
                self.compiler,
                language,
                request.program,
                request.test or "",
                limits.memory_mib,
                context,
            )
        except TaskRefused as error:
            return self._refused("task_refused", str(error))
        except ValueError as error:
            return self._refused("test_not_composed", str(error))
        if self._runs_warm(language):
            # Such a test runs in the worker's warm sandbox. One that cannot run here
            # (or broke) is switched off for this worker with its reason in `describe()`,
            # and the check runs cold: only slower.
            program = build.files[language.source]
            run = self.warm.check(program, build.stdin, run_limits, build.success_marker)
            if run.setup_error is None:
                return test_verdict(language, build, run, 0.0, self.backend.name)
            self.warm.problem = run.setup_error
            self.warm.stop()
        box = harness.prepare_box(self.scratch, self.backend.compile_uid)
        try:
            failed, compile_ms, test_ms = self.compiler.compile_build(language, box, build, limits)
            if failed:
                return failed.model_copy(
                    update={"compile_ms": compile_ms, "test_compile_ms": test_ms}
                )
            run = harness.run(
                self.backend,
                build.run,
                box=box,
                stdin=build.stdin,
                limits=run_limits,
                env=build.env,
                binds=build.binds,
                partner=build.partner,
                solution_files=build.solution_files,
            )
        finally:
            harness.remove_box(box)
        verdict = test_verdict(language, build, run, compile_ms, self.backend.name)
        return verdict.model_copy(update={"test_compile_ms": test_ms})

    def _run_cases(
        self,
        language: Language,
        box: Path,
        request: CheckRequest,
        limits: SandboxLimits,
        compile_ms: float,
    ) -> Check:
        """Run each stdio case and fold the cases' verdicts into the check's
        (`verdict.CaseTally`, which also says when the check stops)."""
        run_limits = self._limits(language, limits)
        argv = language.run_argv(limits.memory_mib)
        tally = CaseTally(cases_total=len(request.cases), every_case=request.every_case)
        for index, case in enumerate(request.cases):
            run = harness.run(
                self.backend,
                argv,
                box=box,
                stdin=case.input.encode("utf-8"),
                limits=run_limits,
                env=language.env,
            )
            if not tally.add(run, case_verdict(language, index, case, run, request.checker)):
                break
        return tally.check(compile_ms, self.backend.name)


def _missing(language: Language, tools: list[str]) -> str:
    """What a check or run says when the language's toolchain is not installed here."""
    return (
        f"{language.name} toolchain missing: {', '.join(tools)}; install with: {language.install}"
    )
