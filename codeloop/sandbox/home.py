"""The `Home` contract: every part one language's home gives the rest of codeloop.

A home (`sandbox/languages/<name>/__init__.py`) exports one `HOME = Home(...)`, and
the registry (`sandbox/languages/__init__.py`) lists them. Generic code reads a
language's parts here and never names a language: what only some languages need (a
long-lived compiler, a warm sandbox, compile extras) is an optional hook that the home
needing it sets. `tests/test_language_homes.py` checks every field of every `HOME`
against the types declared below, so a new home that leaves a part out, or gives the
wrong kind of thing, fails there rather than in the middle of a check.

Its own module, not `language.py`: the hooks' types name the test build
(`testbuild`), which imports the harness, which imports `language`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from codeloop.sandbox import harness
from codeloop.sandbox.language import HumanEvalX, Language
from codeloop.sandbox.testbuild import BuildHost, TestBuild, TestContext

Binds = list[tuple[str, str, bool]]
"""Extra mounts of a sandbox: (host path, path inside, writable)."""

ComposeTest = Callable[[BuildHost, Language, str, str, int, TestContext], TestBuild]
"""`(host, language, program, test, memory_mib, context) -> TestBuild`: a function test
composed so that the verdict stays out of the program's reach (`function_tests`)."""

TrivialPrograms = Callable[..., dict[str, str]]
"""`(prompt, function, references=None) -> {what: program}`: what a model writes when it
solves nothing (zero value, echo), so that validation refuses tasks those pass."""

CompileSetup = Callable[
    [BuildHost, Language, str, list[str]], tuple[list[str], Binds, dict[str, str]]
]
"""`(host, language, source, argv) -> (argv, binds, env)`: compile extras beyond the
`Language` (Go's shared build cache, C++'s precompiled headers)."""


FailureNote = Callable[[str], str]
"""`(what a failed run wrote on stderr, or a check's feedback) -> note`: what a service's
answer adds beside the unchanged verdict when the failure names something this machine
lacks ('' for nothing): Python's optional scientific runtime, `make science`."""


class CompileService(Protocol):
    """A worker's long-lived compiler for one language (Java's javac JVM): the same
    compile as the one-shot command, without paying the compiler's start each time."""

    def compile_program(
        self,
        host: BuildHost,
        language: Language,
        argv: list[str],
        box: Path,
        files: dict[str, bytes],
        limits: harness.RunLimits,
    ) -> harness.RunResult | None:
        """Compile as `argv` would into `box`; None: compile the one-shot way instead."""
        ...

    def stop(self) -> None:
        """The worker is done: end the service and what it holds."""
        ...


class WarmRunner(Protocol):
    """A worker's warm sandbox for one language's function tests (Python's zygote): a
    fork per check instead of a fresh sandbox, equally isolated; it also runs one
    program on a stdin (`script`) as the language's own run would."""

    problem: str | None
    """Why it cannot run here (then the worker checks cold, only slower)."""

    @property
    def pid(self) -> int | None: ...

    def start(self) -> str | None:
        """Start it if it is not running; why it cannot run, or None."""
        ...

    def stop(self) -> None: ...

    def check(
        self,
        program: bytes,
        stdin: bytes,
        limits: harness.RunLimits,
        finished: str | None,
        script: bool = False,
    ) -> harness.RunResult:
        """Run one composed test on `program`, or (`script`) `program` itself on `stdin`
        (its `setup_error` says it could not)."""
        ...


CompileServiceFactory = Callable[[harness.Backend, Path], CompileService | None]
"""`(backend, scratch) -> service`, or None where it is switched off or cannot run."""

WarmRunnerFactory = Callable[[harness.Backend], WarmRunner | None]
"""`(backend) -> runner`, or None where it is switched off or cannot run."""


@dataclass(frozen=True)
class Home:
    """One language's home: its `Language` and everything else codeloop knows of it."""

    language: Language
    """Toolchain, mounts, stdio compile and run, limits, phrases of its failures."""
    title: str
    """The language's name in prompts and reports ("C++")."""
    fences: tuple[str, ...]
    """Code-fence tags an answer may use; the first is the one prompts ask for."""
    worked_answer: str
    """The ideal answer to the prompt's worked example (`recipe.WORKED_PROBLEM`: read two
    integers, print `2 * a + b`); prepare checks it in the sandbox before asking."""
    hello: str
    """A program that prints the one word it reads: `codeloop doctor` checks it."""
    humaneval_x: HumanEvalX | None = None
    """How HumanEval-X names the language (None: not in HumanEval-X)."""
    compose_test: ComposeTest | None = None
    """Function tests (None: stdio tasks only); the trusted files are in `box/`."""
    trivial_programs: TrivialPrograms | None = None
    """Trivial answers to a function task (None: no function tasks)."""
    compile_setup: CompileSetup | None = None
    """Compile extras (None: the `Language`'s command as it is)."""
    compile_service: CompileServiceFactory | None = None
    """A worker's long-lived compiler (None: every compile starts its own)."""
    warm_runner: WarmRunnerFactory | None = None
    """A worker's warm sandbox for function tests (None: every check starts cold)."""
    failure_note: FailureNote | None = None
    """A note for the answer of a failed run or check (None: never one)."""

    @property
    def folder(self) -> Path:
        """The home's folder, `sandbox/languages/<name>/` (the registry's convention: a
        test checks it), with its `box/` of trusted files."""
        return Path(__file__).parent / "languages" / self.language.name

    @property
    def __file__(self) -> str:
        return str(self.folder / "__init__.py")
