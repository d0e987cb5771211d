"""Generation fanned out over Ray actors: N copies of an engine, one shard of requests each.

Each actor holds one engine built from the session's engine config (hf or llamacpp
on CPUs, vllm on a GPU each: `cluster.engine_gpus`). `generate` splits the
requests into contiguous shards, one per actor, and puts the answers back in
order. Per-request seeds travel with their request, so a sample is the same
whichever actor draws it, and greedy answers are those of a single engine.
Adapters travel as bytes (config and weights), written once per node under the
node's temp folder by sha256, so the nodes need no shared filesystem. An actor
that dies fails the call with an `EngineError`; the phase that asked is resumable.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from codeloop.config import EngineConfig
from codeloop.engines.base import ADAPTER_FILES, Completion, Conversation, adapter_sha256, seeds_for
from codeloop.errors import EngineError


class _EngineActor:
    """Runs on a cluster node: one engine, adapters cached on the node by sha256."""

    def __init__(self, config: dict[str, Any]) -> None:
        from codeloop.engines import create

        self.engine = create(EngineConfig.model_validate(config))

    def load_adapter(self, sha256: str | None, files: dict[str, bytes] | None) -> None:
        if sha256 is None or files is None:
            self.engine.load_adapter(None)
            return
        folder = Path(tempfile.gettempdir()) / "codeloop-ray-adapters" / sha256
        if not all((folder / name).is_file() for name in ADAPTER_FILES):
            folder.mkdir(parents=True, exist_ok=True)
            for name, data in files.items():
                (folder / name).write_bytes(data)
        self.engine.load_adapter(folder)

    def generate(self, conversations: list[Conversation], **options: Any) -> list[list[dict]]:
        answers = self.engine.generate(conversations, **options)
        return [[completion.model_dump() for completion in group] for group in answers]

    def info(self) -> dict[str, Any]:
        return self.engine.info()


class RayEngine:
    """The `Engine` protocol over `replicas` actors of the configured engine."""

    def __init__(
        self,
        config: EngineConfig,
        *,
        address: str,
        replicas: int,
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
    ) -> None:
        from codeloop.sandbox.cluster import _ray

        if replicas < 1:
            raise EngineError(f"cluster.engine_replicas = {replicas}: needs at least 1")
        self.ray = _ray(address)
        actor = self.ray.remote(num_cpus=num_cpus, num_gpus=num_gpus)(_EngineActor)
        self.config = config
        self.actors = [actor.remote(config.model_dump(mode="json")) for _ in range(replicas)]
        self.adapter_hash: str | None = None

    def _get(self, futures: list[Any]) -> list[Any]:
        try:
            return self.ray.get(futures)
        except Exception as error:  # an actor died or raised: the phase stops, resumable
            raise EngineError(f"a Ray engine actor failed: {error}") from error

    def load_adapter(self, path: str | Path | None) -> None:
        if path is None:
            self._get([a.load_adapter.remote(None, None) for a in self.actors])
            self.adapter_hash = None
            return
        folder = Path(path)
        if not (folder / "adapter_config.json").exists():
            raise EngineError(f"{folder}: not a PEFT adapter folder (no adapter_config.json)")
        sha256 = adapter_sha256(folder)
        files = self.ray.put({name: (folder / name).read_bytes() for name in ADAPTER_FILES})
        self._get([a.load_adapter.remote(sha256, files) for a in self.actors])
        self.adapter_hash = sha256

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
        seeds = seeds_for(conversations, seed)
        size = -(-len(conversations) // len(self.actors)) if conversations else 0
        futures = []
        for index, actor in enumerate(self.actors):
            part = slice(index * size, (index + 1) * size)
            if not conversations[part]:
                continue
            futures.append(
                actor.generate.remote(
                    conversations[part],
                    max_tokens=max_tokens,
                    temperature=temperature,
                    seed=seeds[part],
                    n=n,
                    keys=None if keys is None else keys[part],
                )
            )
        return [
            [Completion.model_validate(item) for item in group]
            for shard in self._get(futures)
            for group in shard
        ]

    def info(self) -> dict[str, Any]:
        [info] = self._get([self.actors[0].info.remote()])
        return {**info, "replicas": len(self.actors)}

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []
