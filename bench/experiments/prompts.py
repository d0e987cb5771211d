"""Which prompt makes the bundled model write stdin programs: variants side by side.

On the curriculum's tier-1 DEV families (never trained on), greedy, per language:
  v1          the previous recipe (title, "Write a complete ... program" paragraph,
              public examples, a one-line system prompt), rebuilt here for comparison;
  v2          codeloop's recipe: contract in the system turn, one worked example turn
              in the task's language, the bare problem sentence;
  v2+public   v2 with the task's public examples under the statement;
and, on v2's failures, whether one correction turn with the public examples'
feedback fixes them. Every answer is checked in the sandbox against the hidden
cases. Appends a table to bench/RESULTS.md.

    .venv/bin/python -m bench.experiments.prompts [--variants 2] [--languages python,javascript]
"""

from __future__ import annotations

import argparse
import time

from bench.results import record
from bench.shared import check, dev_tasks
from codeloop import recipe
from codeloop.config import EngineConfig, load_preset
from codeloop.engines import create

V1_SYSTEM = (
    "You are a careful programmer. Answer with one complete program in a single fenced "
    "code block, and nothing else."
)
V1_LINES = {
    "python": "Write a complete Python 3 program.",
    "javascript": "Write a complete JavaScript program for Node.js.",
    "typescript": "Write a complete TypeScript program for Node.js.",
    "c": "Write a complete C program with a main function.",
    "cpp": "Write a complete C++ program with a main function.",
    "java": "Write a complete Java program whose public class is named Main.",
    "rust": "Write a complete Rust program with a main function, using only the standard library.",
    "go": "Write a complete Go program in package main, using only the standard library.",
}


def _examples(task) -> str:
    parts = [
        f"Example {n}\nInput:\n```\n{c.input.rstrip()}\n```\nOutput:\n```\n{c.output.rstrip()}\n```"
        for n, c in enumerate(task.public_cases, 1)
    ]
    return "\n\n".join(parts)


def v1(task, title: str) -> list[dict[str, str]]:
    tag = recipe.FENCE_TAGS[task.language]
    user = (
        f"{title}\n\n{task.statement}\n\n{V1_LINES[task.language]} It reads standard input "
        "and writes standard output. Do not print prompts or any other text.\n\n"
        f"{_examples(task)}\n\nAnswer with the whole program in one ```{tag} code block."
    )
    return [{"role": "system", "content": V1_SYSTEM}, {"role": "user", "content": user}]


def v2(task, _title: str) -> list[dict[str, str]]:
    return recipe.messages(task)


def v2_public(task, _title: str) -> list[dict[str, str]]:
    turns = recipe.messages(task)
    turns[-1] = {**turns[-1], "content": f"{turns[-1]['content']}\n\n{_examples(task)}"}
    return turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=2, help="variants per dev family")
    parser.add_argument("--languages", default=",".join(recipe.FENCE_TAGS))
    parser.add_argument("--engine", default="hf")
    args = parser.parse_args()
    preset = load_preset("cpu-demo")
    languages = args.languages.split(",")
    pairs = dev_tasks(languages, args.variants, preset.tasks.salt, preset.tasks.splits)
    tasks = [task for task, _ in pairs]
    engine = create(
        EngineConfig(kind=args.engine, precision="float32", max_tokens=384, batch_size=8)
    )
    table: dict[str, dict[str, list[int]]] = {}
    timings = {}
    fixes = [0, 0]
    for name, build in (("v1", v1), ("v2", v2), ("v2+public", v2_public)):
        started = time.monotonic()
        conversations = [build(task, title) for task, title in pairs]
        answers = [c[0].text for c in engine.generate(conversations, max_tokens=384)]
        verdicts = check(tasks, answers)
        timings[name] = time.monotonic() - started
        solved = sum(not isinstance(v, str) and v.passed for v in verdicts)
        print(f"{name}: {solved}/{len(tasks)} in {timings[name]:.0f} s", flush=True)
        for task, verdict in zip(tasks, verdicts, strict=True):
            cell = table.setdefault(name, {}).setdefault(task.language, [0, 0])
            cell[0] += int(not isinstance(verdict, str) and verdict.passed)
            cell[1] += 1
        if name == "v2":
            failing = [
                i
                for i, v in enumerate(verdicts)
                if (isinstance(v, str) or not v.passed) and tasks[i].public_cases
            ]
            public = check([tasks[i] for i in failing], [answers[i] for i in failing], True)
            fix_tasks, turns = [], []
            for i, verdict in zip(failing, public, strict=True):
                if isinstance(verdict, str) or verdict.passed:
                    continue
                fix_tasks.append(tasks[i])
                turns.append(recipe.correction(tasks[i], answers[i], verdict.feedback))
            fixed = [c[0].text for c in engine.generate(turns, max_tokens=384)] if turns else []
            results = check(fix_tasks, fixed)
            fixes = [sum(not isinstance(v, str) and v.passed for v in results), len(fix_tasks)]
    engine.close()
    lines = [
        f"{len(tasks)} tier-1 dev tasks ({args.variants} variants of each dev family), greedy, "
        f"engine {args.engine}, bundled SmolLM2-135M-Instruct; passed/total on hidden cases.",
        "",
        "| prompt | " + " | ".join(languages) + " | all | seconds |",
        "|---" * (len(languages) + 3) + "|",
    ]
    for name, cells in table.items():
        total = [sum(c[0] for c in cells.values()), sum(c[1] for c in cells.values())]
        lines.append(
            f"| {name} | "
            + " | ".join(f"{cells[lang][0]}/{cells[lang][1]}" for lang in languages)
            + f" | {total[0]}/{total[1]} | {timings[name]:.0f} |"
        )
    lines += [
        "",
        f"Correction turn on v2's failures (public feedback only): fixed {fixes[0]} of {fixes[1]}.",
    ]
    record("Prompt variants on tier-1 dev tasks (bench/prompts.py)", lines)


if __name__ == "__main__":
    main()
