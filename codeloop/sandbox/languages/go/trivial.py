"""Trivial answers to a Go function task: the zero value and the first argument."""

from __future__ import annotations

import re
from typing import Any

from codeloop.sandbox.languages.go import box as gobox


def trivial_programs(
    prompt: str, function: Any, references: list[str] | None = None
) -> dict[str, str]:
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
