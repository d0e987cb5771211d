"""Python: its sandbox entry, function tests in two processes (the test's driver and the
solution's server, `box`), and each worker's warm sandbox for them (`sandbox.warm`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from codeloop.sandbox import harness
from codeloop.sandbox.home import Home
from codeloop.sandbox.language import BOX, Composed, HumanEvalX, Language
from codeloop.sandbox.languages.python import box, science, warm
from codeloop.sandbox.languages.python.trivial import trivial_programs
from codeloop.sandbox.testbuild import PIPES, BuildHost, TestBuild, TestContext, make_nonce, vacuous

LANGUAGE = Language(
    aliases=("python3",),
    name="python",
    source="main.py",
    run=("/usr/bin/python3", "-S", "-E", "-B", "-c", box.script_code(), "{box}/main.py"),
    version=("/usr/bin/python3", "--version"),
    tools=("/usr/bin/python3",),
    install="apt-get install python3",
    # The second: a native module (numpy's, `make science`) whose mapping the run's
    # address-space limit refused, which Python reports as an ImportError.
    out_of_memory=("MemoryError", "failed to map segment from shared object"),
    compile_error=("SyntaxError:", "IndentationError:", "TabError:"),
    compile_error_without=("Traceback (most recent call last)",),
    # The optional scientific runtime (`make science`), read-only in every sandbox.
    mounts=(science.mount(),),
)


def compose_test(
    sandbox: BuildHost,
    language: Language,
    program: str,
    test: str,
    memory_mib: int,
    context: TestContext,
) -> TestBuild:
    """The test runs in its own process; the solution's functions are called across a pipe.

    See `box`: the nonce, the trusted prompt and the test travel on the driver's
    stdin (never a file the solution can read); return values cross as plain data. Cold,
    the solution's server runs in a sandbox of its own (`partner`) over a box holding
    only the program and the server; warm, the zygote forks it from the driver.
    """
    entry_point = context.entry_point or _check_target(test)
    setup = {
        "nonce": make_nonce(),
        "prompt": context.prompt,
        "test": test,
        "entry_point": entry_point,
    }
    python = ["/usr/bin/python3", "-S", "-E", "-B"]
    return TestBuild(
        files={language.source: program.encode(), **box.sources()},
        run=[*python, f"{BOX}/{box.DRIVER}", *PIPES],
        partner=[*python, f"{BOX}/{box.SERVER}", *PIPES],
        solution_files=(language.source, box.SERVER, box.CODEC),
        env=dict(language.env),
        success_marker=setup["nonce"],
        vacuous_marker=vacuous(setup["nonce"]),
        stdin=(json.dumps(setup) + "\n").encode(),
    )


def _check_target(test: str) -> str | None:
    """The function a HumanEval-style test hands to `check(...)` on its last such line."""
    calls = re.findall(r"^check\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$", test, re.MULTILINE)
    return calls[-1] if calls else None


def _warm_runner(backend: harness.Backend) -> warm.WarmPython | None:
    """The worker's warm sandbox, where bubblewrap isolates and CODELOOP_WARM is not off."""
    return warm.WarmPython(backend) if warm.enabled() and backend.name == "bwrap" else None


IMPORT_HELPER = (
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
"""HumanEval-X's Python import helper without `import numpy` (no canonical solution uses
numpy, and the sandbox's system Python has none: importing it would fail every task)."""


def _first_body(generation: str) -> str:
    """The official cut: keep lines up to the first non-empty one that is not indented."""
    kept = []
    for line in generation.split("\n"):
        if line.strip() and line[0] not in (" ", "\t"):
            break
        kept.append(line)
    return "\n".join(kept)


def _humaneval_x(row: dict[str, Any], generation: str) -> Composed:
    """The import helper, the prompt, then the generation cut at its first top-level line
    (what follows the function body is not the answer's to add)."""
    trusted = "\n".join(IMPORT_HELPER) + "\n" + row["prompt"]
    return Composed(trusted + _first_body(generation), row["test"], trusted)


HOME = Home(
    language=LANGUAGE,
    title="Python",
    fences=("python", "py", "python3"),
    worked_answer="import sys\n\na, b = map(int, sys.stdin.read().split())\nprint(2 * a + b)\n",
    hello="print(input())\n",
    humaneval_x=HumanEvalX(
        "python", "Python", position=0, entry_point=r"def\s+(\w+)\s*\(", compose=_humaneval_x
    ),
    compose_test=compose_test,
    trivial_programs=trivial_programs,
    warm_runner=_warm_runner,
    failure_note=science.missing_note,
)
