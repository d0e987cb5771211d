"""vLLM end to end on a GPU machine: the bundled SmolLM2 (as an HF folder), with and without a LoRA.

Run on a machine with a CUDA GPU and `pip install -e .[cpu,vllm]`:

    python -m bench.vllm_smoke

It converts the bundled GGUF to a Hugging Face folder (codeloop.models.hf_folder),
makes a random rank-8 LoRA adapter, and checks through codeloop's vllm engine that
greedy generation is repeatable, that seeded sampling is repeatable, and that the
adapter changes the answers while unloading it restores them. Prints tokens/s and
appends a table to bench/RESULTS.md.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path

from bench.results import record
from codeloop.config import BUNDLED_MODEL, EngineConfig
from codeloop.models import load, resolve

PROMPTS = [
    [{"role": "user", "content": f"Write a Python program that prints the number {i}."}]
    for i in range(32)
]


def texts(results) -> list[str]:
    return [row[0].text for row in results]


def main() -> None:
    import peft
    import torch

    if importlib.util.find_spec("vllm") is None or not torch.cuda.is_available():
        print("bench/vllm_smoke.py: skipped: needs vLLM and a CUDA GPU (pip install -e .[vllm])")
        sys.exit(0)
    from codeloop.engines.vllm import VLLMEngine

    with tempfile.TemporaryDirectory() as scratch:
        model, _tokenizer = load(resolve(BUNDLED_MODEL))
        torch.manual_seed(0)
        lora = peft.LoraConfig(
            r=8, lora_alpha=32, target_modules="all-linear", init_lora_weights=False
        )
        adapter = Path(scratch) / "adapter"
        peft.get_peft_model(model, lora).save_pretrained(adapter)
        del model
        engine = VLLMEngine(
            EngineConfig(
                kind="vllm", model=BUNDLED_MODEL, precision="bfloat16", gpu_memory_utilization=0.5
            )
        )
        started = time.monotonic()
        base = engine.generate(PROMPTS, max_tokens=128)
        seconds = time.monotonic() - started
        tokens = sum(row[0].tokens for row in base)
        assert texts(engine.generate(PROMPTS, max_tokens=128)) == texts(base), "greedy repeats"
        sampled = engine.generate(PROMPTS[:4], max_tokens=64, temperature=0.8, seed=7, n=2)
        again = engine.generate(PROMPTS[:4], max_tokens=64, temperature=0.8, seed=7, n=2)
        assert [[c.text for c in r] for r in sampled] == [[c.text for c in r] for r in again]
        engine.load_adapter(adapter)
        adapted = engine.generate(PROMPTS, max_tokens=128)
        assert texts(adapted) != texts(base), "the adapter must change the answers"
        engine.load_adapter(None)
        assert texts(engine.generate(PROMPTS, max_tokens=128)) == texts(base), "unload restores"
    record(
        f"vLLM smoke ({torch.cuda.get_device_name()})",
        [
            "| prompts | tokens | tok/s | greedy repeat | seeded repeat | adapter changes, "
            "unload restores |",
            "|---|---|---|---|---|---|",
            f"| {len(PROMPTS)} | {tokens} | {tokens / seconds:.0f} | yes | yes | yes |",
        ],
    )


if __name__ == "__main__":
    main()
