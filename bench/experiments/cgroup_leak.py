"""What cgroups left behind by workers that are gone cost every later check.

A worker killed before it closed leaves its cgroup folders (and those of the runs
killed with it). On cgroup v1, every write of a CPU quota walks all cpu cgroups of the
machine, and each check writes one, so the leftovers slow every check of every later
session; `cgroups.sweep_stale` removes them when a worker starts. This bench leaves
`--left` empty worker folders of a process that is gone in each hierarchy, measures
one worker checking the 164 HumanEval canonical solutions in the warm Python sandbox
(ms per check, the worker's own CPU per check, and the mean time of its CPU quota
writes), sweeps them, and measures again; the two states take turns for `--rounds`.

    .venv/bin/python -m bench.experiments.cgroup_leak [--left 5000] [--rounds 3]

Prints a table and appends it to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.results import record
from codeloop.evaluate import load_humaneval
from codeloop.evaluate.humaneval import humaneval_job
from codeloop.sandbox import CheckRequest, cgroups
from codeloop.sandbox.check import Sandbox


def requests() -> list[CheckRequest]:
    """The 164 HumanEval canonical solutions' checks."""
    rows = load_humaneval(None).rows.values()
    return [humaneval_job(row, row["canonical_solution"]).request() for row in rows]


def gone_pid() -> int:
    """A pid no process has now (one that just exited)."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    return ended.pid


def leave(roots: list[Path], count: int) -> None:
    """`count` empty worker folders of a process that is gone, in each hierarchy."""
    pid = gone_pid()
    for root in roots:
        for index in range(count):
            os.makedirs(root / f"w{pid}-{index}", exist_ok=True)


def measure(sandbox: Sandbox, made: list[CheckRequest]) -> dict[str, float]:
    """One pass over `made`: wall ms and worker CPU ms per check, ms per quota write."""
    writes: list[float] = []
    original = cgroups._write

    def timed(path: str, text: str) -> None:
        started = time.perf_counter()
        original(path, text)
        if path.endswith(("cpu.cfs_quota_us", "cpu.max")):
            writes.append((time.perf_counter() - started) * 1000)

    cgroups._write = timed  # type: ignore[assignment]
    try:
        cpu, wall = time.thread_time(), time.perf_counter()
        for request in made:
            check = sandbox.check(request)
            if check.status != "passed":
                raise SystemExit(f"a canonical solution did not pass: {check.feedback[:300]}")
        wall_ms = (time.perf_counter() - wall) * 1000 / len(made)
        cpu_ms = (time.thread_time() - cpu) * 1000 / len(made)
    finally:
        cgroups._write = original  # type: ignore[assignment]
    return {"wall": wall_ms, "cpu": cpu_ms, "quota": statistics.mean(writes) if writes else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--left", type=int, default=5000, help="folders left per hierarchy")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sandbox = Sandbox("bwrap", worker=95)
    manager = sandbox.backend.cgroups
    if not manager.available or sandbox.warm is None:
        raise SystemExit(f"needs cgroups and the warm sandbox: {manager.describe()}")
    roots = sorted({folder.parent for folder, _controllers in manager.parents})
    made = requests()
    for request in made[:8]:
        sandbox.check(request)  # the zygote, the page cache
    rows: dict[str, list[dict[str, float]]] = {"left": [], "swept": []}
    try:
        for _ in range(args.rounds):
            leave(roots, args.left)
            rows["left"].append(measure(sandbox, made))
            for root in roots:
                cgroups.sweep_stale(root)
            rows["swept"].append(measure(sandbox, made))
    finally:
        for root in roots:
            cgroups.sweep_stale(root)
        sandbox.close()
    lines = [
        "| cgroups of gone workers | ms per check | worker CPU ms per check | ms per CPU quota write |",
        "|---|---|---|---|",
    ]
    for state, label in (("left", f"{args.left} per hierarchy"), ("swept", "swept")):

        def median(key: str, state: str = state) -> float:
            return statistics.median(row[key] for row in rows[state])

        lines.append(
            f"| {label} | {median('wall'):.2f} | {median('cpu'):.2f} | {median('quota'):.3f} |"
        )
    lines += [
        "",
        f"One in-process worker (warm Python sandbox), 164 HumanEval canonical checks per "
        f"pass; medians of {args.rounds} passes per state, the states taking turns; "
        f"hierarchies: {', '.join(str(root) for root in roots)}.",
    ]
    record("Cgroups left behind by workers that are gone (bench/cgroup_leak.py)", lines)


if __name__ == "__main__":
    main()
