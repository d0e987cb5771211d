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
the solution itself must define (HumanEval-X Rust/38's test encodes with the
solution's own `encode_cyclic`), each trivial program defines it the same trivial
way (its signature from the task's reference), so a test that trusts the solution
for its own checking shows up: echoing in both functions passes it.
"""

from __future__ import annotations

import ast
import doctest
import re
from typing import Any

from codeloop.sandbox import cppbox, gobox, javabox
from codeloop.sandbox.signatures import split_top_level

_JAVA_ZERO = {
    "int": "0",
    "long": "0L",
    "short": "(short) 0",
    "byte": "(byte) 0",
    "double": "0.0",
    "float": "0.0f",
    "boolean": "false",
    "char": "'\\0'",
}
_RUST_OPEN = re.compile(r"fn\s+(\w+)\s*(?:<[^>]*>)?\s*\((.*?)\)\s*(?:->\s*(.+?))?\s*\{\s*$", re.S)
_RUST_FN = re.compile(
    r"\bfn\s+(\w+)\s*(?:<[^>]*>)?\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)\s*(?:->\s*([^{;]+?))?\s*\{"
)
_PUBLIC_EXAMPLES = 3
_CLOSING_QUOTES = re.compile(r"^\s*(?:\"\"\"|\'\'\')", re.M)


def trivial_programs(task: Any) -> dict[str, str]:
    """{name: program} of the trivial answers to a function task (empty for stdio)."""
    if task.kind != "function" or task.function is None:
        return {}
    if task.language == "rust":
        references = [r.code for r in getattr(task, "references", []) if r.language == "rust"]
        return _rust(task.statement, task.function, references)
    build = _BUILDERS.get(task.language)
    return build(task.statement, task.function) if build is not None else {}


def _python(prompt: str, function: Any) -> dict[str, str]:
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


def _javascript(prompt: str, function: Any) -> dict[str, str]:
    entry = function.entry_point
    return {
        "the empty program": f"function {entry}(...args) {{\n  return undefined;\n}}\n",
        "a program that echoes its input": f"function {entry}(...args) {{\n  return args[0];\n}}\n",
    }


def _plain(kind: str) -> str:
    """A C++ parameter type as a value type: without const, & and spaces."""
    return re.sub(r"\bconst\b|&|\s+", "", kind)


def _cpp(prompt: str, function: Any) -> dict[str, str]:
    sig = cppbox.signature(prompt, function.entry_point)
    if sig is None:
        return {}
    result, _name, typed, _at = sig
    head = prompt.rstrip() + "\n"
    found = {
        "the empty program": head
        + ("    return;\n}\n" if result == "void" else "    return {};\n}\n")
    }
    if typed and _plain(typed[0][0]) == _plain(result):
        first = _cpp_parameter_name(prompt, sig)
        if first:
            found["a program that echoes its input"] = head + f"    return {first};\n}}\n"
    return found


def _first_parameter(prompt: str, at: int) -> str:
    """The open function's first parameter as written (type and name), from its line."""
    params = prompt[at:].split("(", 1)[1].rsplit(")", 1)[0]
    return split_top_level(params)[0]


def _cpp_parameter_name(prompt: str, sig: tuple) -> str | None:
    """The name the prompt gives the open function's first parameter."""
    words = re.findall(r"[A-Za-z_]\w*", _first_parameter(prompt, sig[3]))
    return words[-1] if len(words) >= 2 else None


def _java(prompt: str, function: Any) -> dict[str, str]:
    sig = javabox.signature(prompt, function.entry_point)
    if sig is None:
        return {}
    result, _name, kinds, _throws, at = sig
    head = prompt.rstrip() + "\n"
    tail = "    }\n}\n"
    zero = "" if result == "void" else " " + _JAVA_ZERO.get(result, "null")
    found = {"the empty program": head + f"        return{zero};\n" + tail}
    if kinds and kinds[0].strip() == result:
        first = _first_parameter(prompt, at).split()[-1]
        found["a program that echoes its input"] = head + f"        return {first};\n" + tail
    return found


def _go(prompt: str, function: Any) -> dict[str, str]:
    sig = gobox.signature(prompt, function.entry_point)
    if sig is None:
        return {}
    _name, inputs, outputs, at = sig
    head = prompt.rstrip() + "\n"
    zeros = [f"    var codeloopZero{i} {kind}\n" for i, kind in enumerate(outputs)]
    names = ", ".join(f"codeloopZero{i}" for i in range(len(outputs)))
    found = {"the empty program": head + "".join(zeros) + f"    return {names}\n}}\n"}
    if inputs and len(outputs) == 1 and inputs[0] == outputs[0]:
        params = prompt[at:].split("(", 1)[1]
        first = re.match(r"\s*(\w+)", params)
        if first:
            found["a program that echoes its input"] = head + f"    return {first.group(1)}\n}}\n"
    return found


def _rust_echo(params: str, result: str) -> str | None:
    """An expression of type `result` that is the first parameter unchanged, if there is one."""
    first = re.match(r"\s*(?:mut\s+)?(\w+)\s*:\s*([^,]+)", params)
    if not first:
        return None
    name, kind = first.group(1), re.sub(r"\s+", "", first.group(2))
    wanted = re.sub(r"\s+", "", result)
    if kind == wanted:
        return name
    if kind == "&str" and wanted == "String":
        return f"{name}.to_string()"
    if kind.startswith("&[") and kind.endswith("]") and wanted == f"Vec<{kind[2:-1]}>":
        return f"{name}.to_vec()"
    if kind.startswith("&") and kind[1:] == wanted:
        return f"{name}.clone()"
    return None


def _rust_helpers(prompt: str, function: Any, references: list[str]) -> list[re.Match[str]]:
    """The signatures (from the reference) of the functions other than the entry point that
    the test calls and neither the trusted prompt nor the test defines: the solution must."""
    tests = function.tests or ""
    trusted = {m.group(1) for m in _RUST_FN.finditer(prompt + "\n" + tests)}
    called = set(re.findall(r"\b(\w+)\s*\(", tests))
    found: dict[str, re.Match[str]] = {}
    for match in _RUST_FN.finditer(references[0] if references else ""):
        name = match.group(1)
        if name in called and name not in trusted and name != function.entry_point:
            found.setdefault(name, match)
    return list(found.values())


def _rust(prompt: str, function: Any, references: list[str] | None = None) -> dict[str, str]:
    opened = list(_RUST_OPEN.finditer(prompt))
    if not opened or opened[-1].group(1) != function.entry_point:
        return {}
    params, result = opened[-1].group(2), (opened[-1].group(3) or "()").strip()
    head = prompt.rstrip() + "\n"
    helpers = _rust_helpers(prompt, function, references or [])

    def others(echo: bool) -> str:
        """The helpers the solution must define, each trivial the same way."""
        text = ""
        for match in helpers:
            body = echo and _rust_echo(match.group(2), (match.group(3) or "()").strip())
            text += f"\n{match.group(0)}\n    {body or 'Default::default()'}\n}}\n"
        return text

    found = {"the empty program": head + "    Default::default()\n}\n" + others(False)}
    echo = _rust_echo(params, result)
    if echo:
        found["a program that echoes its input"] = head + f"    {echo}\n}}\n" + others(True)
    return found


_BUILDERS = {
    "python": _python,
    "javascript": _javascript,
    "cpp": _cpp,
    "java": _java,
    "go": _go,
    "rust": _rust,
}
