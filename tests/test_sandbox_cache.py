"""Compiler caches: bounded by size, and never written by the programs they check.

The compile cache: least recently used out first, whole entries only, and pruned as
saves add bytes (not only every few saves). The shared Go build cache: read-only in
checks (their cache program, GOCACHEPROG, answers from it and takes no `put`),
written only by trusted warm-ups, and retired whole when over its cap.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from codeloop.sandbox.cache import (
    RETIRED_GRACE_S,
    CompileCache,
    cap_shared_folder,
    compile_key,
    folder_bytes,
)
from codeloop.sandbox.languages.go import cache as go_cache


def _box(tmp_path: Path, name: str, size: int) -> Path:
    box = tmp_path / "boxes" / name
    box.mkdir(parents=True)
    (box / "main").write_bytes(os.urandom(size))
    return box


def test_the_cache_stays_under_its_cap_and_keeps_what_was_used_last(tmp_path: Path) -> None:
    filling = CompileCache(root=tmp_path / "cache", cap_mib=64)  # no pruning while filled
    keys = [f"{n:02x}" + "0" * 62 for n in range(12)]
    for number, key in enumerate(keys):
        filling.save(key, _box(tmp_path, key, 200 * 1024), {"ok": True, "stderr": ""})
        os.utime(filling.root / key[:2] / key / "outcome.json", (number, number))
    cache = CompileCache(root=tmp_path / "cache", cap_mib=1)
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


def test_saves_alone_keep_the_cache_under_its_cap(tmp_path: Path) -> None:
    """A size scan every 32 saves let a run of big binaries (a Go program's 200 MiB
    array) overshoot the cap many times over: saves that add a sixteenth of the cap
    prune too. Fails without that (12 x 100 KiB stay in a 1 MiB cache)."""
    cache = CompileCache(root=tmp_path / "cache", cap_mib=1)
    keys = [f"{n:02x}" + "1" * 62 for n in range(12)]
    for key in keys:
        cache.save(key, _box(tmp_path, key, 100 * 1024), {"ok": True, "stderr": ""})
        time.sleep(0.01)  # distinct use times: the oldest go first
    assert folder_bytes(cache.root) <= cache.cap_bytes
    assert cache.load(keys[0], tmp_path / "gone") is None
    assert cache.load(keys[-1], tmp_path / "kept") is not None


def test_an_entry_over_an_eighth_of_the_cap_is_not_stored(tmp_path: Path) -> None:
    cache = CompileCache(root=tmp_path / "cache", cap_mib=1)
    key = "cd" + "0" * 62
    cache.save(key, _box(tmp_path, key, 200 * 1024), {"ok": True, "stderr": ""})
    assert cache.load(key, tmp_path / "box") is None
    assert folder_bytes(cache.root) == 0


def test_an_over_cap_shared_folder_is_retired_whole_then_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODELOOP_CACHE", str(tmp_path))
    folder = tmp_path / "things"
    folder.mkdir()
    (folder / "small").write_bytes(b"x" * 1000)
    assert not cap_shared_folder("things", None, 4096)  # under the cap: left alone
    assert (folder / "small").exists()
    (folder / "big").write_bytes(b"x" * 8192)
    assert cap_shared_folder("things", None, 4096)
    assert folder.is_dir() and not any(folder.iterdir())  # a fresh, empty folder
    [retired] = (tmp_path / "things-retired").iterdir()
    assert (retired / "big").exists()  # kept for compiles that bound it
    old = time.time() - RETIRED_GRACE_S - 60
    os.utime(retired, (old, old))
    assert not cap_shared_folder("things", None, 4096)
    assert not retired.exists()  # past its grace: deleted


def test_an_over_cap_go_cache_is_evicted_with_its_warm_up_marks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODELOOP_CACHE", str(tmp_path))
    monkeypatch.setenv("CODELOOP_GOCACHE_MIB", "1")
    gocache = tmp_path / "gocache"
    (gocache / "ab").mkdir(parents=True)
    (gocache / "ab" / "ab00-d").write_bytes(b"x" * (2 << 20))
    mark = tmp_path / "gocache-warmed" / "0123456789abcdef" / ".done"
    mark.parent.mkdir(parents=True)
    mark.write_text("")
    monkeypatch.setitem(go_cache._go_warmed, "0123456789abcdef", 1)
    go_cache._go_cap_cache(None)
    assert folder_bytes(gocache) < 100  # only trim.txt
    assert not mark.exists() and not go_cache._go_warmed
    # The go command's own in-place trim stays off: it just "ran".
    assert abs(int((gocache / "trim.txt").read_text()) - time.time()) < 60


def _go_entry(folder: Path, action: bytes, body: bytes) -> str:
    """Store `body` under `action` as the go command's disk cache does; its file path."""
    output = hashlib.sha256(body).hexdigest()
    name = action.hex()
    (folder / name[:2]).mkdir(parents=True, exist_ok=True)
    (folder / output[:2]).mkdir(parents=True, exist_ok=True)
    data = folder / output[:2] / f"{output}-d"
    data.write_bytes(body)
    entry = f"v1 {name} {output} {len(body):20d} {time.time_ns():20d}\n"
    (folder / name[:2] / f"{name}-a").write_text(entry)
    return str(data)


@pytest.fixture(scope="module")
def go_sandbox():
    from codeloop.sandbox.check import Sandbox
    from codeloop.sandbox.languages import get

    if not shutil.which("bwrap") or get("go").missing_tools():
        pytest.skip("needs bubblewrap and Go")
    sandbox = Sandbox("bwrap", worker=7)
    yield sandbox
    sandbox.close()


def test_the_cache_program_answers_gets_from_the_cache_and_declares_no_put(
    go_sandbox, tmp_path: Path
) -> None:
    """The built cache program, spoken to as the go command does: without `put` in its
    commands the go command stores nothing through it (cmd/go's ProgCache: a read-only
    cache), so what a check compiles stays in its own work folder."""
    from codeloop.sandbox.languages import get

    program = go_cache._go_cacheprog(go_sandbox, get("go"))
    assert program is not None and os.access(program, os.X_OK)
    hit, other = bytes(range(32)), bytes(range(1, 33))
    path = _go_entry(tmp_path, hit, b"compiled package")
    cut = _go_entry(tmp_path, bytes(range(2, 34)), b"another package")
    Path(cut).write_bytes(b"cut")  # not the size its index says: a miss
    requests = [
        {"ID": 1, "Command": "get", "ActionID": base64.b64encode(hit).decode()},
        {"ID": 2, "Command": "get", "ActionID": base64.b64encode(other).decode()},
        {"ID": 3, "Command": "get", "ActionID": base64.b64encode(bytes(range(2, 34))).decode()},
        {"ID": 4, "Command": "close"},
    ]
    done = subprocess.run(
        [str(program), str(tmp_path)],
        input="".join(json.dumps(request) + "\n" for request in requests).encode(),
        capture_output=True,
        timeout=30,
        check=True,
    )
    hello, found, missed, cut_reply, closed = map(json.loads, done.stdout.splitlines())
    assert hello == {"ID": 0, "KnownCommands": ["get", "close"]}
    assert found["ID"] == 1 and found["DiskPath"] == path and found["Size"] == 16
    assert base64.b64decode(found["OutputID"]).hex() == Path(path).name[:-2]
    assert missed == {"ID": 2, "Miss": True} and cut_reply == {"ID": 3, "Miss": True}
    assert closed == {"ID": 4}


def _sizes(folder: Path) -> dict[Path, int]:
    return {path: path.stat().st_size for path in folder.rglob("*") if path.is_file()}


def test_a_go_check_never_writes_the_shared_build_cache(go_sandbox, tmp_path: Path) -> None:
    """A Go program with a 32 MiB array compiles to a 32 MiB package: with the shared
    GOCACHE read-write that package landed in it (the issue: 200 MiB in 3 s, never
    pruned). Now the check's build output stays in its sandbox; the shared cache gets
    no file of that size (warm-ups of other processes may add small ones meanwhile),
    and the compile cache does not store a binary over an eighth of its cap."""
    from codeloop.sandbox import Case, CheckRequest
    from codeloop.sandbox.cache import shared_folder
    from codeloop.sandbox.languages import get

    sandbox = go_sandbox
    sandbox.compiler.cache = CompileCache(root=tmp_path, cap_mib=64)
    gocache = shared_folder("gocache", sandbox.backend.compile_uid)
    go_cache.go_check_cache(sandbox, get("go"), gocache)  # its warm-up, done first
    before = _sizes(gocache)
    program = (
        'package main\n\nimport "os"\n\n'
        "var big = [32 << 20]byte{1, 2, 3, 32<<20 - 1: 7}\n\n"
        "func main() {\n\tos.Stdout.WriteString(string(rune('0' + big[len(big)-1])) + \"\\n\")\n}\n"
        f"// {uuid.uuid4().hex}\n"
    )
    check = sandbox.check(
        CheckRequest(language="go", program=program, cases=[Case(input="", output="7\n")])
    )
    assert check.status == "passed", check
    after = _sizes(gocache)
    added = {path: size for path, size in after.items() if before.get(path) != size}
    assert not [path for path, size in added.items() if size >= 16 << 20], added
    assert sum(added.values()) < 16 << 20
    assert folder_bytes(tmp_path / "compile") < 1 << 20  # the 34 MiB binary: not stored
