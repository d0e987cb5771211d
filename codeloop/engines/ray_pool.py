"""Generation fanned out over Ray actors: N copies of an engine, one shard of requests each.

Each actor holds one engine built from the session's engine config (hf or llamacpp
on CPUs, vllm on a GPU each: `cluster.engine_gpus`). `generate` splits the
requests into contiguous shards, one per actor, and puts the answers back in
order. Per-request seeds travel with their request, so a sample is the same
whichever actor draws it, and greedy answers are those of a single engine.
Adapters travel as bytes (config and weights), written once per node under the
node's temp folder by sha256, so the nodes need no shared filesystem; the actors
of one node write them at the same moment, so each writes a private folder and
renames it into place (`place_adapter`). An actor
that dies fails the call with an `EngineError`; the phase that asked is resumable.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeloop.config import EngineConfig
from codeloop.engines.base import (
    ADAPTER_FILES,
    Completion,
    Conversation,
    Engine,
    adapter_sha256,
    seeds_for,
)
from codeloop.errors import EngineError, IntegrityError


def _holds(folder: Path, sha256: str) -> bool:
    """Whether `folder` is a complete adapter with this hash (False for half-written ones)."""
    try:
        return adapter_sha256(folder) == sha256
    except (IntegrityError, OSError, ValueError):  # missing files, a truncated config
        return False


def place_adapter(root: Path, sha256: str, files: dict[str, bytes]) -> Path:
    """`root/sha256`, holding exactly `files`, whoever else on this node places it too.

    Writing the shared folder file by file let one actor truncate the config while
    its neighbour read it (an empty adapter_config.json in CI). Here every writer
    fills its own folder, checks the hash, and renames it into place in one step;
    a reader only ever sees a folder that some writer completed and checked.
    """
    folder = root / sha256
    if _holds(folder, sha256):
        return folder
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{sha256[:16]}-", dir=root))
    try:
        for name, data in files.items():
            (staging / name).write_bytes(data)
        if adapter_sha256(staging) != sha256:
            raise EngineError(f"adapter bytes for {sha256[:12]} do not hash to it")
        for _ in range(3):
            try:
                staging.rename(folder)  # atomic; refused when the folder exists, not empty
                return folder
            except OSError:
                if _holds(folder, sha256):  # another writer placed it first
                    return folder
                # a folder left half-written (by a crash): move it aside, then retry
                stale = Path(tempfile.mkdtemp(prefix=".stale-", dir=root))
                with contextlib.suppress(OSError):  # someone else moved or replaced it
                    folder.rename(stale / "adapter")
                shutil.rmtree(stale, ignore_errors=True)
        raise EngineError(f"{folder}: could not place the adapter (it kept changing)")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


class _EngineActor:
    """Runs on a cluster node: one engine, adapters cached on the node by sha256."""

    def __init__(self, config: dict[str, Any], make: Callable[[EngineConfig], Engine]) -> None:
        self.engine = make(EngineConfig.model_validate(config))

    def load_adapter(self, sha256: str | None, files: dict[str, bytes] | None) -> None:
        if sha256 is None or files is None:
            self.engine.load_adapter(None)
            return
        root = Path(tempfile.gettempdir()) / "codeloop-ray-adapters"
        self.engine.load_adapter(place_adapter(root, sha256, files))

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
        make: Callable[[EngineConfig], Engine],
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
    ) -> None:
        """`make` builds the engine each actor runs (the engine factory, `engines.create`:
        passed in rather than imported, so that the factory and this module do not import
        each other)."""
        from codeloop.sandbox.cluster import connect_ray

        if replicas < 1:
            raise EngineError(f"cluster.engine_replicas = {replicas}: needs at least 1")
        self.ray = connect_ray(address)
        actor = self.ray.remote(num_cpus=num_cpus, num_gpus=num_gpus)(_EngineActor)
        self.config = config
        self.actors = [actor.remote(config.model_dump(mode="json"), make) for _ in range(replicas)]
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
