"""How far one check request travels through codeloop's modules.

Checks one request per kind in this process (`Sandbox.check`, the code a worker runs)
with a tracer on every call into a codeloop module, and reports the path as a reader
following the request would walk it: the sequence of modules, each stop counted once
while the calls stay in it. "Returns" counts the stops in a module the path had
already left (a reader going back to a file already read); the fewer, the more a
module holds one step of the story.

    python bench/call_path.py [--kinds stdio,python,cpp,go]

Prints a table (stops, distinct modules, returns per kind, and which modules the
returns go back to, most first) and appends it to bench/RESULTS.md. Compare two
commits by running it in both checkouts.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import record

import codeloop
from codeloop.evaluate import load_humaneval_x
from codeloop.sandbox import CheckRequest

try:
    from codeloop.evaluate.humaneval import humaneval_x_job
except ImportError:  # commits before the one evaluator
    from codeloop.evaluate.suites import humaneval_x_job
from codeloop.sandbox.check import Sandbox

PACKAGE = str(Path(codeloop.__file__).parent)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default="stdio,python,cpp,go")
    args = parser.parse_args()
    lines = [
        "| request | stops | modules | returns | returns by module |",
        "|---|---|---|---|---|",
    ]
    for kind in args.kinds.split(","):
        path = walk(kind)
        back = ", ".join(
            f"{module.removesuffix('.py')} {n}" for module, n in returned_to(path).most_common()
        )
        lines.append(f"| {kind} | {len(path)} | {len(set(path))} | {returns(path)} | {back} |")
        print(kind, " -> ".join(path))
    record("One check request's path through the modules (bench/call_path.py)", lines)


if __name__ == "__main__":
    main()
