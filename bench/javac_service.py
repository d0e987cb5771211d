"""Java checks with the worker's javac service against one javac JVM per compile.

Runs `codeloop eval --suite humaneval-x --canonical --languages java` through the
real CLI, each run with a fresh compile cache (so every program is compiled), the
two modes taking turns (`CODELOOP_JAVAC_SERVICE=on|off`) for --repeats rounds, so
that both see the same machine. Per run: wall seconds, the compile and run seconds
summed over workers (summary.json), and how many passed. The one-time builds (the
batch compiler's jar and class-data archive) are in every run's wall time alike.

Prints a table and appends it, with the date and host name, to bench/RESULTS.md.

    python bench/javac_service.py [--limit 164] [--repeats 2] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import record  # bench/results.py (scripts run from bench/)

MODES = ("on", "off")


def run_once(mode: str, limit: int, workers: int) -> dict[str, float]:
    """One `codeloop eval` of the Java canonical solutions with a fresh compile cache."""
    out = Path(tempfile.mkdtemp(prefix="codeloop-bench-javac-"))
    cache = Path(tempfile.mkdtemp(prefix="codeloop-bench-javac-cache-"))
    os.chmod(cache, 0o755)  # the sandbox uids read the shared folders below it
    env = {**os.environ, "CODELOOP_CACHE": str(cache), "CODELOOP_JAVAC_SERVICE": mode}
    command = [
        sys.executable,
        "-m",
        "codeloop",
        "eval",
        "--suite",
        "humaneval-x",
        "--canonical",
        "--languages",
        "java",
        "--limit",
        str(limit),
        "--workers",
        str(workers),
        "--out",
        str(out / "eval"),
    ]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall_s = time.monotonic() - started
    try:
        if result.returncode != 0:
            raise SystemExit(f"codeloop eval failed ({mode}):\n{result.stderr[-3000:]}")
        java = json.loads((out / "eval" / "summary.json").read_text())["languages"]["java"]
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "wall_s": wall_s,
        "compile_s": java["compile_s"],
        "run_s": java["run_s"],
        "passed": java["passed"],
        "total": java["total"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=164, help="Java tasks per run")
    parser.add_argument("--repeats", type=int, default=2, help="runs per mode, taking turns")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for repeat in range(args.repeats):
        for mode in MODES if repeat % 2 == 0 else MODES[::-1]:
            found = run_once(mode, args.limit, args.workers)
            runs[mode].append(found)
            print(f"service {mode}: {found}", flush=True)
    lines = [
        f"`codeloop eval --suite humaneval-x --canonical --languages java --limit {args.limit} "
        f"--workers {args.workers}`, fresh compile cache per run, modes taking turns.",
        "",
        "| javac | run | wall s | compile s (summed over workers) | run s | passed |",
        "|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        label = "service (one warm JVM per worker)" if mode == "on" else "one JVM per compile"
        for index, found in enumerate(runs[mode], 1):
            lines.append(
                f"| {label} | {index} | {found['wall_s']:.1f} | {found['compile_s']:.1f} | "
                f"{found['run_s']:.1f} | {found['passed']}/{found['total']} |"
            )
    median = {
        mode: {
            key: statistics.median(r[key] for r in runs[mode]) for key in ("wall_s", "compile_s")
        }
        for mode in MODES
    }
    lines += [
        "",
        f"Median compile seconds: {median['off']['compile_s']:.1f} (one JVM per compile) / "
        f"{median['on']['compile_s']:.1f} (service) = "
        f"{median['off']['compile_s'] / median['on']['compile_s']:.2f}x; median wall: "
        f"{median['off']['wall_s']:.1f} / {median['on']['wall_s']:.1f} s = "
        f"{median['off']['wall_s'] / median['on']['wall_s']:.2f}x.",
    ]
    record(f"javac service, Java canonical ({os.cpu_count()} cores)", lines)


if __name__ == "__main__":
    main()
