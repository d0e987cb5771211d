"""Function-level tasks: compose a program with its test program, per language.

HumanEval-X checks a completion by joining it with a test program and running
that; this module says how, per language, including the corrections its official
harness needs to pass every canonical solution offline (see the benchmark's
README). Pass means the composed test program compiled, ran, exited 0, printed
none of the language's failure markers and, where the language has one, printed
the success marker that only a test run that reached its end prints.

Per language (the official composition first, then our corrections):
- python: program + test; the test calls `check(...)` itself.
- javascript: program + test under node; `console.assert` only prints
  "Assertion failed" and exits 0, so that phrase is a failure marker.
- cpp: program + test, linked with -lcrypto -lssl (one task needs MD5); boost
  headers come from the system. The official harness's common headers, which both
  sides include first, come from a precompiled header (half the compile time,
  same headers visible); the trusted test side compiles at -O0, the solution's
  side at the language's -O2.
- java: program (class Solution) + test (public class Main) in Main.java, run
  with assertions enabled (Java/151's last check is an `assert` statement, which
  the official `java Main` silently skips); javac starts from a class-data archive.
- go: the official `*_test.go` file fails 11 canonical solutions on missing or
  unused imports, so every import declaration is dropped and exactly the packages
  the code uses are imported; testify resolves in GOPATH mode from Debian's
  /usr/share/gocode (its `assert` without the HTTP helpers, unless the code needs
  them); one `go build` makes both binaries, and the test's functions run under
  `testing.Main` as `go test` finds them.
- rust: the tests sit in `#[cfg(test)]`, so a plain build runs none: compile with
  `rustc --test`, linking rand, regex and md5 prebuilt once from Debian's
  /usr/share/cargo/registry (cargo as a directory source, offline), with cargo
  test's debug checks (overflow, debug assertions) kept on. A test written for
  the rand 0.7 API (Rust/50) is an environment error, not a wrong answer. With a
  trusted prompt whose open function has types that can cross, solution and test
  are two crates in two sandboxes (`languages/rust/box`), both linking our codec as an rlib
  built once.

Verdicts the program cannot write: where the task's prompt names the function
under test with types that can cross between processes, the test runs apart from
the solution (Python: two processes; JavaScript, C++, Go, Java, Rust: two sandboxes;
each language's `sandbox/languages/<name>/box/`), only plain values travel
between them, and only the test process reports (a nonce it read from stdin; the
solution's sandbox holds only the solution's files, `TestBuild.solution_files`). A test
that never called the solution prints the nonce + ":vacuous" instead (no verdict: an
environment_error of the task), and a NaN or infinite float returned by the solution
fails the test whatever its comparison says. Every other function test is
refused before anything runs (no prompt: at request validation; types that cannot
cross, such as pointers or user-defined classes: an environment error here), since
program and test in one process would let the program forge its verdict. No
HumanEval-X task is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeloop.sandbox.languages import HOMES
from codeloop.sandbox.testbuild import BuildHost, TaskRefused, TestBuild, TestContext

if TYPE_CHECKING:
    from codeloop.sandbox.language import Language

__all__ = ["TaskRefused", "TestBuild", "TestContext", "compose", "supported"]


def supported() -> list[str]:
    """The languages whose homes compose function tests."""
    return sorted(home.LANGUAGE.name for home in HOMES if home.compose_test is not None)


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
    composer = next(
        (home.compose_test for home in HOMES if home.LANGUAGE.name == language.name), None
    )
    if composer is None:
        raise TaskRefused(
            f"function-level tests are not supported for {language.name}; "
            f"supported: {', '.join(supported())}"
        )
    return composer(sandbox, language, program, test, memory_mib, context or TestContext())
