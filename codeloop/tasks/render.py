"""How a stdio problem's text becomes a task statement.

A stdio statement is the problem alone, the same for every language: the
language, the standard-input contract and a worked example are the prompt
recipe's job (`codeloop.recipe`). Measured on the bundled SmolLM2-135M, a title
line and a "Write a complete Python 3 program ..." paragraph in the statement
made it ignore the worked example and write `input("Enter ...")` programs with
labelled output (0 of 72 tier-1 tasks), while the bare problem sentence under the
recipe's system prompt and worked example solved some.
"""

from __future__ import annotations


def stdio_statement(problem: str) -> str:
    """The problem text as the model reads it: trimmed, nothing added."""
    return problem.strip()
