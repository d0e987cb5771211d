"""Which batch size should a preset's engine use? Greedy answers at several sizes, one run.

Generation is most of a cpu-demo round, and on a CPU a decoding step of the bundled
SmolLM2-135M reads every weight once whatever the batch holds, so a wider batch
should give more answers per second, until a step turns compute-bound or the
longest answer of each batch dominates. This measures it on the prompts a round
really sends: the inference recipe's conversations for the non-curriculum held-out
tasks (bench/devset.py) in every language of the preset. Per batch size: wall
seconds, useful tokens/s, answers identical to the first size's (batch neighbours
change floating-point sums, so greedy tokens may differ), and pass@1 in the sandbox.

    .venv/bin/python -m bench.experiments.batch_size [--sizes 8,16,32] [--tasks 48] [--engine hf]

The engine is the preset's (cpu-demo: llamacpp) unless `--engine` names another kind.
"""

from __future__ import annotations

import argparse
import time

from bench import devset
from bench.results import record
from codeloop import recipe
from codeloop.config import load_preset, with_values
from codeloop.engines import create
from codeloop.sandbox import check_many
from codeloop.tasks.checks import request as check_request


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,16,32")
    parser.add_argument("--tasks", type=int, default=48)
    parser.add_argument("--preset", default="cpu-demo")
    parser.add_argument("--engine", choices=["hf", "llamacpp"], help="override engine.kind")
    args = parser.parse_args()
    config = load_preset(args.preset)
    if args.engine:
        config = with_values(config, {"engine": {"kind": args.engine}}, "--engine")
    tasks = devset.tasks(list(config.tasks.languages))
    # spread over the languages: every k-th task
    step = max(1, len(tasks) // args.tasks)
    tasks = tasks[::step][: args.tasks]
    conversations = [recipe.messages(task) for task in tasks]
    sizes = [int(size) for size in args.sizes.split(",")]
    rows, first = [], None
    for size in sizes:
        engine = create(config.engine.model_copy(update={"batch_size": size}))
        try:
            engine.generate(conversations[:2], max_tokens=8)  # warm-up
            started = time.perf_counter()
            answers = [
                c for [c] in engine.generate(conversations, max_tokens=config.engine.max_tokens)
            ]
            seconds = time.perf_counter() - started
        finally:
            engine.close()
        texts = [answer.text for answer in answers]
        first = first or texts
        requests, where = [], []
        for index, (task, text) in enumerate(zip(tasks, texts, strict=True)):
            try:
                program = recipe.source(text, task.language)
            except ValueError:
                continue
            requests.append(check_request(task, program, config.sandbox))
            where.append(index)
        checks = check_many(
            requests, workers=config.sandbox.workers, backend=config.sandbox.backend
        )
        passed = sum(check.passed for check in checks)
        tokens = sum(answer.tokens for answer in answers)
        rows.append(
            f"| {size} | {seconds:.1f} | {tokens / seconds:.1f} | "
            f"{sum(a == b for a, b in zip(texts, first, strict=True))}/{len(texts)} | "
            f"{passed}/{len(tasks)} |"
        )
        print(rows[-1], flush=True)
    lines = [
        f"{config.engine.kind} engine, {config.engine.model}, greedy, max_tokens "
        f"{config.engine.max_tokens}, {len(tasks)} held-out tasks (inference recipe "
        f"{recipe.PROMPT_VERSION}), one warm-up call per size.",
        "",
        f"| batch size | seconds | useful tokens/s | answers equal to batch {sizes[0]}'s | pass@1 |",
        "|---|---|---|---|---|",
        *rows,
    ]
    print("\n".join(lines))
    record(f"{config.engine.kind} batch size on {args.preset} prompts (bench/batch_size.py)", lines)


if __name__ == "__main__":
    main()
