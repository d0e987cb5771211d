"""The replay engine: answers from a JSONL of saved generations, keyed by task id and attempt.

It re-verifies saved generations with today's sandbox, and makes the loop's tests
deterministic without a model. Lines are `{"task_id", "attempt", "answer"}`,
where attempt is `greedy`, `correction` or `sample-N`. A request with no saved
answer is an error naming its key, never an invented empty answer.

With CODELOOP_REPLAY_CALL_LOG set to a file, every call is appended to it as
`ADAPTER_SHA256:KEY` lines (`none` for the base model; written before the answers
are returned), so a test can prove that a resumed run never asks the model again
for an answer it had already saved.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from codeloop.config import EngineConfig
from codeloop.engines.base import Completion, Conversation
from codeloop.errors import EngineError
from codeloop.store import sha256_file

CALL_LOG_ENV = "CODELOOP_REPLAY_CALL_LOG"


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
        log = os.environ.get(CALL_LOG_ENV)
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                adapter = self.adapter_hash or "none"
                handle.write("".join(f"{adapter}:{key}\n" for key in keys))
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
