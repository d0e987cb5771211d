"""Where the answers `codeloop eval` scores come from: a model, or a samples file.

From a model: the engine asks through the inference recipe, the same conversation
a round uses (greedy when n = 1 at temperature 0, else n seeded samples per task
with the loop's sample seeds), so an eval and a round's audit ask alike. From a
file: `{"task_id", "answer"}` lines for a suite's codeloop tasks (several per task
for n > 1), or a benchmark's official samples (`{"task_id", "generation"}` for
HumanEval-X, `{"task_id", "completion"}` for HumanEval), read by the one JSONL
reader so that every bad line is named alike. Either way the answers carry what
they are bound to (the file's sha256, or the engine, adapter, prompt, temperature,
n and seed), which summary.json records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop import recipe, store
from codeloop.config import EngineConfig
from codeloop.errors import ConfigError
from codeloop.evaluate import jsonl
from codeloop.evaluate.humaneval import Sample
from codeloop.evaluate.scoring import sample_seed
from codeloop.evaluate.suites import benchmark
from codeloop.tasks.schema import Task


@dataclass
class Answers:
    """n answers per task id, and what they are bound to."""

    texts: dict[str, list[str]]
    binding: dict[str, Any]


def file_binding(path: Path) -> dict[str, Any]:
    """What answers read from a file are bound to: the file and its bytes."""
    return {"path": str(path.resolve()), "sha256": store.sha256_file(path)}


def read_samples(path: Path, suite: str) -> list[Sample]:
    """A benchmark's samples file in its official format, in order; each bad line is named
    with what it lacks."""
    field = benchmark(suite).sample_field
    described = f'{field!r} (the official {suite} sample format is {{"task_id", "{field}"}})'
    return [
        Sample(task_id=task_id, text=text)
        for _number, task_id, text in jsonl.samples(path, field, described)
    ]


def read_answers(path: Path, tasks: list[Task]) -> Answers:
    """A samples file of `{"task_id", "answer"}` lines; every task needs the same count."""
    known = {task.id for task in tasks}
    texts: dict[str, list[str]] = {}
    described = '"answer" (the model\'s reply, with its code block)'
    for number, task_id, text in jsonl.samples(path, "answer", described):
        if task_id not in known:
            raise ConfigError(f"{path}:{number}: task_id {task_id!r} is not in the suite")
        texts.setdefault(task_id, []).append(text)
    missing = [task.id for task in tasks if task.id not in texts]
    if missing:
        raise ConfigError(
            f"--samples {path}: no answer for {len(missing)} of {len(tasks)} tasks "
            f"(first: {missing[0]})"
        )
    counts = {len(answers) for answers in texts.values()}
    if len(counts) != 1:
        raise ConfigError(
            f"--samples {path}: tasks have different numbers of answers ({sorted(counts)}); "
            "pass@k needs the same n for every task"
        )
    return Answers(texts, file_binding(path))


def generate_answers(
    tasks: list[Task],
    engine_config: EngineConfig,
    adapter: Path | None,
    *,
    n: int,
    temperature: float,
    seed: int,
    on_progress: Callable[[int], None] | None = None,
) -> Answers:
    """n answers per task from the engine, asked in engine-sized chunks."""
    from codeloop.engines import create
    from codeloop.engines.base import adapter_sha256

    if n > 1 and temperature <= 0:
        raise ConfigError("--n > 1 needs --temperature > 0 (greedy answers are all the same)")
    engine = create(engine_config)
    texts: dict[str, list[str]] = {task.id: [] for task in tasks}
    try:
        engine.load_adapter(adapter)
        size = max(1, engine_config.batch_size)
        for index in range(n):
            attempt = "greedy" if n == 1 else f"sample-{index}"
            for start in range(0, len(tasks), size):
                chunk = tasks[start : start + size]
                results = engine.generate(
                    [recipe.messages(task) for task in chunk],
                    max_tokens=engine_config.max_tokens,
                    temperature=temperature,
                    seed=[sample_seed(seed, task.id, index) if n > 1 else 0 for task in chunk],
                    keys=[f"{task.id}:{attempt}" for task in chunk],
                )
                for task, [completion] in zip(chunk, results, strict=True):
                    texts[task.id].append(completion.text)
                if on_progress is not None:
                    on_progress(len(chunk))
    finally:
        engine.close()
    binding = {
        "engine": engine_config.model_dump(mode="json", exclude={"batch_size"}),
        "adapter_sha256": adapter_sha256(adapter) if adapter else None,
        "prompt_sha256": recipe.prompt_sha256(),
        "temperature": temperature,
        "n": n,
        "seed": seed,
    }
    return Answers(texts, binding)
