"""Asking the model and checking its answers: collect, baseline, candidate and the audits.

Per task: a greedy answer; in collect, if it fails the hidden tests and also the
public examples, one correction turn that shows only the public feedback; then up
to `round.samples` seeded samples (seed from the config seed, task id and sample
index). Every model answer is saved to `PHASE-attempt.json` before it is checked,
so a restart never asks the model again for an answer it already has. Rows are
bound to the tasks and the adapter they came from; a restart against other tasks
or other weights is refused.

Tasks go in chunks of `engine.batch_size`, so that the engine can batch them and
the sandbox can check a chunk in parallel.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeloop import recipe, store
from codeloop.engines import Engine, create
from codeloop.engines.base import adapter_sha256
from codeloop.errors import IntegrityError
from codeloop.loop.common import Round
from codeloop.sandbox import Check, CheckRequest, check_many
from codeloop.tasks.schema import Task


def sample_seed(root_seed: int, task_id: str, index: int) -> int:
    """Seed of sample `index` of a task: stable across restarts and batches."""
    digest = hashlib.sha256(f"{root_seed}:{task_id}:sample-{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def program_of(task: Task, answer: str) -> str | None:
    """The program in an answer, or None when the answer has no usable code block."""
    try:
        return recipe.source(answer, task.language)
    except ValueError:
        return None


def request(task: Task, program: str, r: Round, public: bool = False) -> CheckRequest:
    """The sandbox check of `program` against the task's hidden (or public) tests."""
    limits = r.config.sandbox.limits
    if task.kind == "function":
        assert task.function is not None
        test = task.function.public_tests if public else task.function.tests
        return CheckRequest(language=task.language, program=program, test=test, limits=limits)
    cases = task.public_cases if public else task.cases
    return CheckRequest(
        language=task.language,
        program=program,
        checker=task.checker,
        cases=[c.model_dump() for c in cases],
        limits=limits,
    )


def check_answers(r: Round, items: list[tuple[Task, str]], public: bool = False) -> list[Check]:
    """Check (task, answer) pairs in parallel; an answer without code fails without a run."""
    results: list[Check | None] = [None] * len(items)
    requests, where = [], []
    for index, (task, answer) in enumerate(items):
        program = program_of(task, answer)
        if program is None:
            results[index] = Check(status="wrong_answer", feedback="The answer has no code block.")
        else:
            requests.append(request(task, program, r, public))
            where.append(index)
    checked = check_many(
        requests, workers=r.config.sandbox.workers, backend=r.config.sandbox.backend
    )
    for index, check in zip(where, checked, strict=True):
        results[index] = check
    return [result for result in results if result is not None]


class Collector:
    """Runs one answering phase over a list of tasks, resumably."""

    def __init__(
        self,
        r: Round,
        phase: str,
        tasks: list[Task],
        adapter: str | None,
        *,
        explore: bool,
        rows_file: Path | None = None,
    ) -> None:
        self.r, self.phase, self.tasks, self.adapter = r, phase, tasks, adapter
        self.explore = explore
        self.rows_file = rows_file or r.path(f"{phase}-rows.json")
        self.attempt_file = self.rows_file.with_name(f"{phase}-attempt.json")
        self._engine: Engine | None = None

    # -- binding -------------------------------------------------------------------------

    def binding(self) -> dict[str, Any]:
        return {
            "tasks_sha256": store.sha256_json([task.id for task in self.tasks]),
            "adapter_sha256": adapter_sha256(self.adapter),
            "prompt_sha256": recipe.prompt_sha256(),
        }

    def _saved(self) -> dict[str, Any]:
        binding = self.binding()
        saved = store.read(self.rows_file, {"binding": binding, "rows": []})
        if saved["binding"] != binding:
            changed = [key for key in binding if saved["binding"].get(key) != binding[key]]
            raise IntegrityError(
                f"{self.rows_file}: saved answers are bound to other "
                f"{' and '.join(k.removesuffix('_sha256') for k in changed)} than this run's "
                "(tasks or weights changed); delete the file to answer again"
            )
        ids = [row["id"] for row in saved["rows"]]
        if ids != [task.id for task in self.tasks[: len(ids)]]:
            raise IntegrityError(f"{self.rows_file}: saved rows do not follow the task order")
        return saved

    # -- asking --------------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = create(self.r.config.engine)
            self._engine.load_adapter(self.adapter)
        return self._engine

    def _ask(
        self,
        attempts: dict[str, dict[str, str]],
        wanted: list[tuple[Task, str]],
        conversation: Callable[[Task], list[dict[str, str]]],
        temperature: float,
        seed: Callable[[Task], int],
    ) -> None:
        """Generate the missing `attempt` answers of `wanted`; save them before any check."""
        missing = [(t, a) for t, a in wanted if a not in attempts.get(t.id, {})]
        if not missing:
            return
        self.r.check_stop()
        results = self.engine.generate(
            [conversation(task) for task, _a in missing],
            max_tokens=self.r.config.engine.max_tokens,
            temperature=temperature,
            seed=[seed(task) for task, _a in missing],
            keys=[f"{task.id}:{attempt}" for task, attempt in missing],
        )
        for (task, attempt), [completion] in zip(missing, results, strict=True):
            attempts.setdefault(task.id, {})[attempt] = completion.text
        store.write_json(self.attempt_file, {"binding": self.binding(), "attempts": attempts})

    def _chunk(self, chunk: list[Task], attempts: dict[str, dict[str, str]]) -> list[dict]:
        cfg = self.r.config
        self._ask(attempts, [(t, "greedy") for t in chunk], recipe.messages, 0.0, lambda t: 0)
        answers = {t.id: attempts[t.id]["greedy"] for t in chunk}
        checks = dict(
            zip(answers, check_answers(self.r, [(t, answers[t.id]) for t in chunk]), strict=True)
        )
        if self.explore and cfg.round.correction:
            failing = [t for t in chunk if not checks[t.id].passed and self._has_public(t)]
            public = dict(
                zip(
                    [t.id for t in failing],
                    check_answers(self.r, [(t, answers[t.id]) for t in failing], public=True),
                    strict=True,
                )
            )
            fix = [t for t in failing if not public[t.id].passed]
            self._ask(
                attempts,
                [(t, "correction") for t in fix],
                lambda t: recipe.correction(t, answers[t.id], public[t.id].feedback),
                0.0,
                lambda t: 0,
            )
            for task, check in zip(
                fix,
                check_answers(self.r, [(t, attempts[t.id]["correction"]) for t in fix]),
                strict=True,
            ):
                answers[task.id], checks[task.id] = attempts[task.id]["correction"], check
        for index in range(cfg.round.samples if self.explore else 0):
            failing = [t for t in chunk if not checks[t.id].passed]
            key = f"sample-{index}"
            self._ask(
                attempts,
                [(t, key) for t in failing],
                recipe.messages,
                cfg.round.sample_temperature,
                lambda t, i=index: sample_seed(cfg.seed, t.id, i),
            )
            for task, check in zip(
                failing,
                check_answers(self.r, [(t, attempts[t.id][key]) for t in failing]),
                strict=True,
            ):
                answers[task.id], checks[task.id] = attempts[task.id][key], check
        rows = []
        for task in chunk:
            check = checks[task.id]
            tried = attempts[task.id]
            rows.append(
                {
                    "id": task.id,
                    "language": task.language,
                    "family": task.family,
                    "split": task.split,
                    "passed": check.passed,
                    "status": check.status,
                    "answer": answers[task.id],
                    "program": program_of(task, answers[task.id]),
                    "feedback": check.feedback,
                    "corrected": "correction" in tried,
                    "sampled": sum(key.startswith("sample-") for key in tried),
                }
            )
        return rows

    @staticmethod
    def _has_public(task: Task) -> bool:
        if task.kind == "function":
            return bool(task.function and task.function.public_tests.strip())
        return bool(task.public_cases)

    def run(self) -> dict[str, Any]:
        saved = self._saved()
        attempts_saved = store.read(self.attempt_file, {"binding": self.binding(), "attempts": {}})
        if attempts_saved["binding"] != self.binding():
            raise IntegrityError(f"{self.attempt_file}: saved answers are bound to other weights")
        attempts = attempts_saved["attempts"]
        size = self.r.config.engine.batch_size
        try:
            while len(saved["rows"]) < len(self.tasks):
                done = len(saved["rows"])
                self.r.progress(
                    self.phase, done, len(self.tasks), language=self.tasks[done].language
                )
                saved["rows"] += self._chunk(self.tasks[done : done + size], attempts)
                store.write_json(self.rows_file, saved)
        finally:
            if self._engine is not None:
                self._engine.close()
        self.r.progress(self.phase, len(self.tasks), len(self.tasks))
        return summary(saved["rows"], saved["binding"])


def summary(rows: list[dict], binding: dict[str, Any]) -> dict[str, Any]:
    """Counts per language and macro pass@1 (the mean of the languages' pass rates)."""
    languages: dict[str, dict[str, int]] = {}
    for row in rows:
        entry = languages.setdefault(row["language"], {"total": 0, "passed": 0})
        entry["total"] += 1
        entry["passed"] += int(row["passed"])
    rates = [v["passed"] / v["total"] for v in languages.values() if v["total"]]
    return {
        "completed": True,
        "total": len(rows),
        "passed": sum(r["passed"] for r in rows),
        "languages": dict(sorted(languages.items())),
        "macro_pass_at_1": sum(rates) / len(rates) if rates else 0.0,
        "binding": binding,
    }
