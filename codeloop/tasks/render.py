"""How a stdio problem's text becomes one language's statement.

Every stdio task ends with the same plain contract (which language, a complete
program, standard input to standard output), so that even a small model knows
what shape of answer is wanted, and so that sources need not repeat it.
"""

from __future__ import annotations

LANGUAGE_LINES: dict[str, str] = {
    "python": "Write a complete Python 3 program.",
    "javascript": "Write a complete JavaScript program for Node.js.",
    "typescript": "Write a complete TypeScript program for Node.js.",
    "c": "Write a complete C program with a main function.",
    "cpp": "Write a complete C++ program with a main function.",
    "java": "Write a complete Java program whose public class is named Main.",
    "rust": "Write a complete Rust program with a main function, using only the standard library.",
    "go": "Write a complete Go program in package main, using only the standard library.",
}
CLOSINGS = (
    "Do not print prompts or any other text.",
    "Print nothing else: no prompts, no labels, no extra text.",
)


def stdio_statement(problem: str, language: str, closing: int = 0) -> str:
    """`problem` followed by the language's line and the standard-input contract."""
    return (
        f"{problem.strip()}\n\n{LANGUAGE_LINES[language]} "
        f"It reads standard input and writes standard output. {CLOSINGS[closing % len(CLOSINGS)]}"
    )
