"""Reading a declared function signature, shared by the typed two-sandbox boxes."""

from __future__ import annotations


def split_top_level(text: str) -> list[str]:
    """`text` split at the commas outside brackets (`map<K, V>`, `[2]int`, `f(a, b)`)."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "<([{"
        depth -= char in ">)]}"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def first_parameter(prompt: str, at: int) -> str:
    """The open function's first parameter as written (type and name), from its line."""
    params = prompt[at:].split("(", 1)[1].rsplit(")", 1)[0]
    return split_top_level(params)[0]
