"""Adapters placed on a node by several engine actors at once (no Ray needed).

CI once failed with an empty adapter_config.json: two actors of one node wrote the
shared folder file by file, and one truncated the config while the other read it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from codeloop.engines.base import adapter_sha256
from codeloop.engines.ray_pool import place_adapter
from codeloop.errors import EngineError


def _adapter_files(rank: int) -> dict[str, bytes]:
    config = {"r": rank, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]}
    return {
        "adapter_config.json": json.dumps(config).encode(),
        "adapter_model.safetensors": bytes(range(256)) * 4096,
    }


def _sha256(tmp_path: Path, files: dict[str, bytes]) -> str:
    source = tmp_path / "source"
    source.mkdir()
    for name, data in files.items():
        (source / name).write_bytes(data)
    digest = adapter_sha256(source)
    assert digest is not None
    return digest


def test_actors_placing_one_adapter_at_once_each_read_it_whole(tmp_path: Path) -> None:
    files = _adapter_files(4)
    sha256 = _sha256(tmp_path, files)
    seen: list[str | None] = []
    errors: list[BaseException] = []

    def actor(root: Path, start: threading.Barrier) -> None:
        start.wait()
        try:
            seen.append(adapter_sha256(place_adapter(root, sha256, files)))
        except BaseException as error:  # the test reports it below
            errors.append(error)

    for attempt in range(20):
        root = tmp_path / f"node{attempt}"
        start = threading.Barrier(8)
        threads = [threading.Thread(target=actor, args=(root, start)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(p.name for p in root.iterdir()) == [sha256]  # no staging left behind
    assert [repr(error) for error in errors] == []
    assert seen == [sha256] * 160


def test_a_half_written_folder_from_a_crash_is_replaced(tmp_path: Path) -> None:
    files = _adapter_files(8)
    sha256 = _sha256(tmp_path, files)
    root = tmp_path / "node"
    (root / sha256).mkdir(parents=True)
    (root / sha256 / "adapter_config.json").write_bytes(b"")  # truncated, weights missing
    folder = place_adapter(root, sha256, files)
    assert folder == root / sha256
    assert adapter_sha256(folder) == sha256
    assert sorted(p.name for p in root.iterdir()) == [sha256]


def test_bytes_that_do_not_hash_to_the_adapter_are_refused(tmp_path: Path) -> None:
    files = _adapter_files(8)
    sha256 = _sha256(tmp_path, _adapter_files(16))
    root = tmp_path / "node"
    with pytest.raises(EngineError, match="do not hash"):
        place_adapter(root, sha256, files)
    assert list(root.iterdir()) == []
