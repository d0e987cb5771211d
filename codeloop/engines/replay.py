"""The replay engine: answers from a JSONL of saved generations, keyed by task id and attempt.

It re-verifies saved generations with today's sandbox, and makes the loop's tests
deterministic without a model. Lines are `{"task_id", "attempt", "answer"}`,
where attempt is `greedy`, `correction` or `sample-N`. A request with no saved
answer is an error naming its key, never an invented empty answer. (The loop's
call log, which proves a resumed run never asks again, is kept by the collector
for every engine: `loop/collect.py`, CODELOOP_CALL_LOG.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codeloop.config import EngineConfig
from codeloop.engines.base import Completion, Conversation
from codeloop.errors import EngineError
from codeloop.store import sha256_file


class ReplayEngine:
    def __init__(self, config: EngineConfig) -> None:
        assert config.replay_path is not None
        self.path = Path(config.replay_path)
        self.config = config
        self._answers: dict[str, str] | None = None
        self.adapter_hash: str | None = None

    def _load(self) -> dict[str, str]:
        if self._answers is None:
            answers: dict[str, str] = {}
            try:
                lines = self.path.read_text(encoding="utf-8").splitlines()
            except FileNotFoundError:
                raise EngineError(f"{self.path}: replay file not found") from None
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    answers[f"{row['task_id']}:{row['attempt']}"] = row["answer"]
                except (ValueError, KeyError, TypeError):
                    raise EngineError(
                        f'{self.path}: line {number} is not {{"task_id", "attempt", "answer"}}'
                    ) from None
            self._answers = answers
        return self._answers

    def generate(
        self,
        conversations: list[Conversation],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        seed: int | list[int] = 0,
        n: int = 1,
        keys: list[str] | None = None,
    ) -> list[list[Completion]]:
        if keys is None or len(keys) != len(conversations) or n != 1:
            raise EngineError("the replay engine needs one key per conversation and n=1")
        answers = self._load()
        missing = [key for key in keys if key not in answers]
        if missing:
            raise EngineError(f"{self.path}: no saved answer for {', '.join(missing[:5])}")
        return [[Completion(text=answers[key], tokens=len(answers[key].split()))] for key in keys]

    def load_adapter(self, path: str | Path | None) -> None:
        """Saved answers do not depend on an adapter; the binding still records it."""
        from codeloop.engines.base import adapter_sha256

        self.adapter_hash = adapter_sha256(path) if path is not None else None

    def info(self) -> dict[str, Any]:
        revision = sha256_file(self.path)[:16] if self.path.exists() else None
        return {
            "engine": "replay",
            "model": str(self.path),
            "revision": revision,
            "precision": "n/a",
            "adapter_sha256": self.adapter_hash,
        }

    def close(self) -> None:
        self._answers = None
