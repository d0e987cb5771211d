"""Weight types of the bundled SmolLM2 for llama.cpp on this CPU: speed and pass rate.

The bundled GGUF is Q4_1. `engine.weights` re-types it (codeloop/engines/gguf_weights.py:
every weight dequantized to F16 and quantized again by llama.cpp's own quantizer). A
type is worth taking only if it is faster here and the model answers as well with it,
so for each type this runs the llamacpp engine (batch 8, greedy, `max_tokens` as the
cpu-demo preset) on the same tier-1 dev tasks of the curriculum (`bench/engines.py`'s
prompts, languages in turn), checks every answer against the task's hidden tests in the
sandbox, and counts answers equal to the Q4_1 file's. The types run in turn, twice in
A-B-B-A order, so the machine's drift falls on all; each type's rate is over both passes.

    .venv/bin/python -m bench.experiments.weights [--prompts 48] [--types file,q8_0,q4_0]

Prints a table and appends it to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import time

from bench.engines import bench_tasks, cpu_features, llama_build
from bench.results import record
from bench.shared import check
from codeloop import recipe
from codeloop.config import BUNDLED_MODEL, EngineConfig, load_preset
from codeloop.engines.llamacpp import LlamaCppEngine


def run(kind: str, tasks: list, warm: list, max_tokens: int, threads: int) -> dict:
    """One type's answers and timing, its file built (or read from the cache) first."""
    started = time.monotonic()
    engine = LlamaCppEngine(
        EngineConfig(
            kind="llamacpp",
            model=BUNDLED_MODEL,
            batch_size=8,
            max_tokens=max_tokens,
            weights=None if kind == "file" else kind,
        ),
        threads=threads,
    )
    built = time.monotonic() - started
    try:
        engine.generate([recipe.messages(task) for task in warm], max_tokens=8)
        started = time.monotonic()
        results = engine.generate([recipe.messages(task) for task in tasks], max_tokens=max_tokens)
        seconds = time.monotonic() - started
    finally:
        engine.close()
    return {
        "texts": [row[0].text for row in results],
        "tokens": sum(row[0].tokens for row in results),
        "seconds": seconds,
        "built": built,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=48)
    parser.add_argument("--types", default="file,q8_0,q4_0", help="file: the Q4_1 file itself")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    kinds = [kind.strip() for kind in args.types.split(",") if kind.strip()]
    max_tokens = load_preset("cpu-demo").engine.max_tokens
    every = bench_tasks(2 * args.prompts)
    tasks, warm = every[: args.prompts], every[args.prompts :]
    runs: dict[str, list[dict]] = {kind: [] for kind in kinds}
    for kind in kinds + kinds[::-1]:
        runs[kind].append(run(kind, tasks, warm, max_tokens, args.threads))
        print(f"{kind}: {runs[kind][-1]['tokens'] / runs[kind][-1]['seconds']:.1f} tok/s")
    reference = runs[kinds[0]][0]["texts"]
    lines = [
        "| weights | useful tok/s (two passes) | vs first row | tokens | answers passed | "
        f"greedy = {kinds[0]} | same answers both passes | first load s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    first_rate = None
    for kind in kinds:
        passes = runs[kind]
        rate = sum(p["tokens"] for p in passes) / sum(p["seconds"] for p in passes)
        first_rate = first_rate or rate
        verdicts = check(tasks, passes[0]["texts"])
        passed = sum(not isinstance(v, str) and v.passed for v in verdicts)
        same = sum(a == b for a, b in zip(passes[0]["texts"], reference, strict=True))
        stable = passes[0]["texts"] == passes[1]["texts"]
        each = ", ".join(f"{p['tokens'] / p['seconds']:.1f}" for p in passes)
        lines.append(
            f"| {kind} | {rate:.1f} ({each}) "
            f"| {rate / first_rate:.2f}x | {passes[0]['tokens']} | {passed}/{len(tasks)} | "
            f"{same}/{len(tasks)} | {'yes' if stable else 'NO'} | {passes[0]['built']:.1f} |"
        )
    languages = sorted({task.language for task in tasks})
    lines += [
        "",
        f"{len(tasks)} tier-1 dev tasks of the curriculum ({', '.join(languages)}), codeloop's "
        f"recipe, greedy, max {max_tokens} tokens, llamacpp engine at batch 8, {args.threads} "
        "threads, base model (no adapter). `file`: the bundled Q4_1 GGUF; the others are "
        "`engine.weights` copies of it. Order of runs: the types, then the types reversed. "
        "First load s: the engine's start, with the re-typed file built unless cached.",
        "",
        f"llama.cpp build: {llama_build()}. CPU: {cpu_features()}.",
    ]
    record(
        f"weight types of the bundled SmolLM2 on llama.cpp (bench/weights.py, {args.threads} threads)",
        lines,
    )


if __name__ == "__main__":
    main()
