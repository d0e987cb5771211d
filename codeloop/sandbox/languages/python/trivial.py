"""Trivial answers to a Python function task (see `codeloop.tasks.trivial`): None, the
first argument, and the values of the prompt's public examples.
"""

from __future__ import annotations

import ast
import doctest
import re
from typing import Any

_PUBLIC_EXAMPLES = 3
_CLOSING_QUOTES = re.compile(r"^\s*(?:\"\"\"|\'\'\')", re.M)


def trivial_programs(
    prompt: str, function: Any, references: list[str] | None = None
) -> dict[str, str]:
    entry = function.entry_point
    found = {
        "the empty program": f"def {entry}(*args, **kwargs):\n    return None\n",
        "a program that echoes its input": (
            f"def {entry}(*args, **kwargs):\n    return args[0] if args else None\n"
        ),
    }
    for number, value in enumerate(_python_example_outputs(prompt, function), 1):
        name = f"a program returning public example {number}'s output"
        found[name] = f"def {entry}(*args, **kwargs):\n    return {value!r}\n"
    return found


def _python_example_outputs(prompt: str, function: Any) -> list[Any]:
    """Literal values the public examples show the entry point returning."""
    entry = function.entry_point
    values: list[Any] = []
    try:
        examples = doctest.DocTestParser().get_examples(prompt)
    except ValueError:
        examples = []
    for example in examples:
        # A docstring's closing quotes right after an example read as part of its output.
        want = _CLOSING_QUOTES.split(example.want, maxsplit=1)[0]
        if example.source.lstrip().startswith(f"{entry}(") and want.strip():
            try:
                values.append(ast.literal_eval(want.strip()))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
    try:
        tree = ast.parse(function.public_tests or "")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        tree = ast.Module(body=[], type_ignores=[])
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
            continue
        if not isinstance(node.ops[0], ast.Eq | ast.Is):
            continue
        left, right = node.left, node.comparators[0]
        if isinstance(right, ast.Call):
            left, right = right, left
        if isinstance(left, ast.Call) and isinstance(left.func, ast.Name):
            try:
                values.append(ast.literal_eval(right))
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
    unique: list[Any] = []
    for value in values:
        if not any(type(value) is type(seen) and value == seen for seen in unique):
            unique.append(value)
    return unique[:_PUBLIC_EXAMPLES]
