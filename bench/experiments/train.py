"""LoRA training speed and memory on the bundled SmolLM2-135M-Instruct, on CPU.

Trains through `codeloop.train.trainer.run` (the code `codeloop train` runs) on a
synthetic verified dataset whose rows are about --length tokens, batch --batch,
no gradient accumulation, and reports tokens/s (prompt + answer tokens trained per
second of training, from training.json) and the peak RSS of the process. Each
variant runs in a fresh subprocess so that its peak RSS is its own. Prints a table
and appends it to bench/RESULTS.md.

    python -m bench.experiments.train [--steps 8] [--batch 4] [--length 200] [--threads 2]
                          [--variants plain,checkpointing]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.results import record
from bench.shared import write_dataset

ROOT = Path(__file__).resolve().parents[2]  # the repository: `-m bench...` runs from it

VARIANTS = {"plain": False, "checkpointing": True}


def rows_of_length(tokenizer, count: int, length: int) -> list[dict]:
    """Verified-looking rows whose chat encoding is about `length` tokens each."""
    rows = []
    for index in range(count):
        lines = ["import sys", "", "def solve(values):", "    total = 0"]
        step = 0
        while True:
            messages = [
                {"role": "system", "content": "You write complete, correct programs."},
                {"role": "user", "content": f"Read integers and print their sum plus {index}."},
                {"role": "assistant", "content": "\n".join([*lines, "    return total", ""])},
            ]
            text = tokenizer.apply_chat_template(messages, tokenize=False)
            if len(tokenizer(text, add_special_tokens=False)["input_ids"]) >= length:
                break
            lines.append(f"    total += values[{step}] if len(values) > {step} else {index}")
            step += 1
        rows.append(
            {
                "task_id": f"bench-{index}",
                "language": "python",
                "split": "train",
                "messages": messages,
                "verification": {"kind": "local_execution", "passed": True},
                "provenance": {"dataset": "bench", "revision": "0", "source_row_sha256": "0"},
            }
        )
    return rows


def one(args: argparse.Namespace) -> None:
    """Run one variant in this process and print its numbers as JSON (last line)."""
    import torch

    from codeloop.config import BUNDLED_MODEL, ExportConfig, TrainConfig
    from codeloop.train.model import load_tokenizer, resolve_model
    from codeloop.train.trainer import TrainRequest, run

    torch.set_num_threads(args.threads)
    tokenizer = load_tokenizer(resolve_model(BUNDLED_MODEL))
    rows = rows_of_length(tokenizer, args.batch * args.steps, args.length)
    with tempfile.TemporaryDirectory() as temp:
        data = write_dataset(Path(temp) / "train.jsonl", rows)
        outcome = run(
            TrainRequest(
                dataset=data,
                output=Path(temp) / "adapter",
                base=BUNDLED_MODEL,
                train=TrainConfig(
                    steps_per_round=args.steps,
                    max_epochs=1.0,
                    batch_size=args.batch,
                    gradient_accumulation=1,
                    save_steps=10_000,
                ),
                export=ExportConfig(min_examples=1, min_per_language=0, max_length=4096),
                languages=["python"],
                seed=3407,
                precision="float32",
                gradient_checkpointing=VARIANTS[args.one],
                echo=False,
            )
        )
    report = outcome.report
    print(
        json.dumps(
            {
                "tokens_per_s": report["tokens_per_s"],
                "train_seconds": report["train_seconds"],
                "tokens": report["tokens"],
                "steps": report["steps"],
                "mean_length": report["tokens"] / report["examples"],
                "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                "first_loss": report["first_loss"],
                "last_loss": report["last_loss"],
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--length", type=int, default=200)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--variants", default="plain")
    parser.add_argument("--one", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args)
        return
    header = (
        "| variant | batch | mean tokens/row | steps | tokens/s | train s | peak RSS GiB "
        "| loss first -> last |"
    )
    lines = [header, "|---|---|---|---|---|---|---|---|"]
    for variant in args.variants.split(","):
        command = [sys.executable, "-m", "bench.experiments.train", "--one", variant]
        command += ["--steps", str(args.steps), "--batch", str(args.batch)]
        command += ["--length", str(args.length), "--threads", str(args.threads)]
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
        if done.returncode != 0:
            raise SystemExit(f"{variant}: failed\n{done.stderr[-3000:]}")
        row = json.loads(done.stdout.strip().splitlines()[-1])
        lines.append(
            f"| {variant} | {args.batch} | {row['mean_length']:.0f} | {row['steps']} | "
            f"{row['tokens_per_s']:.1f} | {row['train_seconds']:.1f} | "
            f"{row['peak_rss_gib']:.2f} | {row['first_loss']:.3f} -> {row['last_loss']:.3f} |"
        )
        print(lines[-1], flush=True)
    record(
        f"LoRA training, bundled SmolLM2-135M-Instruct on CPU ({os.cpu_count()} cores, "
        f"{args.threads} threads, float32, rank 8 all-linear)",
        lines,
    )


if __name__ == "__main__":
    main()
