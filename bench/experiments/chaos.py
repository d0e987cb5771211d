"""Kill a cpu-demo round 20+ times while it works; is the result the uninterrupted one?

Runs one round of the preset twice in fresh sessions, side by side in one run:
calm (never interrupted), then chaos: SIGKILL lands while a phase works (after a
saved answer in collect, baseline, candidate and each audit; after a training
checkpoint; after a phase's first heartbeat elsewhere), alternating the launcher
and the phase process, and finish dies twice at its failpoints. Each killed
launcher is started again, as a user would. Then it compares:
  - every JSON artifact (timings and heartbeats aside), `train.jsonl` and the
    adapter weights, chaos against calm;
  - the collector's call log (CODELOOP_CALL_LOG): no answer saved before a kill is
    asked of the model again, and the set of calls equals the calm run's.
Prints a table and appends it to bench/RESULTS.md with the commit it ran on. The
tests run the same machinery on a tiny fixture round (tests/test_loop_e2e.py);
this is the preset's real scale, with the bundled model (about an hour on 2 cores).

    .venv/bin/python -m bench.experiments.chaos [--preset cpu-demo] [--out DIR] [--per-phase 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

# tests/support/chaos.py: the machinery the chaos test uses
from bench.results import record
from codeloop.config import load_preset
from codeloop.loop import origin
from codeloop.loop.collect import CALL_LOG_ENV
from codeloop.loop.common import FAILPOINTS_ENV, PHASES
from codeloop.loop.launcher import open_session
from tests.support.chaos import Chaos, artifacts, asked_again, run

FAILPOINTS = ("finish-after-weights", "finish-after-status")


def calm_round(session: Path, log: Path) -> float:
    os.environ[CALL_LOG_ENV] = str(log)
    started = time.monotonic()
    launcher = run(session)
    output = launcher.communicate()[0]
    if launcher.returncode != 0:
        raise SystemExit(f"the calm round failed:\n{output[-3000:]}")
    return time.monotonic() - started


def chaos_round(session: Path, log: Path, points: Path, per_phase: int) -> tuple[Chaos, float]:
    os.environ[CALL_LOG_ENV] = str(log)
    points.mkdir(parents=True, exist_ok=True)
    for name in FAILPOINTS:
        (points / name).write_text("")
    os.environ[FAILPOINTS_ENV] = str(points)
    output = (log.parent / "chaos-output.log").open("a", encoding="utf-8")
    chaos = Chaos(session, log, per_phase=per_phase, poll_s=0.25, output=output)
    chaos.budget["finish"] = 0  # the failpoints use its restarts
    chaos.budget["collect"] = per_phase + 2  # the longest phase, with the most saves
    started = time.monotonic()
    try:
        chaos.run(time.monotonic() + 6 * 3600)
    finally:
        os.environ.pop(FAILPOINTS_ENV, None)
        output.close()
    return chaos, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cpu-demo")
    parser.add_argument("--out", type=Path, default=None, help="a new folder for both sessions")
    parser.add_argument("--per-phase", type=int, default=3, help="kills at most per phase")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="codeloop-chaos-"))
    out.mkdir(parents=True, exist_ok=True)
    preset = load_preset(args.preset)
    calm, wild = out / "calm", out / "chaos"
    for session in (calm, wild):
        if session.exists():
            raise SystemExit(f"{session} exists: give --out a new folder")
        open_session(session, preset, origin.from_preset(args.preset, preset))

    print(f"calm round in {calm} ...", flush=True)
    calm_s = calm_round(calm, out / "calm-calls.log")
    print(f"chaos round in {wild} ...", flush=True)
    chaos, chaos_s = chaos_round(wild, out / "chaos-calls.log", out / "failpoints", args.per_phase)

    calm_calls = (out / "calm-calls.log").read_text().splitlines()
    chaos_calls = (out / "chaos-calls.log").read_text().splitlines()
    repeated = asked_again(chaos_calls, chaos.positions)
    fired = [name for name in FAILPOINTS if not (out / "failpoints" / name).exists()]
    mine, theirs = artifacts(wild), artifacts(calm)
    differing = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    per_phase = Counter(phase for phase, _whom in chaos.kills)
    per_whom = Counter(whom for _phase, whom in chaos.kills)

    lines = [
        f"preset {args.preset}, one round; sessions in {out}",
        "",
        "| | calm | chaos |",
        "|---|---|---|",
        f"| wall time | {calm_s:.0f} s | {chaos_s:.0f} s |",
        f"| SIGKILLs while a phase worked | 0 | {len(chaos.kills)} "
        f"(launcher {per_whom['launcher']}, phase process {per_whom['phase']}) |",
        f"| finish failpoints fired | - | {len(fired)} of {len(FAILPOINTS)} |",
        f"| model calls (answers asked) | {len(calm_calls)} | {len(chaos_calls)} "
        f"({len(set(chaos_calls))} distinct) |",
        f"| answers asked again after being saved | - | {len(repeated)} |",
        f"| same set of calls as calm | - | {sorted(set(chaos_calls)) == sorted(calm_calls)} |",
        f"| artifacts compared (JSON, train.jsonl, adapter) | {len(theirs)} | {len(mine)} |",
        f"| artifacts differing from calm | - | {len(differing)} |",
        "",
        "Kills per phase: "
        + ", ".join(f"{phase} {per_phase[phase]}" for phase in PHASES if per_phase[phase]),
    ]
    if differing:
        lines.append("Differing: " + ", ".join(differing[:20]))
    if repeated:
        lines.append("Asked again: " + ", ".join(repeated[:10]))
    print("\n".join(lines))
    record(f"Chaos: a {args.preset} round killed while it works (bench/chaos.py)", lines)


if __name__ == "__main__":
    main()
