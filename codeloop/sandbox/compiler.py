"""Compiling in a worker's sandbox: one program's compile, or its outcome from the cache.

`check.Sandbox` asks for two kinds of compile: the answer's (the stdio program, or the
solution's half of a function test) and the test's half of a function test, which
depends on the task alone and so is compiled once per task (`compile_trusted`). Both
go through the compile cache; a failed compile is checked against the language's
canary before it counts against the source, so that a broken toolchain is an
environment error and never a wrong answer.

A compile reports facts (`verdict.CompileFacts`: the compiler's output, a timeout, a
sandbox or toolchain failure); what they mean is `verdict.py`'s (`compile_verdict`).

A worker resolves each language's toolchain once (`Toolchain`: its home's compile
extras and its version, a part of every cache key), so that a compile reads as the
steps it takes: the language's extras, the cache, the compiler, the cache. Where a
home keeps a long-lived compiler (`Home.compile_service`), the compiler step asks it
first.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path

from codeloop.config import SandboxLimits
from codeloop.sandbox import harness
from codeloop.sandbox.cache import CompileCache, compile_key, locked
from codeloop.sandbox.home import CompileService, CompileSetup
from codeloop.sandbox.language import Language, version_of
from codeloop.sandbox.languages import HOMES, home
from codeloop.sandbox.request import COMPILE_VIRTUAL_OVERHEAD_MIB, Check
from codeloop.sandbox.testbuild import TestBuild
from codeloop.sandbox.verdict import (
    CompileFacts,
    compile_verdict,
    compiler_output,
    trusted_compile_verdict,
)

CANARY_TTL_S = 120.0
"""How long a worker trusts a toolchain after its canary compiled."""


@dataclass(frozen=True)
class Toolchain:
    """What a worker knows of a language's compiler once it has looked it up."""

    version: str
    """The first line of the toolchain's version output: part of every cache key."""
    setup: CompileSetup | None
    """The home's compile extras (Go: the shared build cache; C++: precompiled headers)."""


@dataclass(frozen=True)
class Plan:
    """One compile as it will run: its command, binds, environment and cache key."""

    argv: list[str]
    binds: list[tuple[str, str, bool]]
    env: dict[str, str]
    key: str


def compile_limits(limits: SandboxLimits) -> harness.RunLimits:
    """The limits of a compile step: the compiler's own needs, not the program's."""
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


class Compiler:
    """A worker's compiles: its backend and scratch folder, the compile cache, the
    canary's last pass per language, and the compile services its homes keep.

    It is also the `BuildHost` the language homes build their one-time builds with."""

    def __init__(self, backend: harness.Backend, scratch: Path) -> None:
        self.backend = backend
        self.scratch = scratch
        self.cache = CompileCache()
        self._toolchains: dict[str, Toolchain] = {}
        self._canary_passed: dict[str, float] = {}
        self.services: dict[str, CompileService] = {}
        """Per language, the worker's long-lived compiler (none: each compile starts its own)."""
        for found in HOMES:
            service = found.compile_service(backend, scratch) if found.compile_service else None
            if service is not None:
                self.services[found.language.name] = service

    def compile_limits(self, limits: SandboxLimits) -> harness.RunLimits:
        return compile_limits(limits)

    def close(self) -> None:
        """Stop the compile services (the worker is done)."""
        for service in self.services.values():
            service.stop()

    def toolchain(self, language: Language) -> Toolchain:
        """The language's toolchain, looked up on the worker's first compile in it."""
        known = self._toolchains.get(language.name)
        if known is None:
            known = Toolchain(version_of(language), home(language.name).compile_setup)
            self._toolchains[language.name] = known
        return known

    def plan(
        self,
        language: Language,
        files: dict[str, bytes],
        argv: list[str],
        build: TestBuild | None = None,
    ) -> Plan:
        """The compile's command, binds and environment (the language's extras and the
        build's), and its compile-cache key."""
        toolchain = self.toolchain(language)
        binds: list[tuple[str, str, bool]] = []
        env = dict(language.env)
        if toolchain.setup is not None:
            source = files.get(language.source, b"").decode("utf-8", errors="replace")
            argv, binds, extra = toolchain.setup(self, language, source, argv)
            env.update(extra)
        if build:
            binds, env = [*binds, *build.binds], {**env, **build.env}
        key = compile_key(language.name, toolchain.version, argv, files, env, binds)
        return Plan(argv, binds, env, key)

    def compile(
        self,
        language: Language,
        box: Path,
        files: dict[str, bytes],
        limits: SandboxLimits,
        build: TestBuild | None = None,
        argv: list[str] | None = None,
    ) -> tuple[Check | None, float]:
        """Compile in the sandbox (or load from cache); a Check only when it failed
        (`verdict.compile_verdict`), and the compile's wall time.

        `argv`: the command (default: the build's, else the language's stdio compile)."""
        facts = self.compile_facts(language, box, files, limits, build, argv)
        return compile_verdict(facts, self.backend.name), facts.ms

    def compile_facts(
        self,
        language: Language,
        box: Path,
        files: dict[str, bytes],
        limits: SandboxLimits,
        build: TestBuild | None = None,
        argv: list[str] | None = None,
    ) -> CompileFacts:
        """What compiling `files` into `box` did, from the compile cache or a compile in
        the sandbox (`argv` as for `compile`); ok with nothing to compile."""
        argv = argv or (build.compile if build else language.compile_argv(limits.memory_mib))
        if argv is None:
            return CompileFacts(ok=True)
        plan = self.plan(language, files, argv, build)
        outcome = self.cache.load(plan.key, box)
        if outcome is not None:
            return CompileFacts(ok=outcome["ok"], output=outcome["stderr"])
        run = self._compile_in_service(language, plan.argv, box, files, limits)
        if run is None:
            run = self._run_compiler(plan.argv, box, plan.env, plan.binds, limits)
        if run.setup_error or run.timed_out:
            # Neither says anything about the source (bwrap's status pipe, or a machine too
            # slow now): never cached, never checked against the canary.
            setup_error = run.setup_error or None
            return CompileFacts(
                False, ms=run.wall_ms, timed_out=run.timed_out, setup_error=setup_error
            )
        facts = CompileFacts(ok=run.exit_code == 0, output=compiler_output(run), ms=run.wall_ms)
        if not facts.ok:
            broken = self._broken_toolchain(language, limits)
            if broken is not None:
                return replace(facts, broken_toolchain=broken)
        # Only a compiler that ran to its own end is a fact about the source: one
        # killed by a signal, the OOM killer or the output cap may do better next time.
        if run.exit_code is not None and not (run.oom_killed or run.output_exceeded):
            self.cache.save(plan.key, box, {"ok": facts.ok, "stderr": facts.output})
        return facts

    def compile_build(
        self, language: Language, box: Path, build: TestBuild, limits: SandboxLimits
    ) -> tuple[Check | None, float, float]:
        """A composed function test into `box`: the solution's half, then the test's
        (`compile_trusted`), so that the solution's compile never sees the test's
        sources. (failure or None, compile ms of both, compile ms of the test's half)."""
        write_box(box, build.files, self.backend.compile_uid)
        failed, compile_ms = self.compile(language, box, build.files, limits, build)
        test_ms = 0.0
        if failed is None and build.trusted is not None:
            failed, test_ms = self.compile_trusted(language, box, build, limits)
        return failed, compile_ms + test_ms, test_ms

    def compile_trusted(
        self, language: Language, box: Path, build: TestBuild, limits: SandboxLimits
    ) -> tuple[Check | None, float]:
        """The test's half into `box`: from the compile cache, else compiled once.

        On a miss it is compiled in a box of its own (the solution's compile never
        sees the test, and the test's never sees the solution), under a lock per key,
        so that workers checking answers to one task build it once between them; then
        that box (sources and products) is copied into `box`. What a failure means
        (the task's fault where the half is built from the task alone) is
        `verdict.trusted_compile_verdict`'s.
        """
        trusted = build.trusted
        assert trusted is not None
        key = self.plan(language, trusted.files, trusted.compile, build).key
        outcome = self.cache.load(key, box)
        if outcome is not None and outcome["ok"]:
            return None, 0.0
        with locked(f"trusted-{key[:2]}"):
            own = harness.prepare_box(self.scratch, self.backend.compile_uid)
            try:
                write_box(own, trusted.files, self.backend.compile_uid)
                facts = self.compile_facts(
                    language, own, trusted.files, limits, build, trusted.compile
                )
                if facts.ok:
                    shutil.copytree(own, box, symlinks=True, dirs_exist_ok=True)
            finally:
                harness.remove_box(own)
        return trusted_compile_verdict(facts, trusted.from_task, self.backend.name), facts.ms

    def _compile_in_service(
        self,
        language: Language,
        argv: list[str],
        box: Path,
        files: dict[str, bytes],
        limits: SandboxLimits,
    ) -> harness.RunResult | None:
        """A compile by the language's compile service (None: compile the one-shot way)."""
        service = self.services.get(language.name)
        if service is None:
            return None
        return service.compile_program(self, language, argv, box, files, compile_limits(limits))

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
            limits=compile_limits(limits),
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
        plan = self.plan(language, {language.source: language.canary.encode()}, argv)
        box = harness.prepare_box(self.scratch, self.backend.compile_uid)
        try:
            (box / language.source).write_text(language.canary)
            (box / language.source).chmod(0o644)
            run = self._run_compiler(plan.argv, box, plan.env, plan.binds, limits)
        finally:
            harness.remove_box(box)
        if run.exit_code == 0 and not run.setup_error:
            self._canary_passed[language.name] = time.monotonic()
            return None
        detail = run.setup_error or compiler_output(run).strip()
        return (
            f"the {language.name} compiler also fails on a known-good program here, so "
            f"the failure is the toolchain's or the sandbox's: {detail[:400]}"
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
