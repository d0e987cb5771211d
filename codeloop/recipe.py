"""The prompt recipe: what the model is asked, and how its program is read back.

The exact text matters for what the model learns (training rows are built from
these messages) and for comparability (a baseline and a candidate must see the
same prompt), so the text is versioned and its sha256 goes into every binding.
The correction turn shows only the PUBLIC examples' feedback: the hidden tests
decide what is verified, and the model must never see them.
"""

from __future__ import annotations

import re
from typing import Any

from codeloop.sandbox.languages import HOMES
from codeloop.store import sha256_json

PROMPT_VERSION = "codeloop-recipe-2"
SYSTEM = (
    "You are a careful programmer. Answer with one complete program in a single fenced "
    "code block, and nothing else."
)
"""System turn of function-completion tasks (HumanEval-style code prompts)."""
STDIO_SYSTEM = (
    "You write complete {language} programs. A program reads its input from standard "
    "input and prints only the answer to standard output: no prompts, no labels, no "
    "explanations, and no made-up example values. Answer with the whole program in one "
    "```{tag} code block, and nothing else."
)
"""System turn of stdio tasks: the contract the bundled small model kept breaking."""
WORKED_PROBLEM = (
    "Read two integers a and b from standard input (on one line, separated by a space). "
    "Print only the value of 2 * a + b."
)
"""The worked example's problem: a toy that is no curriculum family, so the example
teaches the answer's shape (read stdin, print only the result), not a task's answer."""
WORKED_ANSWERS: dict[str, str] = {home.language.name: home.worked_answer for home in HOMES}
"""The ideal answer to WORKED_PROBLEM per language (from each language's home); tests run
each in the sandbox."""
WORKED_CASE = {"input": "3 4\n", "output": "10\n"}
FENCE_TAGS: dict[str, str] = {home.language.name: home.fences[0] for home in HOMES}
"""The fence tag prompts ask for, per language (each home's first of `fences`)."""
_ALIASES: dict[str, tuple[str, ...]] = {home.language.name: home.fences for home in HOMES}
SHOW_PUBLIC_EXAMPLES = False
"""Whether stdio prompts show the public examples. Measured off: with the examples in
the prompt the bundled model copies their values into its program (bench/prompts.py)."""
STDIO_TEMPLATE = "{statement}\n\n{examples}"
FUNCTION_TEMPLATE = (
    "Complete this {language} code. Return the complete code, including the given "
    "signature, in one ```{tag} code block.\n\n```{tag}\n{statement}\n```"
)
CORRECTION_TEMPLATE = (
    "Your program failed the public examples:\n{feedback}\n\n"
    "Return the complete corrected program in one ```{tag} code block."
)
_LANGUAGE_NAMES = {home.language.name: home.title for home in HOMES}
_BLOCK = re.compile(r"```[ \t]*([A-Za-z0-9+#_-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def prompt_sha256() -> str:
    """sha256 of everything that shapes the prompt text; bump PROMPT_VERSION on change."""
    return sha256_json(
        {
            "version": PROMPT_VERSION,
            "system": SYSTEM,
            "stdio_system": STDIO_SYSTEM,
            "worked": [WORKED_PROBLEM, WORKED_ANSWERS],
            "public_examples": SHOW_PUBLIC_EXAMPLES,
            "stdio": STDIO_TEMPLATE,
            "function": FUNCTION_TEMPLATE,
            "correction": CORRECTION_TEMPLATE,
            "tags": FENCE_TAGS,
        }
    )


def _field(task: Any, name: str) -> Any:
    return task[name] if isinstance(task, dict) else getattr(task, name)


def public_cases(task: Any) -> list[dict[str, str]]:
    """The examples the model may see (never the hidden cases)."""
    cases = _field(task, "public_cases") or []
    return [case if isinstance(case, dict) else case.model_dump() for case in cases]


def _examples(task: Any) -> str:
    shown = public_cases(task)
    if not shown:
        return ""
    parts = []
    for number, case in enumerate(shown, 1):
        parts.append(
            f"Example {number}\nInput:\n```\n{case['input'].rstrip()}\n```\n"
            f"Output:\n```\n{case['output'].rstrip()}\n```"
        )
    return "\n\n".join(parts) + "\n\n"


def fenced(program: str, language: str) -> str:
    """`program` as an answer: one fenced block tagged with the language."""
    return f"```{FENCE_TAGS[language]}\n{program.rstrip()}\n```"


def messages(task: Any) -> list[dict[str, str]]:
    """The turns the model answers: system, (worked example), and the task.

    A stdio task gets the contract in the system turn and one worked example turn in
    its language before the task itself; the statement is the bare problem.
    """
    language = _field(task, "language")
    tag = FENCE_TAGS[language]
    statement = _field(task, "statement").strip()
    if _field(task, "kind") == "function":
        user = FUNCTION_TEMPLATE.format(
            language=_LANGUAGE_NAMES[language], tag=tag, statement=statement
        )
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    examples = _examples(task) if SHOW_PUBLIC_EXAMPLES else ""
    system = STDIO_SYSTEM.format(language=_LANGUAGE_NAMES[language], tag=tag)
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": WORKED_PROBLEM},
        {"role": "assistant", "content": fenced(WORKED_ANSWERS[language], language)},
        {
            "role": "user",
            "content": STDIO_TEMPLATE.format(statement=statement, examples=examples).strip(),
        },
    ]


def contract_messages(task: Any) -> list[dict[str, str]]:
    """`messages(task)` without the worked example turn: the contract and the task only.

    Training under these turns distils what the worked example does at inference into
    the weights (read stdin, print only the answer), so a verified answer still teaches
    when the full prompt already made it likely (the loss under `messages` starts near
    zero). Function tasks have no worked example, so theirs are unchanged.
    """
    turns = messages(task)
    return [turns[0], turns[-1]] if len(turns) > 2 else turns


def correction(task: Any, answer: str, public_feedback: str) -> list[dict[str, str]]:
    """The conversation asking for one correction, showing only public feedback."""
    tag = FENCE_TAGS[_field(task, "language")]
    turn = CORRECTION_TEMPLATE.format(feedback=public_feedback.strip(), tag=tag)
    return [
        *messages(task),
        {"role": "assistant", "content": answer},
        {"role": "user", "content": turn},
    ]


def source(answer: str, language: str | None = None) -> str:
    """The program in `answer`'s fenced block for `language` (or its only block).

    Raises ValueError when there is no usable block: the caller counts that as a
    failed answer, never as an engine fault.
    """
    blocks = [(tag.lower(), body) for tag, body in _BLOCK.findall(answer or "")]
    blocks = [(tag, body) for tag, body in blocks if body.strip()]
    if language is not None:
        tagged = [body for tag, body in blocks if tag in _ALIASES.get(language, (language,))]
        if tagged:
            return tagged[0].strip("\n") + "\n"
    if len(blocks) == 1:
        return blocks[0][1].strip("\n") + "\n"
    if not blocks:
        raise ValueError("the answer has no fenced code block")
    raise ValueError(f"the answer has {len(blocks)} code blocks and none is tagged {language}")


def ends_code_block(text: str) -> bool:
    """Whether generated text has closed its first code block (generation may stop)."""
    first = text.find("```")
    return first >= 0 and text.find("```", first + 3) >= 0
