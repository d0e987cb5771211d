"""Trivial answers to a JavaScript function task: undefined and the first argument."""

from __future__ import annotations

from typing import Any


def trivial_programs(
    prompt: str, function: Any, references: list[str] | None = None
) -> dict[str, str]:
    entry = function.entry_point
    return {
        "the empty program": f"function {entry}(...args) {{\n  return undefined;\n}}\n",
        "a program that echoes its input": f"function {entry}(...args) {{\n  return args[0];\n}}\n",
    }
