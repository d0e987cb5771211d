"""The compile cache: bounded by size, least recently used out first, whole entries only."""

from __future__ import annotations

import os
import time
from pathlib import Path

from codeloop.sandbox.cache import CompileCache, compile_key, folder_bytes


def _box(tmp_path: Path, name: str, size: int) -> Path:
    box = tmp_path / "boxes" / name
    box.mkdir(parents=True)
    (box / "main").write_bytes(os.urandom(size))
    return box


def test_the_cache_stays_under_its_cap_and_keeps_what_was_used_last(tmp_path: Path) -> None:
    cache = CompileCache(root=tmp_path / "cache", cap_mib=1)
    keys = [f"{n:02x}" + "0" * 62 for n in range(12)]
    for number, key in enumerate(keys):
        cache.save(key, _box(tmp_path, key, 200 * 1024), {"ok": True, "stderr": ""})
        os.utime(cache.root / key[:2] / key / "outcome.json", (number, number))
    # Entry 0 is the oldest save, but a hit makes it the most recently used.
    assert cache.load(keys[0], tmp_path / "hit") is not None
    time.sleep(0.01)
    freed = cache.prune()
    assert freed > 0
    assert folder_bytes(cache.root) <= cache.cap_bytes
    assert cache.load(keys[0], tmp_path / "again") is not None  # used last: kept
    assert cache.load(keys[1], tmp_path / "gone") is None  # least recently used: evicted
    assert cache.load(keys[-1], tmp_path / "new") is not None
    assert not list(cache.root.glob("??/.tmp-*"))


def test_a_cache_under_its_cap_is_left_alone(tmp_path: Path) -> None:
    cache = CompileCache(root=tmp_path / "cache", cap_mib=8)
    key = "ab" + "0" * 62
    cache.save(key, _box(tmp_path, key, 1024), {"ok": False, "stderr": "error: nope"})
    assert cache.prune() == 0
    assert cache.load(key, tmp_path / "box") == {"ok": False, "stderr": "error: nope"}


def test_the_compile_key_covers_the_environment_and_the_bound_folders() -> None:
    """The same sources against other libraries are another compilation: a Go check whose
    GOPATH finds another testify, or a compile bound to another one-time build's folder
    (its path holds that build's key), must not reuse the first one's outcome."""
    files = {"main.go": b"package main\n"}
    argv = ["/usr/bin/go", "build", "./drv"]
    plain = compile_key("go", "go1", argv, files)
    assert plain == compile_key("go", "go1", argv, files, {}, [])
    gopath = compile_key("go", "go1", argv, files, {"GOPATH": "/a:/b"})
    assert gopath not in (plain, compile_key("go", "go1", argv, files, {"GOPATH": "/b"}))
    first = compile_key("go", "go1", argv, files, {}, [("/cache/lib/k1", "/lib", False)])
    second = compile_key("go", "go1", argv, files, {}, [("/cache/lib/k2", "/lib", False)])
    assert len({plain, first, second}) == 3
