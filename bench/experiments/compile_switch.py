"""Compiled HumanEval-X checks with a compile speed-up switched on and off.

Runs `codeloop eval --suite humaneval-x --canonical --languages ...` through the real
CLI, each run with a fresh compile cache (so every program is compiled), the two
settings of the switch's environment variable taking turns for --repeats rounds, so
that both see the same machine. Per run and language: wall seconds, the compile and
run seconds summed over workers (summary.json), and how many passed. The one-time
builds (crates, jars, headers) are in every run's wall time alike.

Switches: `javac-service` (CODELOOP_JAVAC_SERVICE: Java compiles in the worker's warm
javac JVM, or one JVM per compile), `gold` (CODELOOP_GOLD: C++ and Rust test
halves linked by gold, or by ld.bfd), `cpp-quick-test` (CODELOOP_CPP_QUICK_TEST: the
C++ test half at -O0, the codec's standard headers precompiled and the codec itself
unoptimized; or both halves -O2 as before), `cpp-rpc-lib` (CODELOOP_CPP_RPC_LIB: the
C++ codec's type-independent functions and its put/get of the common types linked
from an object built once, or compiled into each half), `rust-rpc-lib` (CODELOOP_RUST_RPC_LIB:
the Rust codec linked as an rlib built once, or compiled into each crate) and
`go-library` (CODELOOP_GO_LIBRARY: the Go codec as a package compiled once and
testify's assert without its HTTP helpers, or the codec compiled into both binaries
and Debian's whole testify).

Prints a table and appends it, with the date and host name, to bench/RESULTS.md.

    python -m bench.experiments.compile_switch [--switch all|NAME] [--limit 164] [--repeats 2]
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

from bench.results import record

MODES = ("on", "off")
SWITCHES = {
    # name: (environment variable, languages, what "on" and "off" mean)
    "javac-service": (
        "CODELOOP_JAVAC_SERVICE",
        ["java"],
        "service (one warm JVM per worker)",
        "one JVM per compile",
    ),
    "gold": ("CODELOOP_GOLD", ["cpp", "rust"], "gold", "ld.bfd"),
    "cpp-quick-test": (
        "CODELOOP_CPP_QUICK_TEST",
        ["cpp"],
        "test half -O0, codec headers precompiled",
        "both halves -O2",
    ),
    "cpp-rpc-lib": (
        "CODELOOP_CPP_RPC_LIB",
        ["cpp"],
        "codec object built once (common types instantiated)",
        "codec compiled into each half",
    ),
    "go-library": (
        "CODELOOP_GO_LIBRARY",
        ["go"],
        "codec package, testify without HTTP",
        "codec in both binaries, whole testify",
    ),
    "rust-rpc-lib": (
        "CODELOOP_RUST_RPC_LIB",
        ["rust"],
        "codec rlib built once",
        "codec compiled into each crate",
    ),
}


def run_once(switch: str, mode: str, limit: int, workers: int) -> dict[str, dict[str, float]]:
    """One `codeloop eval` of the switch's languages' canonical solutions, fresh cache:
    {language: its numbers, "all": wall seconds}."""
    variable, languages = SWITCHES[switch][:2]
    out = Path(tempfile.mkdtemp(prefix="codeloop-bench-switch-"))
    cache = Path(tempfile.mkdtemp(prefix="codeloop-bench-switch-cache-"))
    os.chmod(cache, 0o755)  # the sandbox uids read the shared folders below it
    env = {**os.environ, "CODELOOP_CACHE": str(cache), variable: mode}
    command = [
        sys.executable,
        "-m",
        "codeloop",
        "eval",
        "--suite",
        "humaneval-x",
        "--canonical",
        "--languages",
        ",".join(languages),
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
        summary = json.loads((out / "eval" / "summary.json").read_text())["languages"]
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    found: dict[str, dict[str, float]] = {"all": {"wall_s": wall_s}}
    for language in languages:
        entry = summary[language]
        found[language] = {key: entry[key] for key in ("compile_s", "run_s", "passed", "total")}
    return found


def bench_switch(switch: str, limit: int, repeats: int, workers: int) -> None:
    """Both settings of `switch`, taking turns; one RESULTS.md entry."""
    variable, languages, on_label, off_label = SWITCHES[switch]
    runs: dict[str, list[dict[str, dict[str, float]]]] = {mode: [] for mode in MODES}
    for repeat in range(repeats):
        for mode in MODES if repeat % 2 == 0 else MODES[::-1]:
            found = run_once(switch, mode, limit, workers)
            runs[mode].append(found)
            print(f"{variable}={mode}: {found}", flush=True)
    lines = [
        f"`codeloop eval --suite humaneval-x --canonical --languages {','.join(languages)} "
        f"--limit {limit} --workers {workers}`, fresh compile cache per run, "
        f"{variable}=on|off taking turns.",
        "",
        "| mode | run | wall s | language | compile s (summed over workers) | run s | passed |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        label = on_label if mode == "on" else off_label
        for index, found in enumerate(runs[mode], 1):
            for language in languages:
                entry = found[language]
                lines.append(
                    f"| {label} | {index} | {found['all']['wall_s']:.1f} | {language} | "
                    f"{entry['compile_s']:.1f} | {entry['run_s']:.1f} | "
                    f"{entry['passed']:.0f}/{entry['total']:.0f} |"
                )
    lines.append("")
    for language in ["all", *languages]:
        key = "wall_s" if language == "all" else "compile_s"
        median = {mode: statistics.median(r[language][key] for r in runs[mode]) for mode in MODES}
        what = "wall s" if language == "all" else f"{language} compile s"
        lines.append(
            f"Median {what}: {median['off']:.1f} ({off_label}) / {median['on']:.1f} "
            f"({on_label}) = {median['off'] / median['on']:.2f}x."
        )
    record(f"compile switch {switch} ({os.cpu_count()} cores)", lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--switch", choices=[*sorted(SWITCHES), "all"], default="all")
    parser.add_argument("--limit", type=int, default=164, help="tasks per language per run")
    parser.add_argument("--repeats", type=int, default=2, help="runs per mode, taking turns")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    for switch in sorted(SWITCHES) if args.switch == "all" else [args.switch]:
        bench_switch(switch, args.limit, args.repeats, args.workers)


if __name__ == "__main__":
    main()
