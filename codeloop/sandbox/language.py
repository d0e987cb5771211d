"""The `Language` interface: how to compile, run and version-check one language.

Each language's whole story lives in its home, `sandbox/languages/<name>/`, whose
`HOME` (`home.Home`) holds an instance of this class beside its function tests,
prompt parts and hooks; `sandbox/languages/__init__.py` is the one registry. Commands are
argv templates with `{box}` (the read-only folder holding the source and build
output, `/box` inside the sandbox) and `{mem}` (the memory limit in MiB). Every tool
is named by its system path: toolchains under unreadable homes (pyenv, rustup in
/root) cannot be reached by the unprivileged sandbox user, so we never take them
from PATH.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

BOX = "/box"
"""Where the program's folder appears inside the sandbox (read-only while it runs)."""

NODE_MODULES = "/usr/lib/node_modules"
"""npm's global modules (JavaScript's and TypeScript's libraries and types: the
TypeScript compiler, @types/node, js-md5)."""

DEBIAN_NODE_MODULES = "/usr/share/nodejs"
"""Debian's node modules (`node-lodash`: lodash and its types, for MBXP's tests)."""

NODE_PATH = f"{NODE_MODULES}:{DEBIAN_NODE_MODULES}"
"""Where a program's `require` looks past its own folder: npm's modules first."""


@dataclass(frozen=True)
class Language:
    """One language: file names, commands, limits and how to install what it needs."""

    name: str
    source: str
    """File name the program is saved as inside the box."""
    run: tuple[str, ...]
    compile: tuple[str, ...] | None = None
    version: tuple[str, ...] = ()
    """Command whose output identifies the toolchain (part of the compile cache key)."""
    tools: tuple[str, ...] = ()
    """Files that must exist for this language to work."""
    install: str = ""
    """The exact command that installs what `tools` needs."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment of compile and run steps."""
    address_space: bool = True
    """Whether RLIMIT_AS may be set (not for runtimes that reserve huge virtual ranges)."""
    virtual_overhead_mib: int = 0
    """Address space a runtime reserves but never uses (JVM class space and code cache,
    Go's arenas, V8's reservations). Where no memory cgroup caps a run of a language
    without `address_space`, RLIMIT_AS is the memory limit plus this: a cap, looser
    than the cgroup's, rather than none. Measured with `prlimit --as` on hello
    programs: node 768 MiB, java 4 GiB, a Go binary 1 GiB."""
    processes: int = 16
    """Least process/thread limit the runtime needs to start at all."""
    startup_s: float = 0.0
    """Fixed start-up time added to the wall limit of each run (e.g. the JVM)."""
    memory_overhead_mib: int = 0
    """Memory the runtime needs beyond the program's own limit (JVM metaspace, code cache)."""
    out_of_memory: tuple[str, ...] = ()
    """stderr phrases by which the runtime reports a failed allocation."""
    compile_error: tuple[str, ...] = ()
    """stderr phrases that mean the program never started (interpreted languages)..."""
    compile_error_with: tuple[str, ...] = ()
    """...when one of these appears too (where the runtime names its own parse step)..."""
    compile_error_without: tuple[str, ...] = ()
    """...and none of these (a traceback: the program ran, and raised it itself)."""
    needs_prompt: bool = False
    """Function tests are compiled against a proxy built from the task's trusted
    declaration (`prompt`): a function check without one is refused."""
    canary: str = ""
    """A known-good program: when a compile fails, compiling this tells a broken
    toolchain or sandbox (an environment error, never cached) from a bad source."""
    aliases: tuple[str, ...] = ()
    """Other names clients send for this language (SandboxFusion's `nodejs`, `python3`)."""
    debug_compile_without: tuple[str, ...] = ()
    """Compile flags a debug build leaves out (Rust's `-O`: overflow checks stay on)."""
    debug_run_with: tuple[str, ...] = ()
    """Run flags a debug build adds after the runtime's path (Java's `-ea`: asserts on)."""
    mounts: tuple[str | tuple[str, str], ...] = ()
    """Host folders outside /usr the toolchain reads (Java's /etc/java-17-openjdk, the
    JVM's configuration), or (host folder, path in the box) pairs (Python's optional
    scientific runtime). Every sandbox binds them read-only where they exist, as it
    does the system folders (`harness.share_read_only`, called by the registry): the
    toolchain also runs in sandboxes no check of its language asked for (a compile
    service, one-time builds)."""
    needs_entry_point: bool = False
    """A function test needs `entry_point`, or a `prompt` that declares it: the test
    then runs apart from the solution (JavaScript's, which finds no `check(...)` call).
    Refused when the request is made."""

    def run_argv(self, memory_mib: int) -> list[str]:
        return [part.format(box=BOX, mem=memory_mib) for part in self.run]

    def compile_argv(self, memory_mib: int) -> list[str] | None:
        if self.compile is None:
            return None
        return [part.format(box=BOX, mem=memory_mib) for part in self.compile]

    def debug_build(
        self, build: list[str] | None, argv: list[str]
    ) -> tuple[list[str] | None, list[str]]:
        """The compile and run commands with the runtime checks a debug build keeps on."""
        if build is not None:
            build = [part for part in build if part not in self.debug_compile_without]
        if self.debug_run_with:
            argv = [argv[0], *self.debug_run_with, *argv[1:]]
        return build, argv

    def missing_tools(self) -> list[str]:
        return [tool for tool in self.tools if not os.path.exists(tool)]


@dataclass(frozen=True)
class Composed:
    """One HumanEval-X sample made ready for its check: the program, the test, and the
    trusted code the test relies on (the part of the program the answer did not write)."""

    program: str
    test: str
    trusted: str


BRACED_FUNCTION = (
    r"\b(?!(?:for|while|if|switch|catch)\b)(\w+)\s*\([^()]*\)\s*"
    r"(?:throws\s+[\w.,\s]+?)?\{\s*$"
)
"""The name before the last parameter list that opens a body at the end of its line (a
`throws` clause allowed), never a loop or branch of a helper's body: C-like declarations
whose return type leaves no keyword to anchor on (CPP/38's declaration has a `for`)."""


@dataclass(frozen=True)
class HumanEvalX:
    """How HumanEval-X names a language and how one of its rows becomes a task and a check."""

    file_code: str
    """The code in its file names and hub configs (`humaneval_js`)."""
    task_prefix: str
    """Its task id prefix (`JavaScript/12`)."""
    position: int
    """Its place in HumanEval-X's own list of languages, the order a suite lists them in."""
    entry_point: str
    """A pattern whose last match in the row's `declaration` (else its `prompt`) is the
    function under test; its first non-empty group is the name."""
    compose: Callable[[dict[str, Any], str], Composed] | None = None
    """`(row, generation) -> Composed`: the program and test exactly as CodeGeeX's
    `process_humaneval_test` builds them for this language (None: the generation follows
    the prompt, and the row's test is the test, as `evaluate/humaneval.py` composes)."""
    signature_in_declaration: bool = False
    """The prompt stops before the function's signature, which only `declaration` holds
    (the statement and the reference add it); otherwise the prompt ends with it."""


_versions: dict[str, str] = {}


def version_of(language: Language) -> str:
    """First line of the toolchain's version output, or 'missing: ...' (cached per process)."""
    if language.name not in _versions:
        missing = language.missing_tools()
        if missing:
            _versions[language.name] = f"missing: {', '.join(missing)}"
        else:
            result = subprocess.run(
                language.version, capture_output=True, text=True, timeout=60, check=False
            )
            text = (result.stdout or result.stderr).strip().splitlines()
            _versions[language.name] = text[0] if text else f"unknown (exit {result.returncode})"
    return _versions[language.name]
