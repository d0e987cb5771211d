"""Trivial answers to a Rust function task: `Default::default()` and the first argument;
helpers the test calls but the solution must define (Rust/10's `make_palindrome`) are
defined the same trivial way, from the task's reference. (Rust/38's `encode_cyclic` is
defined too, as its reference does, but its test calls the trusted copy the test's
crate carries: `box.TRUSTED_HELPERS`.)
"""

from __future__ import annotations

import re
from typing import Any

_RUST_OPEN = re.compile(r"fn\s+(\w+)\s*(?:<[^>]*>)?\s*\((.*?)\)\s*(?:->\s*(.+?))?\s*\{\s*$", re.S)
_RUST_FN = re.compile(
    r"\bfn\s+(\w+)\s*(?:<[^>]*>)?\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)\s*(?:->\s*([^{;]+?))?\s*\{"
)


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


def trivial_programs(
    prompt: str, function: Any, references: list[str] | None = None
) -> dict[str, str]:
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
