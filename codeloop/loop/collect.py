"""Asking the model and checking its answers: collect, baseline, candidate and the audits.

Per task: a greedy answer; in collect, if it fails the hidden tests and also the
public examples, one correction turn that shows only the public feedback (when
`round.correction` is on); then `round.samples` seeded samples (seed from the config
seed, task id and sample index) for every task, solved or not: as in rejection
sampling fine-tuning, each distinct verified program of a task is a training row,
and a small model's first positives are rare. Every model answer is saved to
`PHASE-attempt.json` before it is checked, so a restart never asks the model again
for an answer it already has; beside it, `PHASE.generation.json` records the conditions
they were generated under (engine, versions, weights, seed, sampling settings, threads)
and each engine call's keys (`loop/conditions.py`), so `verify --regenerate` can ask
again exactly.
Rows are bound to the tasks and the adapter they came from; a restart against other
tasks or other weights is refused.

An `environment_error` (the machine could not check a program) is never a failed
answer: it stops the phase with the sandbox's message, and the answers saved so far
are kept for the next run.

Tasks go in chunks of `engine.batch_size`, so that the engine can batch them and
the sandbox can check a chunk in parallel; all of a chunk's samples go to the engine in
one call, which keeps its batch full (`Collector._ask`).

With CODELOOP_CALL_LOG set to a file, every answer asked of the engine (whatever its
kind) is appended to it as an `ADAPTER_SHA256:TASK_ID:ATTEMPT` line (`none` for the
base model) before the engine is called, so the chaos test and bench can prove
that a resumed run never asks the model again for an answer it had saved.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeloop import clock, recipe, store
from codeloop.engines import Engine, create_for
from codeloop.engines.base import adapter_sha256
from codeloop.errors import IntegrityError
from codeloop.evaluate import scoring
from codeloop.evaluate.scoring import program_of, sample_seed, summary
from codeloop.loop import conditions
from codeloop.loop.answer_cache import AnswerCache, answer_key, engine_key
from codeloop.loop.common import Paused, Round, failpoint
from codeloop.sandbox import Check, CheckRequest, Interrupted
from codeloop.tasks.schema import Task

CALL_LOG_ENV = "CODELOOP_CALL_LOG"


def _log_calls(adapter: str | None, keys: list[str]) -> None:
    """Append the answers about to be asked of the engine to $CODELOOP_CALL_LOG."""
    log = os.environ.get(CALL_LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write("".join(f"{adapter or 'none'}:{key}\n" for key in keys))


def request(task: Task, program: str, r: Round, public: bool = False) -> CheckRequest:
    """The sandbox check of `program` against the task's hidden (or public) tests."""
    return scoring.request(task, program, r.config.sandbox, public)


def check_answers(r: Round, items: list[tuple[Task, str]], public: bool = False) -> list[Check]:
    """Check (task, answer) pairs through the evaluator; a stop request pauses the round."""
    try:
        return scoring.check_answers(items, r.config.sandbox, public=public, stop=r.stop_requested)
    except Interrupted:
        raise Paused(
            f"round {r.number}: paused during a sandbox batch; run again to continue"
        ) from None


def probe_languages(r: Round, languages: list[str]) -> dict[str, Check]:
    """The known-good probe of each language (see `evaluate.scoring.probe_languages`)."""
    return scoring.probe_languages(r.config.sandbox, languages)


def normalised(program: str) -> str:
    """A program with trailing spaces and blank edges removed: what makes two answers 'the same'."""
    return "\n".join(line.rstrip() for line in program.strip("\n").splitlines()) + "\n"


def _no_seed(task: Task, attempt: str) -> int:
    """Greedy answers and corrections: no sampling, so no seed."""
    return 0


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
        self.generation_file = conditions.path_for(self.attempt_file)
        self._engine: Engine | None = None
        self.conditions: dict[str, Any] = {}
        """What the engine generates under (`loop/conditions.py`), once it is started."""
        self.generation: dict[str, Any] = conditions.empty()
        """The record of the conditions and of each engine call (`generation_file`)."""
        self.cache = AnswerCache(r.session.answers)
        self.reused: list[str] = []
        """`task:attempt` of the answers taken from the session's answer cache, not the model."""
        self.asker = f"{r.folder.name}/{phase}"
        """Who asks, as the answer cache records it (this round's phase)."""

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
            with clock.timed("load"):
                self._engine = create_for(self.r.config)
                self._engine.load_adapter(self.adapter)
                self.conditions = conditions.observe(self._engine, self.r.config)
        return self._engine

    def _ask(
        self,
        attempts: dict[str, dict[str, str]],
        wanted: list[tuple[Task, str]],
        conversation: Callable[[Task], list[dict[str, str]]],
        temperature: float,
        seed: Callable[[Task, str], int],
    ) -> None:
        """Generate the missing `attempt` answers of `wanted` in one engine call; save them
        before any check.

        One call for all of a chunk's samples, not one per sample index: the engine keeps
        its `batch_size` sequences busy, a waiting request taking the place of one that
        finished, where a call of `batch_size` requests decodes its last, longest answers
        with the batch nearly empty (docs/PERFORMANCE.md, "Where a round's time goes").
        Every answer's seed is its own (`seed(task, attempt)`), so which call asked it
        does not change it."""
        missing = [(t, a) for t, a in wanted if a not in attempts.get(t.id, {})]
        if not missing:
            return
        adapter = self.binding()["adapter_sha256"]
        engine = engine_key(self.r.config.engine)
        keys = [
            answer_key(engine, adapter, conversation(task), temperature, seed(task, attempt))
            for task, attempt in missing
        ]
        known = {key: text for key in keys if (text := self.cache.get(key)) is not None}
        ask = [(item, key) for item, key in zip(missing, keys, strict=True) if key not in known]
        fresh: dict[str, str] = {}
        if ask:
            self.r.check_stop()
            asked = [f"{task.id}:{attempt}" for (task, attempt), _key in ask]
            _log_calls(adapter, asked)
            engine = self.engine  # started (and timed as "load") before the clock below
            with clock.timed("generate"):
                results = engine.generate(
                    [conversation(task) for (task, _a), _key in ask],
                    max_tokens=self.r.config.engine.max_tokens,
                    temperature=temperature,
                    seed=[seed(task, attempt) for (task, attempt), _key in ask],
                    keys=asked,
                )
            conditions.record_call(self.generation, self.conditions, temperature, asked)
            store.write_json(self.generation_file, self.generation)
            fresh = {
                key: completion.text for (_i, key), [completion] in zip(ask, results, strict=True)
            }
            self.cache.add(fresh, by=self.asker)
            failpoint("answers-cached")  # cached, not yet in this phase's attempt file
            known.update(fresh)
        for (task, attempt), key in zip(missing, keys, strict=True):
            attempts.setdefault(task.id, {})[attempt] = known[key]
            if key not in fresh and self.cache.asked_by(key) != self.asker:
                # (this phase's own answer, saved before a kill, is not a reused one)
                self.reused.append(f"{task.id}:{attempt}")
        store.write_json(
            self.attempt_file,
            {"binding": self.binding(), "attempts": attempts, "reused": self.reused},
        )

    def _chunk(self, chunk: list[Task], attempts: dict[str, dict[str, str]]) -> list[dict]:
        cfg = self.r.config
        self._ask(attempts, [(t, "greedy") for t in chunk], recipe.messages, 0.0, _no_seed)
        greedy = dict(
            zip(
                [t.id for t in chunk],
                check_answers(self.r, [(t, attempts[t.id]["greedy"]) for t in chunk]),
                strict=True,
            )
        )
        checked: dict[str, list[tuple[str, Check]]] = {
            t.id: [("greedy", greedy[t.id])] for t in chunk
        }
        if self.explore and cfg.round.correction:
            failing = [t for t in chunk if not greedy[t.id].passed and self._has_public(t)]
            public = dict(
                zip(
                    [t.id for t in failing],
                    check_answers(
                        self.r, [(t, attempts[t.id]["greedy"]) for t in failing], public=True
                    ),
                    strict=True,
                )
            )
            fix = [t for t in failing if not public[t.id].passed]
            self._ask(
                attempts,
                [(t, "correction") for t in fix],
                lambda t: recipe.correction(t, attempts[t.id]["greedy"], public[t.id].feedback),
                0.0,
                _no_seed,
            )
            self._check_attempts(fix, ["correction"], attempts, checked)
        keys = [f"sample-{index}" for index in range(cfg.round.samples if self.explore else 0)]
        if keys:
            self._ask(
                attempts,
                [(t, key) for key in keys for t in chunk],
                recipe.messages,
                cfg.round.sample_temperature,
                lambda t, key: sample_seed(cfg.seed, t.id, int(key.removeprefix("sample-"))),
            )
            self._check_attempts(chunk, keys, attempts, checked)
        return [self._row(task, attempts[task.id], checked[task.id]) for task in chunk]

    def _check_attempts(
        self,
        tasks: list[Task],
        keys: list[str],
        attempts: dict[str, dict[str, str]],
        checked: dict[str, list[tuple[str, Check]]],
    ) -> None:
        """Check the `keys` answers of every task in one sandbox batch; each task's
        verdicts are appended in the order of `keys`."""
        pairs = [(task, key) for key in keys for task in tasks]
        results = check_answers(self.r, [(task, attempts[task.id][key]) for task, key in pairs])
        for (task, key), check in zip(pairs, results, strict=True):
            checked[task.id].append((key, check))

    @staticmethod
    def _row(task: Task, tried: dict[str, str], checks: list[tuple[str, Check]]) -> dict:
        """One task's row: the greedy verdict, the first passing answer, every distinct pass.

        `verified` lists each distinct passing program once (first attempt that wrote
        it), with its sha256: export trains on exactly these programs after checking
        them again.
        """
        passing = [(key, check) for key, check in checks if check.passed]
        shown_key, shown = passing[0] if passing else checks[-1]
        verified: list[dict[str, str]] = []
        seen: set[str] = set()
        for key, _check in passing:
            program = program_of(task, tried[key])
            assert program is not None  # a passing answer had a program
            text = normalised(program)
            if text not in seen:
                seen.add(text)
                verified.append(
                    {
                        "attempt": key,
                        "program": program,
                        "sha256": store.sha256_bytes(program.encode()),
                    }
                )
        return {
            "id": task.id,
            "language": task.language,
            "family": task.family,
            "split": task.split,
            "passed": shown.passed,
            "greedy_passed": checks[0][1].passed,
            "status": shown.status,
            "answer": tried[shown_key],
            "program": program_of(task, tried[shown_key]),
            "feedback": shown.feedback,
            "corrected": "correction" in tried,
            "sampled": sum(key.startswith("sample-") for key in tried),
            "verified": verified,
        }

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
        self.reused = attempts_saved.get("reused", [])
        self.generation = store.read(self.generation_file, None) or conditions.empty()
        size = self.r.config.engine.batch_size
        try:
            while len(saved["rows"]) < len(self.tasks):
                done = len(saved["rows"])
                self._beat(saved["rows"], language=self.tasks[done].language)
                saved["rows"] += self._chunk(self.tasks[done : done + size], attempts)
                store.write_json(self.rows_file, saved)
            if not self.rows_file.exists():  # no task to answer (an audit with no suites)
                store.write_json(self.rows_file, saved)
        finally:
            if self._engine is not None:
                self._engine.close()
        self._beat(saved["rows"])
        return {
            **summary(saved["rows"], saved["binding"]),
            "rows_sha256": store.sha256_file(self.rows_file),
            "answers_reused": len(self.reused),
        }

    def _beat(self, rows: list[dict], **extra: Any) -> None:
        """Heartbeat with the tasks checked and passed so far per language (for the display)."""
        seen: dict[str, int] = {}
        passed: dict[str, int] = {}
        for row in rows:
            seen[row["language"]] = seen.get(row["language"], 0) + 1
            passed[row["language"]] = passed.get(row["language"], 0) + int(row["passed"])
        self.r.progress(self.phase, len(rows), len(self.tasks), seen=seen, passed=passed, **extra)
