"""The session's answers, keyed by everything that decides them, so no round asks twice.

Each round's baseline asks the parent for greedy answers to the fixed development
set, and its audit-parent asks the parent for the audit suite: the same questions
the previous round already put to the same weights (its candidate, if accepted, or
its own parent). Greedy decoding and seeded sampling make an answer a function of
the model, the adapter's weights, the conversation, the temperature, the seed and
the engine settings; `answers.jsonl` maps the sha256 of exactly those to the text,
so a later phase reuses the answer instead of spending minutes on the same tokens.
The engine's batch size is left out of the key: it changes which neighbours share
a batch, never which model answers.

Entries are appended before the phase saves its own attempt file, so a kill
between the two loses nothing; a line cut short by a kill is dropped on the next
read. Each entry names the phase that asked for it ("by"), so that phase, resumed
after such a kill, takes its own answers back as its own, not as reused ones: its
record is then the same as an uninterrupted run's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from codeloop import store
from codeloop.config import EngineConfig


def engine_key(engine: EngineConfig) -> dict[str, Any]:
    """The engine settings that decide an answer (not how answers are batched)."""
    return engine.model_dump(mode="json", exclude={"batch_size"})


def answer_key(
    engine: dict[str, Any],
    adapter_sha256: str | None,
    conversation: list[dict[str, str]],
    temperature: float,
    seed: int,
) -> str:
    return store.sha256_json(
        {
            "engine": engine,
            "adapter_sha256": adapter_sha256,
            "conversation": conversation,
            "temperature": temperature,
            "seed": seed if temperature > 0 else 0,
        }
    )


class AnswerCache:
    """answers.jsonl of a session: one {"key", "text", "by"} object per line, append-only."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._answers: dict[str, str] | None = None
        self._by: dict[str, str] = {}

    def _load(self) -> dict[str, str]:
        if self._answers is None:
            self._answers = {}
            if self.path.exists():
                data = self.path.read_bytes()
                whole = data[: data.rfind(b"\n") + 1]
                if len(whole) != len(data):  # a line cut short by a kill
                    with self.path.open("r+b") as handle:
                        handle.truncate(len(whole))
                for line in whole.decode().splitlines():
                    entry = json.loads(line)
                    self._answers[entry["key"]] = entry["text"]
                    if isinstance(entry.get("by"), str):
                        self._by[entry["key"]] = entry["by"]
        return self._answers

    def get(self, key: str) -> str | None:
        return self._load().get(key)

    def asked_by(self, key: str) -> str | None:
        """The phase that asked for this answer (None: unknown, or not in the cache)."""
        self._load()
        return self._by.get(key)

    def add(self, entries: dict[str, str], by: str | None = None) -> None:
        """Append new answers and make them durable before the caller saves its own file."""
        answers = self._load()
        fresh = {key: text for key, text in entries.items() if key not in answers}
        if not fresh:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            for key, text in fresh.items():
                entry = {"key": key, "text": text} | ({"by": by} if by else {})
                handle.write(json.dumps(entry) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        answers.update(fresh)
        if by:
            self._by.update(dict.fromkeys(fresh, by))
