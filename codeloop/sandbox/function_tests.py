"""Function-level tasks: compose a program with its test program, per language.

HumanEval-X checks a completion by joining it with a test program and running
that; this module says how, per language, including the corrections its official
harness needs to pass every canonical solution offline (see the benchmark's
README). Pass means the composed test program compiled, ran, exited 0, and
printed none of the language's failure markers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codeloop.sandbox.languages import Language

if TYPE_CHECKING:
    from codeloop.sandbox.check import Sandbox


@dataclass
class TestBuild:
    """Everything needed to compile and run one composed test program."""

    files: dict[str, bytes]
    run: list[str]
    compile: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    binds: list[tuple[str, str, bool]] = field(default_factory=list)
    failure_markers: tuple[str, ...] = ()
    """stderr phrases that mean a test failed even though the exit code was 0."""


def compose(
    sandbox: Sandbox, language: Language, program: str, test: str, memory_mib: int
) -> TestBuild:
    """The composed test program for `language`.

    `sandbox` gives access to the worker's backend and shared caches, for one-time
    builds such as the Rust crates the tests link against.
    """
    if language.name == "python":
        source = program.rstrip("\n") + "\n\n" + test + "\n"
        return TestBuild(
            files={language.source: source.encode()},
            run=language.run_argv(memory_mib),
            env=dict(language.env),
        )
    raise ValueError(f"function-level tests are not supported for {language.name} yet")
