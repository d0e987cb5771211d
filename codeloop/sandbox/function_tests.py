"""Function-level tasks: compose a program with its test program, per language.

HumanEval-X checks a completion by joining it with a test program and running that;
this module hands that to the language's home. Pass means the composed test program
compiled, ran, exited 0, printed none of the language's failure markers and, where
the language has one, printed the success marker that only a test run that reached
its end prints.

How, per language, with the corrections its official harness needs to pass every
canonical solution offline (see the benchmark's README), is said where it is done:
the language's home, `sandbox/languages/<name>/__init__.py`, whose `HOME` gives the
composer (`Home.compose_test`); a language without one is stdio-only.

Verdicts the program cannot write: where the task's prompt names the function under
test with types that can cross between processes, the test runs apart from the
solution (two processes, or two sandboxes; each language's
`sandbox/languages/<name>/box/`), only plain values travel between them, and only the
test process reports (a nonce it read from stdin; the solution's sandbox holds only
the solution's files, `TestBuild.solution_files`). A test that never called the
solution prints the nonce + ":vacuous" instead (no verdict: an environment_error of
the task), and a NaN or infinite float returned by the solution fails the test
whatever its comparison says. The helpers a test calls to judge the answer (HumanEval's
`poly`, the encoders of /38 and /50) are the task's: the test's side carries the
prompt's own definitions (where HumanEval-X's Rust port leaves one out, the Rust home's
copy), so an answer that redefines one changes nothing the test calls. Every other
function test is refused before anything runs (no prompt: at request validation; types
that cannot cross, such as pointers or user-defined classes: an environment error
here), since program and test in one process would let the program forge its verdict.
No HumanEval-X task is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeloop.sandbox import languages
from codeloop.sandbox.testbuild import BuildHost, TaskRefused, TestBuild, TestContext

if TYPE_CHECKING:
    from codeloop.sandbox.language import Language

__all__ = ["TaskRefused", "TestBuild", "TestContext", "compose", "supported"]


def supported() -> list[str]:
    """The languages whose homes compose function tests."""
    homes = languages.HOMES
    return sorted(home.language.name for home in homes if home.compose_test is not None)


def compose(
    sandbox: BuildHost,
    language: Language,
    program: str,
    test: str,
    memory_mib: int,
    context: TestContext | None = None,
) -> TestBuild:
    """The composed test program for `language`, from the language's home.

    `sandbox` gives access to the worker's backend and shared caches, for one-time
    builds such as the Rust crates the tests link against. A ValueError means the
    check cannot run here (the caller reports it as an environment error).
    """
    homes = languages.HOMES  # read per call: the registry is the one place to change
    composer = next(
        (home.compose_test for home in homes if home.language.name == language.name), None
    )
    if composer is None:
        raise TaskRefused(
            f"function-level tests are not supported for {language.name}; "
            f"supported: {', '.join(supported())}"
        )
    return composer(sandbox, language, program, test, memory_mib, context or TestContext())
