"""The engine protocol every inference backend implements.

The loop only ever calls `generate`, `load_adapter` and `info`, so the same round
runs on a laptop (hf, llamacpp), one GPU (vllm) or any serving stack (openai).
Seeds are per request: a conversation's samples depend on its own seed only,
never on what else shares its batch, so a resumed run repeats an uninterrupted one.

This module holds only the protocol and the helpers the engines share; the factory
that builds an engine from config is `codeloop.engines.create` (the package), so the
engine modules import this one and never the other way round.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from codeloop.errors import IntegrityError
from codeloop.store import sha256_file, sha256_json

Conversation = list[dict[str, str]]


class Completion(BaseModel):
    """One generated answer."""

    text: str
    tokens: int = 0
    """Generated tokens up to the answer's end (padding and stop overrun not counted)."""
    finish_reason: str = "stop"
    """stop (end of text or of the code block), length (max_tokens), or error."""


@runtime_checkable
class Engine(Protocol):
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
        """`n` completions per conversation, in order.

        `keys` name each request (task id and attempt); only the replay engine,
        which answers from saved generations, needs them.
        """
        ...

    def load_adapter(self, path: str | Path | None) -> None:
        """Switch to the LoRA adapter in `path`, or back to the base model with None."""
        ...

    def info(self) -> dict[str, Any]:
        """engine, model, revision, precision, adapter sha256: recorded in every binding."""
        ...

    def close(self) -> None: ...


def request_seed(seed: int, index: int) -> int:
    """The seed of sample `index` of a request seeded `seed` (stable, 31-bit)."""
    digest = hashlib.sha256(f"{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def seeds_for(conversations: list[Conversation], seed: int | list[int]) -> list[int]:
    if isinstance(seed, int):
        return [seed] * len(conversations)
    if len(seed) != len(conversations):
        raise ValueError(f"{len(seed)} seeds for {len(conversations)} conversations")
    return list(seed)


ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


def expand(
    conversations: list[Conversation], seed: int | list[int], n: int
) -> list[tuple[Conversation, int]]:
    """One (conversation, sample seed) per completion wanted, request by request."""
    seeds = seeds_for(conversations, seed)
    return [
        (c, request_seed(s, i)) for c, s in zip(conversations, seeds, strict=True) for i in range(n)
    ]


def regroup(flat: list[Completion], n: int) -> list[list[Completion]]:
    """The flat completions of `expand`'s order, back as n per conversation."""
    return [flat[start : start + n] for start in range(0, len(flat), n)]


def adapter_sha256(path: str | Path | None) -> str | None:
    """sha256 of an adapter's weights and config (None for the base model).

    Only these two files define what the adapter computes; reports written next to
    them (training.json with its timings) do not change its identity.
    """
    if path is None:
        return None
    folder = Path(path)
    missing = [name for name in ADAPTER_FILES if not (folder / name).is_file()]
    if missing:
        raise IntegrityError(f"{folder}: not a complete adapter (missing {', '.join(missing)})")
    config = json.loads((folder / "adapter_config.json").read_text())
    if isinstance(config.get("target_modules"), list):
        # PEFT writes a set here in hash order, which changes from process to process.
        config["target_modules"] = sorted(config["target_modules"])
    weights = sha256_file(folder / "adapter_model.safetensors")
    return sha256_json({"adapter_config.json": config, "adapter_model.safetensors": weights})
