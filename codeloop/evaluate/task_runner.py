"""`codeloop eval` on a task suite: answers from a model or a file, scored, pass@k, bound.

The answers come either from an engine (the model asks through the inference
recipe, the same conversation a round uses: greedy when n = 1 at temperature 0,
else n seeded samples per task with the loop's sample seeds) or from a samples
file of `{"task_id", "answer"}` lines (several lines per task for n > 1). Every
answer is scored by `evaluate.tasks`, the code a round's baseline, candidate and
audit use, so `codeloop eval` and an audit agree on the same answers.

Writes DIR/results.jsonl (one line per answer) and DIR/summary.json: per language
pass@1 and the unbiased pass@k for every k in 1, 2, 5, 10, ... up to n (Chen et al.,
2021), macro pass@1, statuses, and a binding (tasks, answers or engine and adapter,
prompt, temperature, n, seed, toolchains, limits) for comparing two runs. With
`weak`, also `weak_tasks`: the tasks a trivial program passes (`evaluate.weak`;
null when not checked). `task_errors` lists the tasks whose own test gave no
verdict (`Check.task_error`): their answers count as not passed, with status
`environment_error`, and are no failure of the model's.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop import __version__, recipe, store
from codeloop.config import EngineConfig, SandboxConfig
from codeloop.engines.base import adapter_sha256
from codeloop.errors import ConfigError
from codeloop.evaluate import tasks as scoring
from codeloop.evaluate import weak as weakness
from codeloop.sandbox import Check
from codeloop.sandbox.languages import toolchain_version
from codeloop.tasks.schema import Task

PASS_AT = (1, 2, 5, 10, 20, 50, 100)


@dataclass
class Answers:
    """n answers per task id, and what they are bound to."""

    texts: dict[str, list[str]]
    binding: dict[str, Any]


def read_answers(path: Path, tasks: list[Task]) -> Answers:
    """A samples file of `{"task_id", "answer"}` lines; every task needs the same count."""
    if not path.is_file():
        raise ConfigError(f"--samples {path}: file not found")
    known = {task.id for task in tasks}
    texts: dict[str, list[str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as error:
            raise ConfigError(f"{path}:{number}: not JSON ({error})") from None
        if not isinstance(row, dict) or not isinstance(row.get("task_id"), str):
            raise ConfigError(f"{path}:{number}: needs a string field task_id")
        if not isinstance(row.get("answer"), str):
            raise ConfigError(
                f'{path}:{number}: needs a string field "answer" (the model\'s reply, with '
                "its code block)"
            )
        if row["task_id"] not in known:
            raise ConfigError(f"{path}:{number}: task_id {row['task_id']!r} is not in the suite")
        texts.setdefault(row["task_id"], []).append(row["answer"])
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
    return Answers(texts, {"path": str(path.resolve()), "sha256": store.sha256_file(path)})


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
                    seed=[
                        scoring.sample_seed(seed, task.id, index) if n > 1 else 0 for task in chunk
                    ],
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


def _pass_at(flags: dict[str, list[bool]]) -> dict[str, float]:
    n = min((len(f) for f in flags.values()), default=0)
    found: dict[str, float] = {}
    for k in PASS_AT:
        if k > n or not flags:
            break
        rates = [scoring.pass_at_k(len(f), sum(f), k) for f in flags.values()]
        found[f"pass@{k}"] = round(sum(rates) / len(rates), 6)
    return found


def score(
    suite: str,
    tasks: list[Task],
    answers: Answers,
    out: Path,
    sandbox: SandboxConfig,
    *,
    on_done: Callable[[int, Check], None] | None = None,
    weak: bool = False,
) -> dict[str, Any]:
    """Check every answer, write DIR/results.jsonl and DIR/summary.json, return the summary.

    With `weak`, the tasks' trivial programs are checked too (one more batch) and the
    tasks one passes are listed in `weak_tasks`.
    """
    items = [(task, text) for task in tasks for text in answers.texts[task.id]]
    started = time.monotonic()
    checks = scoring.check_answers(items, sandbox, on_done=on_done)
    wall_s = time.monotonic() - started
    weak_found = weakness.weak_tasks([(t.id, t) for t in tasks], sandbox) if weak else None
    erred = [task.id for (task, _), c in zip(items, checks, strict=True) if c.task_error]
    task_errors = list(dict.fromkeys(erred))
    results, flags = [], {}
    sample_index: Counter[str] = Counter()
    for (task, text), check in zip(items, checks, strict=True):
        results.append(
            {
                "task_id": task.id,
                "language": task.language,
                "family": task.family,
                "sample": sample_index[task.id],
                "passed": check.passed,
                "status": check.status,
                "feedback": check.feedback,
                "answer": text,
            }
        )
        sample_index[task.id] += 1
        flags.setdefault(task.language, {}).setdefault(task.id, []).append(check.passed)
    languages = [lang for lang in dict.fromkeys(task.language for task in tasks)]
    by_language = {}
    for language in languages:
        rows = [row for row in results if row["language"] == language]
        by_language[language] = {
            "tasks": len(flags[language]),
            "answers": len(rows),
            "passed": sum(row["passed"] for row in rows),
            **_pass_at(flags[language]),
            "statuses": dict(Counter(row["status"] for row in rows)),
        }
    macro = [entry["pass@1"] for entry in by_language.values()]
    every_task = {tid: f for per in flags.values() for tid, f in per.items()}
    summary = {
        "suite": suite,
        "tasks": len(tasks),
        "total": len(results),
        "passed": sum(row["passed"] for row in results),
        "languages": by_language,
        "pooled": _pass_at(every_task),
        "macro_pass_at_1": round(sum(macro) / len(macro), 6) if macro else 0.0,
        "wall_s": round(wall_s, 2),
        "weak_tasks": None if weak_found is None else list(weak_found),
        "weak_task_programs": weak_found,
        "task_errors": task_errors,
        "binding": {
            "suite": suite,
            "tasks_sha256": store.sha256_json([task.to_json() for task in tasks]),
            "answers": answers.binding,
            "toolchains": {language: toolchain_version(language) for language in languages},
            "limits": sandbox.limits.model_dump(mode="json"),
            "backend": sandbox.backend,
            "codeloop": __version__,
        },
    }
    out.mkdir(parents=True, exist_ok=True)
    store.write_text(
        out / "results.jsonl",
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in results),
    )
    store.write_json(out / "summary.json", summary)
    return summary
