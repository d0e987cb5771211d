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

The data is not downloaded here: clone mxeval (or copy its `data/mbxp/` folder) and name
the folder:

    git clone https://github.com/amazon-science/mxeval /tmp/mxeval
    .venv/bin/python -m bench.mbxp_canonical --data-dir /tmp/mxeval/data/mbxp \\
        [--languages python,cpp,java,javascript,typescript] [--limit N] [--workers 2] \\
        [--failures failures.json]

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


def run_language(
    data_dir: Path, language: str, limit: int | None, workers: int
) -> tuple[str, int, Counter, list[dict], float]:
    """(release file, problems, outcomes, failures, seconds) of one language."""
    name, rows = load(data_dir, language)
    rows = rows[:limit] if limit else rows
    requests = [
        RunRequest(language=language, program=program(row, language), limits=LIMITS, debug=True)
        for row in rows
    ]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        runs = list(pool.map(lambda wanted: run_program(wanted, workers=workers), requests))
    seconds = time.monotonic() - started
    outcomes = Counter()
    failures = []
    for row, run in zip(rows, runs, strict=True):
        found = outcome(run)
        outcomes[found] += 1
        if found != "passed":
            failures.append(
                {"task_id": row["task_id"], "outcome": found, "error": first_error(run)}
            )
    return name, len(rows), outcomes, failures, seconds


def table(results: dict[str, tuple[str, int, Counter, list[dict], float]]) -> list[str]:
    """The Markdown table of every language's counts, then each failure on a line."""
    kinds = ["compile failed", "compile timeout", "failed", "timeout", "environment error"]
    lines = [
        "| language | file | canonical solutions | passed | " + " | ".join(kinds) + " | s |",
        "|---|---|---:|---:|" + "---:|" * len(kinds) + "---:|",
    ]
    for language, (name, count, outcomes, _, seconds) in results.items():
        cells = " | ".join(str(outcomes[kind]) for kind in kinds)
        lines.append(
            f"| {language} | {name} | {count} | {outcomes['passed']} | {cells} | {seconds:.0f} |"
        )
    failed = [(language, f) for language, r in results.items() for f in r[3]]
    if failed:
        lines += ["", "Failures (task, outcome, first error line):", ""]
        lines += [f"- {f['task_id']}: {f['outcome']}: `{f['error']}`" for _, f in failed]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="mxeval's data/mbxp")
    parser.add_argument("--languages", default="python,cpp,java,javascript,typescript")
    parser.add_argument("--limit", type=int, default=None, help="first N problems per language")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--failures", type=Path, default=None, help="write failures as JSON")
    args = parser.parse_args()
    results = {}
    for language in args.languages.split(","):
        if language not in FILES:
            raise SystemExit(f"{language}: not one of {', '.join(FILES)}")
        results[language] = run_language(args.data_dir, language, args.limit, args.workers)
        _, count, outcomes, _, seconds = results[language]
        print(f"{language}: {outcomes['passed']}/{count} passed ({seconds:.0f} s)", flush=True)
    if args.failures:
        failures = {language: r[3] for language, r in results.items()}
        args.failures.write_text(json.dumps(failures, indent=1) + "\n", encoding="utf-8")
    limited = f", first {args.limit} per language" if args.limit else ""
    record(f"MBXP canonical solutions through the sandbox{limited} (bench/mbxp_canonical.py)",
           table(results))  # fmt: skip


if __name__ == "__main__":
    main()
