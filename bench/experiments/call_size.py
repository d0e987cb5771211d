"""A chunk's samples in one engine call, against one call per sample index; and a
task's prompt kept for its next sample.

A round asks most of its answers as seeded samples: collect's `round.samples` per
train task, and the gate's and audit's `confirm_samples` per task and side. They used
to go to the engine one sample index at a time: a call of `batch_size` requests, whose
last, longest answers decode with the batch nearly empty. Asked together, a chunk's
samples keep the engine's batch full (a waiting request takes the place of one that
finished). The engine sorts a call's requests by prompt, so a task's samples follow
each other; since 7 Dec the decoder keeps a prompt whose next request asks it again
(`BatchDecoder.keep_repeated`), where the prefix cache had dropped it as soon as the
languages' shared prefixes filled its budget, and each sample decoded its task's part
again. This runs the three ways (`WAYS`) on the same tasks and seeds, with the
cpu-demo preset's engine (its weights, batch size, sampling temperature and min-p), in
A-B-C-C-B-A order in one process, and counts the answers that differ between the ways:
each answer has its own seed, so the llamacpp engine must give the same text in any.

    .venv/bin/python -m bench.experiments.call_size [--tasks 16] [--samples 5,8] [--engine-set KEY=VALUE]

`--samples 5,8`: collect's samples per task, then the guard's confirmation samples.
Prints a table and appends it to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import time

from bench.engines import bench_tasks, cpu_features, llama_build
from bench.learning import engine_values
from bench.results import record
from codeloop import recipe
from codeloop.config import load_preset, with_values
from codeloop.engines import create
from codeloop.evaluate.scoring import sample_seed

WAYS = ("per index", "one call, repeats not kept", "one call")
"""How a chunk's (task, sample) requests go to the engine: a call per sample index (as
before 765885d); one call, with the decoder's cache as before 7 Dec (`keep_repeated`
off); one call, as a round asks them now."""


def ask(engine, tasks: list, samples: int, way: str, settings: dict) -> dict:
    """Every task's `samples` answers, in chunks of the engine's batch size, one way."""
    size, seed = settings["batch_size"], settings["seed"]
    texts: dict[tuple[str, int], str] = {}
    tokens, calls = 0, 0
    engine.decoder.keep_repeated = way != WAYS[1]
    before = dict(engine.decoder.stats)
    started = time.monotonic()
    for start in range(0, len(tasks), size):
        chunk = tasks[start : start + size]
        groups = (
            [[(task, i) for task in chunk] for i in range(samples)]
            if way == WAYS[0]
            else [[(task, i) for i in range(samples) for task in chunk]]
        )
        for group in groups:
            results = engine.generate(
                [recipe.messages(task) for task, _i in group],
                max_tokens=settings["max_tokens"],
                temperature=settings["temperature"],
                seed=[sample_seed(seed, task.id, i) for task, i in group],
            )
            calls += 1
            for (task, i), [completion] in zip(group, results, strict=True):
                texts[(task.id, i)] = completion.text
                tokens += completion.tokens
    seconds = time.monotonic() - started
    moved = {key: engine.decoder.stats[key] - before[key] for key in before}
    return {
        "texts": texts,
        "tokens": tokens,
        "seconds": seconds,
        "calls": calls,
        "prompt_tokens": moved["prompt_tokens"] - moved["shared_tokens"],
        "prompt_seconds": moved["prompt_seconds"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--samples", default="5,8", help="samples per task, comma-separated")
    parser.add_argument(
        "--engine-set", action="append", default=[], metavar="KEY=VALUE",
        help="override one engine setting of the cpu-demo preset, e.g. weights=q8_0",
    )  # fmt: skip
    args = parser.parse_args()
    preset = load_preset("cpu-demo")
    if args.engine_set:
        preset = with_values(preset, {"engine": engine_values(args.engine_set)}, "--engine-set")
    counts = [int(n) for n in args.samples.split(",") if n.strip()]
    tasks = bench_tasks(args.tasks)
    settings = {
        "batch_size": preset.engine.batch_size,
        "seed": preset.seed,
        "max_tokens": preset.engine.max_tokens,
        "temperature": preset.round.sample_temperature,
    }
    if preset.engine.kind != "llamacpp":
        raise SystemExit("bench/call_size.py compares the llamacpp engine's batch decoder")
    engine = create(preset.engine)
    lines = [
        "| samples per task | way | engine calls | seconds (two passes) | useful tok/s "
        "| vs per index | prompt tokens decoded (two passes) | prompt s (two passes) "
        "| answers equal to per index's first pass |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    try:
        # A round asks greedy answers first, so its samples' prompts have been decoded
        # once before (what the prefix cache holds of them then is up to its budget).
        engine.generate([recipe.messages(task) for task in tasks], max_tokens=8)
        for samples in counts:
            runs: dict[str, list[dict]] = {way: [] for way in WAYS}
            for way in (*WAYS, *WAYS[::-1]):
                runs[way].append(ask(engine, tasks, samples, way, settings))
                done = runs[way][-1]
                print(
                    f"{samples} samples, {way}: {done['tokens'] / done['seconds']:.1f} tok/s, "
                    f"{done['prompt_tokens']} prompt tokens decoded"
                )
            first = runs[WAYS[0]][0]["texts"]
            rates = {
                way: sum(p["tokens"] for p in passes) / sum(p["seconds"] for p in passes)
                for way, passes in runs.items()
            }
            for way, passes in runs.items():
                # per index: its second pass against its first; one call: its first pass
                compared = passes[1 if way == WAYS[0] else 0]["texts"]
                equal = sum(compared[key] == first[key] for key in first)
                seconds = ", ".join(f"{p['seconds']:.1f}" for p in passes)
                prompt = ", ".join(str(p["prompt_tokens"]) for p in passes)
                prompt_s = ", ".join(f"{p['prompt_seconds']:.1f}" for p in passes)
                lines.append(
                    f"| {samples} | {way} | {passes[0]['calls']} | {seconds} | "
                    f"{rates[way]:.1f} | {rates[way] / rates[WAYS[0]]:.2f}x | {prompt} | "
                    f"{prompt_s} | {equal}/{len(first)} |"
                )
    finally:
        engine.close()
    weights = preset.engine.weights or "the file's"
    adapters = "merged" if preset.engine.merge_adapter else "at run time"
    lines += [
        "",
        f"{len(tasks)} tier-1 dev tasks of the curriculum, in chunks of "
        f"{settings['batch_size']} (the engine's batch size, as a round's phases chunk "
        f"them), base model, {preset.engine.kind} engine of the cpu-demo preset (weights "
        f"{weights}, adapters {adapters}), temperature {settings['temperature']}, min-p "
        f"{preset.engine.min_p}, max {settings['max_tokens']} tokens, seeds as a round "
        "draws them. Their prompts are in the prefix cache before the first pass (a "
        "short call on the same tasks, as a round's greedy answers leave them). "
        f"Order: {', '.join(WAYS)}, then back ({', '.join(WAYS[::-1])}); rates over "
        "both passes. Prompt tokens decoded: those not restored from the prefix cache. "
        "Equal answers: per index's second pass, and the others' first pass, against "
        "per index's first pass.",
        "",
        f"llama.cpp build: {llama_build()}. CPU: {cpu_features()}.",
    ]
    record("A chunk's samples in one engine call (bench/call_size.py)", lines)


if __name__ == "__main__":
    main()
