"""Does a warm Python check gain by ending at the driver's nonce instead of its exit?

A test that ran to its end is over once the driver's stdout ends in the nonce and
closes (`runs.collect_output(finished=...)`); the alternative is to wait, as every
other run does, for the process to exit and the zygote to report its status. Each of
`--workers` processes holds two in-process sandboxes, one that ends at the nonce (as
the code does) and one whose checks get no `finished` line and so wait for the exit,
and checks the 164 HumanEval canonical solutions with each in turn for `--rounds`
rounds; the processes run side by side, as pool workers do.

    .venv/bin/python -m bench.experiments.warm_end [--rounds 10] [--workers 1,2]

Prints ms per check (median over rounds, per worker process) and appends the table to
bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time

from bench.results import record
from codeloop.evaluate import load_humaneval
from codeloop.evaluate.humaneval import humaneval_job
from codeloop.sandbox import CheckRequest
from codeloop.sandbox.check import Sandbox

WAYS = ("ends at the nonce", "waits for the exit")


def requests() -> list[CheckRequest]:
    """The 164 HumanEval canonical solutions' checks."""
    rows = load_humaneval(None).rows.values()
    return [humaneval_job(row, row["canonical_solution"]).request() for row in rows]


def rounds(index: int, count: int, out: multiprocessing.Queue) -> None:
    """One worker process: both ways in turn, `count` rounds; ms per check of each."""
    made = requests()
    boxes = {way: Sandbox("bwrap", worker=85 + 2 * index + n) for n, way in enumerate(WAYS)}
    waiting = boxes[WAYS[1]].warm
    if waiting is None or boxes[WAYS[0]].warm is None:
        raise SystemExit("the warm Python sandbox is off here")
    check = waiting.check
    waiting.check = lambda program, stdin, limits, finished=None: check(  # type: ignore[method-assign]
        program, stdin, limits, None
    )
    for sandbox in boxes.values():
        for request in made[:8]:
            sandbox.check(request)
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    try:
        for _ in range(count):
            for way, sandbox in boxes.items():
                started = time.perf_counter()
                for request in made:
                    if sandbox.check(request).status != "passed":
                        raise SystemExit(f"{way}: a canonical solution did not pass")
                times[way].append((time.perf_counter() - started) * 1000 / len(made))
    finally:
        for sandbox in boxes.values():
            sandbox.close()
    out.put(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--workers", default="1,2", help="side-by-side processes, per run")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    lines = [
        "| worker processes | ms per check, ends at the nonce | ms per check, waits for the exit "
        "| waiting / ending |",
        "|---|---|---|---|",
    ]
    for workers in (int(x) for x in args.workers.split(",")):
        out: multiprocessing.Queue = context.Queue()
        processes = [
            context.Process(target=rounds, args=(index, args.rounds, out))
            for index in range(workers)
        ]
        for process in processes:
            process.start()
        results = [out.get() for _ in processes]
        for process in processes:
            process.join()
        medians = {way: [statistics.median(result[way]) for result in results] for way in WAYS}
        ratio = statistics.mean(medians[WAYS[1]]) / statistics.mean(medians[WAYS[0]])
        lines.append(
            f"| {workers} | {' / '.join(f'{x:.2f}' for x in medians[WAYS[0]])} | "
            f"{' / '.join(f'{x:.2f}' for x in medians[WAYS[1]])} | {ratio:.2f}x |"
        )
    lines += [
        "",
        f"164 HumanEval canonical checks per round, {args.rounds} rounds per way taking "
        "turns in each process (medians over rounds, one per process); each process is "
        "one worker with its own two warm sandboxes.",
    ]
    record("Warm Python checks: ending at the nonce or at the exit (bench/warm_end.py)", lines)


if __name__ == "__main__":
    main()
