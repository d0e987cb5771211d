"""Trivial answers to a Java function task: the return type's zero value (or null) and
the first argument.
"""

from __future__ import annotations

from typing import Any

from codeloop.sandbox.languages.java import box as javabox
from codeloop.sandbox.signatures import first_parameter

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


def trivial_programs(
    prompt: str, function: Any, references: list[str] | None = None
) -> dict[str, str]:
    sig = javabox.signature(prompt, function.entry_point)
    if sig is None:
        return {}
    result, _name, kinds, _throws, at = sig
    head = prompt.rstrip() + "\n"
    tail = "    }\n}\n"
    zero = "" if result == "void" else " " + _JAVA_ZERO.get(result, "null")
    found = {"the empty program": head + f"        return{zero};\n" + tail}
    if kinds and kinds[0].strip() == result:
        first = first_parameter(prompt, at).split()[-1]
        found["a program that echoes its input"] = head + f"        return {first};\n" + tail
    return found
