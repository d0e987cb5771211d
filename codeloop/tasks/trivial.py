"""Trivial answers to a function task: what a model writes when it solves nothing.

A task whose hidden tests such an answer passes rewards hard-coding, so validation
runs these in the sandbox beside the references and refuses the task when one
passes (stdio tasks need no run: their trivial outputs are known, see
`validate.trivial_pass`). Three kinds, as for stdio tasks:
- "the empty program": the function returns its type's zero value (None, undefined,
  `{}`, 0/false/null, Go's zero value, `Default::default()`);
- "a program that echoes its input": it returns its first argument, where that
  argument has the return type;
- "a program returning a public example's output" (Python): the value of an example
  in the prompt's docstring or the public tests, whatever the arguments.

Each is built from the task's trusted prompt, which ends with the open function;
a prompt this module cannot read gives fewer trivial programs, never a wrong one
(a stub that does not compile simply fails). Rust: where the test calls a function
the solution itself must define, each trivial program defines it the same trivial way
(its signature from the task's reference), so a test that trusts the solution for its
own checking shows up: echoing in both functions passes it. (HumanEval-X Rust/38 was
such a test until the Rust home gave its test the canonical `encode_cyclic`.)
"""

from __future__ import annotations

from typing import Any

from codeloop.sandbox.languages import home


def trivial_programs(task: Any) -> dict[str, str]:
    """{name: program} of the trivial answers to a function task (empty for stdio, or for
    a language whose home has no `trivial` builder); each language's builder lives in
    its home (`sandbox/languages/<name>/trivial.py`)."""
    if task.kind != "function" or task.function is None:
        return {}
    build = home(task.language).trivial_programs
    if build is None:
        return {}
    references = [r.code for r in getattr(task, "references", []) if r.language == task.language]
    return build(task.statement, task.function, references)
