"""Useful tokens/s of the CPU engines on the bundled SmolLM2, measured in one run.

Useful tokens are generated tokens up to each answer's end (padding and anything
after the end are not counted). Engines: hf (transformers) at batch 1, 4, 8, 16;
llamacpp (llama-cpp-python in process); openai against llama-cpp-python's server
on loopback. hf and llamacpp are measured with and without a LoRA adapter (a
random rank-8 adapter made here). Prints a table and appends it to bench/RESULTS.md.

    python bench/engines.py [--prompts 8] [--max-tokens 96]
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import torch
from results import record  # bench/results.py (scripts run from bench/)

from codeloop.config import BUNDLED_MODEL, EngineConfig, ManagedServer
from codeloop.engines.hf import HFEngine
from codeloop.engines.llamacpp import LlamaCppEngine
from codeloop.engines.openai import OpenAIEngine
from codeloop.models import bundled_gguf, load, resolve

TOPICS = [
    "the sum of two integers",
    "the maximum of a list",
    "a reversed string",
    "the number of vowels",
    "the factorial of n",
    "whether n is prime",
    "the sorted list",
    "the n-th Fibonacci number",
]


def conversations(count: int) -> list[list[dict[str, str]]]:
    return [
        [
            {"role": "system", "content": "Answer with one complete program in a code block."},
            {
                "role": "user",
                "content": f"Write a Python program that reads input and prints "
                f"{TOPICS[i % len(TOPICS)]}. Use ```python.",
            },
        ]
        for i in range(count)
    ]


def rate(engine, prompts, max_tokens: int) -> tuple[float, int]:
    """Useful tokens per second, after one short warm-up call (weights paged in, kernels
    and adapter caches built), so the first configuration timed is not penalised."""
    engine.generate(prompts[:1], max_tokens=8)
    started = time.monotonic()
    results = engine.generate(prompts, max_tokens=max_tokens)
    elapsed = time.monotonic() - started
    tokens = sum(row[0].tokens for row in results)
    return tokens / elapsed, tokens


def make_adapter(folder: Path) -> Path:
    import peft

    model, _tokenizer = load(resolve(BUNDLED_MODEL))
    torch.manual_seed(0)
    # init_lora_weights=False: random A and B, so the adapter really changes every
    # layer's output (PEFT's default B = 0 is a no-op that costs nothing to apply).
    config = peft.LoraConfig(
        r=8, lora_alpha=16, target_modules="all-linear", init_lora_weights=False
    )
    peft.get_peft_model(model, config).save_pretrained(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args()
    threads = len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    rows: list[tuple[str, str, float, int]] = []
    with tempfile.TemporaryDirectory() as scratch:
        adapter = make_adapter(Path(scratch) / "adapter")
        hf = HFEngine(EngineConfig(model=BUNDLED_MODEL, precision="float32"))
        for label, path in (("base", None), ("adapter", adapter)):
            hf.load_adapter(path)
            for batch in (1, 4, 8, 16):
                hf.config = hf.config.model_copy(update={"batch_size": batch})
                count = max(args.prompts, batch)
                speed, tokens = rate(hf, conversations(count), args.max_tokens)
                rows.append((f"hf batch {batch}", label, speed, tokens))
                print(rows[-1], flush=True)
        del hf
        cpp = LlamaCppEngine(
            EngineConfig(kind="llamacpp", model=BUNDLED_MODEL), n_ctx=2048, threads=threads
        )
        for label, path in (("base", None), ("adapter", adapter)):
            cpp.load_adapter(path)
            speed, tokens = rate(cpp, conversations(args.prompts), args.max_tokens)
            rows.append(("llamacpp", label, speed, tokens))
            print(rows[-1], flush=True)
        cpp.close()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(bundled_gguf()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--model_alias",
            "smollm2",
            "--n_threads",
            str(threads),
        ]
        server = ManagedServer(command=command, health_url=f"http://127.0.0.1:{port}/v1/models")
        remote = OpenAIEngine(
            EngineConfig(kind="openai", model="smollm2", server=server, concurrency=1),
            log_dir=scratch,
        )
        try:
            speed, tokens = rate(remote, conversations(args.prompts), args.max_tokens)
            rows.append(("openai -> llama_cpp.server", "base", speed, tokens))
            print(rows[-1], flush=True)
        finally:
            remote.close()
    hf8 = next(speed for name, label, speed, _t in rows if name == "hf batch 8" and label == "base")
    lines = [
        "| engine | adapter | useful tok/s | tokens | vs hf batch 8 |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {name} | {label} | {speed:.1f} | {tokens} | {speed / hf8:.2f}x |"
        for name, label, speed, tokens in rows
    ]
    record(
        f"engines, bundled SmolLM2-135M on CPU ({threads} threads, {args.prompts} prompts, "
        f"max {args.max_tokens} tokens)",
        lines,
    )


if __name__ == "__main__":
    main()
