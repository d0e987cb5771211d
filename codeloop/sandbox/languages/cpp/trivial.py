"""Trivial answers to a C++ function task: the return type's zero value and the first
argument, from the prompt's open function.
"""

from __future__ import annotations

import re
from typing import Any

from codeloop.sandbox.languages.cpp import box as cppbox
from codeloop.sandbox.signatures import first_parameter


def _plain(kind: str) -> str:
    """A C++ parameter type as a value type: without const, & and spaces."""
    return re.sub(r"\bconst\b|&|\s+", "", kind)


def trivial_programs(
    prompt: str, function: Any, references: list[str] | None = None
) -> dict[str, str]:
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


def _cpp_parameter_name(prompt: str, sig: tuple) -> str | None:
    """The name the prompt gives the open function's first parameter."""
    words = re.findall(r"[A-Za-z_]\w*", first_parameter(prompt, sig[3]))
    return words[-1] if len(words) >= 2 else None
