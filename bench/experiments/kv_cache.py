"""llama.cpp's KV cache types side by side: pass rates, speed and memory, in one run.

q8_0 keys and values with flash attention (the llamacpp engine's setting) against
float16 cells without flash attention (the setting before), on the bundled
SmolLM2-135M at batch 8: tier-1 dev tasks (never trained on), greedy, with the base
model and with a trained adapter, every answer checked in the sandbox. Each type
runs in its own subprocess (bench/engines.py's worker: warm-up call first, then the
timed call, then the same call with the prefix cache emptied), so its peak RSS is
its own. Appends a table to bench/RESULTS.md.

    python -m bench.experiments.kv_cache [--prompts 48] [--max-tokens 256] [--adapter PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.engines import bench_tasks, passes, write_job
from bench.results import record

TYPES = ("f16", "q8_0")
ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=48)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--adapter", help="a PEFT adapter folder (default: train one here)")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    every = bench_tasks(args.prompts + 16)
    tasks, warmup = every[: args.prompts], every[args.prompts :] or every[:8]
    with tempfile.TemporaryDirectory() as scratch:
        job, adapter = write_job(Path(scratch), tasks, warmup, args)
        measured = {}
        for kv in TYPES:
            out = Path(scratch) / f"{kv}.json"
            command = [
                sys.executable,
                "-m",
                "bench.engines",
                "--worker",
                "llamacpp",
                "--batch",
                "8",
            ]
            command += ["--kv", kv, "--job", str(job), "--out", str(out)]
            subprocess.run(command, check=True, cwd=ROOT)
            measured[kv] = json.loads(out.read_text())
    lines = [
        "| KV cells | attention | adapter | useful tok/s | cold tok/s | peak RSS MiB "
        "| passed | answers = f16's |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label in ("base", "adapter"):
        reference = measured["f16"][label]["texts"]
        for kv in TYPES:
            cell = measured[kv][label]
            same = sum(a == b for a, b in zip(cell["texts"], reference, strict=True))
            lines.append(
                f"| {kv} | {'flash' if kv != 'f16' else 'matrix'} | {label} | "
                f"{cell['rate']:.1f} | {cell['cold_rate']:.1f} | "
                f"{measured[kv]['peak_rss_mib']:.0f} | "
                f"{passes(tasks, cell['texts'])}/{len(tasks)} | {same}/{len(tasks)} |"
            )
    lines += [
        "",
        f"Prompts: {len(tasks)} tier-1 dev tasks ({len(set(t.language for t in tasks))} "
        f"languages), greedy, max {args.max_tokens} tokens, batch 8, {args.threads} threads. "
        f"Adapter: {'trained here (12 steps on worked examples)' if not args.adapter else adapter}.",
    ]
    record("llama.cpp KV cache types, bundled SmolLM2-135M (bench/kv_cache.py)", lines)


if __name__ == "__main__":
    main()
