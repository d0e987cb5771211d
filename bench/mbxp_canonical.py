"""MBXP's canonical solutions through codeloop's sandbox: how many pass, per language.

MBXP (amazon-science/mxeval, `data/mbxp/`, CC BY 4.0) ships, for each problem of each
language, a prompt, a canonical solution and a test program. Each problem is composed
as mxeval composes it (Python: prompt + solution + "\\n" + test + "\\n" +
`check(entry_point)`; the others: prompt + solution + test) and run once, as one
program, the way `codeloop serve`'s `/run_code` runs it (`sandbox.run_program`, built as
SandboxFusion builds: Java with `-ea`): it passes when it compiles and exits 0. Only
the languages codeloop runs and MBXP gives canonical solutions for are counted (Go's
release has none; MBXP has no Rust or C). Every failure is listed with its first error
line, so a failure of codeloop's can be told from a broken canonical solution.

MultiPL-E (nuprl/MultiPL-E) ships no canonical solutions; `--multiple-dir` takes its
rows (SandboxFusion keeps some in `sandbox/tests/datasets/samples/Multi-PLE/`, files
`humaneval-LANG.jsonl`, `mbpp-LANG.jsonl`) and runs each test file unchanged after a stub
body that throws (`throw`, `panic!`): a test file that builds and runs here ends in the
stub's error ("failed", its stderr naming the stub); "compile failed" means the test
file itself does not build here (a library or a compiler flag it needs), and "failed
elsewhere" that it failed before it reached the stub. Java's `class Problem` is renamed
`Main` first, as SandboxFusion's MultiPL-E dataset does. Go's rows are `go test` files,
a mode codeloop does not run.

The data is not downloaded here: clone mxeval (or copy its `data/mbxp/` folder) and name
the folder:

    git clone https://github.com/amazon-science/mxeval /tmp/mxeval
    .venv/bin/python -m bench.mbxp_canonical --data-dir /tmp/mxeval/data/mbxp \\
        [--languages python,cpp,java,javascript,typescript] [--limit N] [--workers 2] \\
        [--failures failures.json] [--multiple-dir DIR]

Appends the table to bench/RESULTS.md (`bench/results.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.results import record
from codeloop.sandbox import ProgramRun, RunRequest, SandboxLimits, run_program

FILES = {
    "python": "mbpp_release_*.jsonl",
    "cpp": "mbcpp_release_*.jsonl",
    "java": "mbjp_release_*.jsonl",
    "javascript": "mbjsp_release_*.jsonl",
    "typescript": "mbtsp_release_*.jsonl",
    "go": "mbgp_release_*.jsonl",
}
"""codeloop's language -> MBXP's release file (the newest version in the folder)."""

LIMITS = SandboxLimits(time_s=10.0, compile_time_s=60.0)
"""SandboxFusion's `/run_code` defaults for the run (10 s); the compile its generous
60 s, so that a slow compile on a loaded machine is not counted as a failure."""


def load(data_dir: Path, language: str) -> tuple[str, list[dict]]:
    """The release file's name and its problems that have a canonical solution."""
    found = sorted(data_dir.glob(FILES[language]))
    if not found:
        raise SystemExit(f"no {FILES[language]} in {data_dir} (see --help for the data)")
    path = found[-1]
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return path.name, [row for row in rows if row.get("canonical_solution")]


MULTIPLE = {"cpp": "cpp", "java": "java", "js": "javascript", "rs": "rust", "ts": "typescript"}
"""MultiPL-E's file suffix -> codeloop's language."""

STUBS = {
    "cpp": '    throw std::runtime_error("stub");\n',  # its prompts include bits/stdc++.h
    "java": '        throw new RuntimeException("stub");\n',
    "javascript": '  throw new Error("stub");\n}\n\n',
    "rust": '    panic!("stub")\n',
    "typescript": '  throw new Error("stub");\n}\n\n',
}
"""A body that throws, for each language: MultiPL-E's C++, Java and Rust tests start
with the function's closing brace; its JavaScript and TypeScript tests do not."""


def multiple_requests(data_dir: Path, suffix: str, limit: int | None) -> dict[str, list]:
    """file name -> (task name, request) of each MultiPL-E row: prompt + stub + tests."""
    language = MULTIPLE[suffix]
    found = {}
    for path in sorted(data_dir.glob(f"*-{suffix}.jsonl")):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
        rows = rows[:limit] if limit else rows
        found[path.name] = [
            (row["name"], request(language, stubbed(row, language))) for row in rows
        ]
    return found


def stubbed(row: dict, language: str) -> str:
    """A MultiPL-E row's prompt, the stub, its tests; Java's `class Problem` named `Main`,
    as SandboxFusion's MultiPL-E dataset names it (`sandbox/datasets/multiple.py`): both
    run Java as `Main.java`, `java Main`."""
    text = row["prompt"] + STUBS[language] + row["tests"]
    return text.replace("class Problem", "class Main") if language == "java" else text


def request(language: str, text: str) -> RunRequest:
    """`text` as one `/run_code` program: SandboxFusion's build (`debug`), `LIMITS`."""
    return RunRequest(language=language, program=text, limits=LIMITS, debug=True)


def run_all(requests: list[RunRequest], workers: int) -> tuple[list[ProgramRun], float]:
    """Every request through the sandbox, `workers` at a time: the runs and the seconds."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        runs = list(pool.map(lambda wanted: run_program(wanted, workers=workers), requests))
    return runs, time.monotonic() - started


def program(row: dict, language: str) -> str:
    """The problem composed with its canonical solution, as mxeval composes it."""
    if language == "python":
        return (
            f"{row['prompt']}{row['canonical_solution']}\n{row['test']}\n"
            f"check({row['entry_point']})"
        )
    return row["prompt"] + row["canonical_solution"] + row["test"]


def outcome(run: ProgramRun) -> str:
    """passed, or why not: compile failed, compile timeout, failed (exit N), timeout,
    environment error."""
    steps = [step for step in (run.compile, run.run) if step is not None]
    if any(step.status == "environment_error" for step in steps):
        return "environment error"
    if run.compile is not None and run.run is None:
        return "compile timeout" if run.compile.status == "timeout" else "compile failed"
    assert run.run is not None
    if run.run.status == "timeout":
        return "timeout"
    return "passed" if run.run.exit_code == 0 else "failed"


def first_error(run: ProgramRun) -> str:
    """The first line of the failing step's stderr that names an error, else its first."""
    step = run.run if run.run is not None else run.compile
    lines = [line.strip() for line in (step.stderr if step else "").splitlines() if line.strip()]
    named = [line for line in lines if "rror" in line or "xception" in line]
    return ((named or lines or [""])[0])[:200]


Result = tuple[str, int, Counter, list[dict], float]
"""(file, rows, outcomes, the rows whose outcome was not the expected one, seconds)."""


def tally(
    names: list[str], runs: list[ProgramRun], expected: str, marker: str = ""
) -> tuple[Counter, list[dict]]:
    """Each outcome's count, and every run whose outcome is not `expected`; a "failed"
    run whose stderr lacks `marker` (the stub's message) failed elsewhere."""
    outcomes: Counter = Counter()
    failures = []
    for name, run in zip(names, runs, strict=True):
        found = outcome(run)
        if found == "failed" and marker and run.run and marker not in run.run.stderr:
            found = "failed elsewhere"
        outcomes[found] += 1
        if found != expected:
            failures.append({"task_id": name, "outcome": found, "error": first_error(run)})
    return outcomes, failures


def run_language(data_dir: Path, language: str, limit: int | None, workers: int) -> Result:
    """MBXP's canonical solutions of one language: every one is expected to pass."""
    name, rows = load(data_dir, language)
    rows = rows[:limit] if limit else rows
    runs, seconds = run_all([request(language, program(row, language)) for row in rows], workers)
    outcomes, failures = tally([row["task_id"] for row in rows], runs, "passed")
    return name, len(rows), outcomes, failures, seconds


def run_multiple(data_dir: Path, limit: int | None, workers: int) -> dict[str, Result]:
    """MultiPL-E's test files after a throwing stub, per file: every one is expected to
    build, run and end in the stub's error ("failed")."""
    results = {}
    for suffix, language in MULTIPLE.items():
        for name, rows in multiple_requests(data_dir, suffix, limit).items():
            runs, seconds = run_all([wanted for _, wanted in rows], workers)
            outcomes, failures = tally([task for task, _ in rows], runs, "failed", "stub")
            results[f"{language} ({name})"] = (name, len(rows), outcomes, failures, seconds)
            print(f"{name}: {outcomes['failed']}/{len(rows)} built and ran", flush=True)
    return results


def table(results: dict[str, Result], rows: str) -> list[str]:
    """The Markdown table of every language's counts, then each unexpected outcome."""
    kinds = ["passed", "compile failed", "compile timeout", "failed", "failed elsewhere"]
    kinds += ["timeout", "environment error"]
    lines = [
        f"| language | file | {rows} | " + " | ".join(kinds) + " | s |",
        "|---|---|---:|" + "---:|" * len(kinds) + "---:|",
    ]
    for language, (name, count, outcomes, _, seconds) in results.items():
        cells = " | ".join(str(outcomes[kind]) for kind in kinds)
        lines.append(f"| {language.split(' ')[0]} | {name} | {count} | {cells} | {seconds:.0f} |")
    failed = [f for r in results.values() for f in r[3]]
    if failed:
        lines += ["", "Not as expected (task, outcome, first error line):", ""]
        lines += [f"- {f['task_id']}: {f['outcome']}: `{f['error']}`" for f in failed]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="mxeval's data/mbxp")
    parser.add_argument("--languages", default="python,cpp,java,javascript,typescript")
    parser.add_argument("--limit", type=int, default=None, help="first N rows per file")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--failures", type=Path, default=None, help="write failures as JSON")
    parser.add_argument("--multiple-dir", type=Path, default=None, help="MultiPL-E's rows")
    args = parser.parse_args()
    if args.data_dir is None and args.multiple_dir is None:
        parser.error("name --data-dir, --multiple-dir or both")
    limited = f", first {args.limit} per file" if args.limit else ""
    failures = {}
    if args.data_dir is not None:
        results = {}
        for language in args.languages.split(","):
            if language not in FILES:
                raise SystemExit(f"{language}: not one of {', '.join(FILES)}")
            results[language] = run_language(args.data_dir, language, args.limit, args.workers)
            _, count, outcomes, _, seconds = results[language]
            print(f"{language}: {outcomes['passed']}/{count} passed ({seconds:.0f} s)", flush=True)
        failures.update({language: r[3] for language, r in results.items()})
        record(f"MBXP canonical solutions through the sandbox{limited} (bench/mbxp_canonical.py)",
               table(results, "canonical solutions"))  # fmt: skip
    if args.multiple_dir is not None:
        results = run_multiple(args.multiple_dir, args.limit, args.workers)
        failures.update({f"multipl-e {key}": r[3] for key, r in results.items()})
        record(f"MultiPL-E test files after a throwing stub{limited} (bench/mbxp_canonical.py)",
               table(results, "test files"))  # fmt: skip
    if args.failures:
        args.failures.write_text(json.dumps(failures, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
