"""How far one check request travels through codeloop's modules.

Checks one request per kind in this process (`Sandbox.check`, the code a worker runs)
with a tracer on every call into a codeloop module, and reports the path as a reader
following the request would walk it: the sequence of modules, each stop counted once
while the calls stay in it. A comprehension or generator expression is part of the
function it is written in, not a stop of its own: Python 3.12 inlines comprehensions
(PEP 709), and a count must not change with the interpreter. "Returns" counts the
stops in a module the path had already left (a reader going back to a file already read); the fewer, the more a
module holds one step of the story.

    python -m bench.experiments.call_path [--kinds stdio,python,cpp,go] [--against DIR ...]

Prints a table (stops, distinct modules, returns per kind, and which modules the
returns go back to, most first) and appends it to bench/RESULTS.md. `--against DIR`
(a checkout of another commit, e.g. a `git worktree`) traces the same requests with
that checkout's codeloop, in a process of its own, and adds its rows to the same
table, so two commits are compared by one tracer in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import codeloop
from bench import results
from bench.results import record
from codeloop.evaluate import load_humaneval_x
from codeloop.sandbox import CheckRequest

try:
    from codeloop.evaluate.humaneval import humaneval_x_job
except ImportError:  # commits before the one evaluator
    from codeloop.evaluate.suites import humaneval_x_job
from codeloop.sandbox.check import Sandbox

PACKAGE = str(Path(codeloop.__file__).parent)
INLINE = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})
"""Code objects that belong to the function around them (see the module docstring)."""


def request(kind: str) -> CheckRequest:
    if kind == "stdio":
        program = "a, b = map(int, input().split())\nprint(a + b)\n"
        return CheckRequest(
            language="python", program=program, cases=[{"input": "1 2\n", "output": "3\n"}]
        )
    prefix = {"python": "Python", "cpp": "CPP", "go": "Go", "java": "Java", "rust": "Rust"}[kind]
    rows = load_humaneval_x(None, [kind]).rows
    row = rows[f"{prefix}/0"]
    job = humaneval_x_job(row, row["canonical_solution"])
    return CheckRequest(  # field by field, so that older commits run this script too
        language=job.language,
        program=job.program,
        test=job.test,
        prompt=job.prompt,
        entry_point=job.entry_point,
    )


def walk(kind: str) -> list[str]:
    """The modules the check's calls go through, consecutive repeats merged."""
    path: list[str] = []

    def tracer(frame, event, arg):
        if event != "call":
            return None
        filename = frame.f_code.co_filename
        if frame.f_code.co_name in INLINE:
            return None
        if filename.startswith(PACKAGE):
            module = filename[len(PACKAGE) + 1 :]
            if not path or path[-1] != module:
                path.append(module)
        return None

    sandbox = Sandbox("bwrap", worker=40)
    try:
        sandbox.check(request(kind))  # warm-up: one-time builds, caches
        asked = request(kind)
        sys.settrace(tracer)
        try:
            check = sandbox.check(asked)
        finally:
            sys.settrace(None)
    finally:
        sandbox.close()
    if check.status != "passed":
        raise SystemExit(f"{kind}: the check did not pass ({check.status}: {check.feedback})")
    return path


def returns(path: list[str]) -> int:
    return sum(returned_to(path).values())


def returned_to(path: list[str]) -> Counter[str]:
    """How often the path comes back to each module it had already left."""
    seen: set[str] = set()
    count: Counter[str] = Counter()
    for module in path:
        if module in seen:
            count[module] += 1
        seen.add(module)
    return count


def rows(kinds: list[str]) -> list[dict]:
    """One row per kind, traced with the codeloop this process imports."""
    found = []
    for kind in kinds:
        path = walk(kind)
        back = ", ".join(
            f"{module.removesuffix('.py')} {n}" for module, n in returned_to(path).most_common()
        )
        found.append(
            {
                "kind": kind,
                "stops": len(path),
                "modules": len(set(path)),
                "returns": returns(path),
                "back": back,
                "path": " -> ".join(path),
            }
        )
    return found


def rows_of(checkout: Path, kinds: list[str]) -> tuple[str, list[dict]]:
    """(commit, rows) traced with `checkout`'s codeloop, in a child process."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    command = [sys.executable, __file__, "--kinds", ",".join(kinds), "--json"]
    done = subprocess.run(
        command, env=env, cwd=checkout, capture_output=True, text=True, check=True
    )
    head = subprocess.run(
        ["git", "rev-parse", "--short=10", "HEAD"], cwd=checkout, capture_output=True, text=True
    ).stdout.strip()
    return head, json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default="stdio,python,cpp,go")
    parser.add_argument("--against", type=Path, action="append", default=[])
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    if args.json:  # a child of --against: rows on the last line, nothing recorded
        print(json.dumps(rows(kinds)))
        return
    tables = [(checkout.name, *rows_of(checkout, kinds)) for checkout in args.against]
    tables.append(("this checkout", results.commit(), rows(kinds)))
    lines = [
        "| code | request | stops | modules | returns | returns by module |",
        "|---|---|---|---|---|---|",
    ]
    for name, head, found in tables:
        for row in found:
            print(name, row["kind"], row["path"])
            lines.append(
                f"| {head} | {row['kind']} | {row['stops']} | {row['modules']} | "
                f"{row['returns']} | {row['back']} |"
            )
    record("One check request's path through the modules (bench/call_path.py)", lines)


if __name__ == "__main__":
    main()
