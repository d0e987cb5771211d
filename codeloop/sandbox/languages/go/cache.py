"""Go's build cache: shared read-only through a cache program, capped, warmed once."""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from codeloop.sandbox.cache import (
    DEFAULT_GOCACHE_MIB,
    cache_root,
    cap_shared_folder,
    locked,
    shared_folder,
)
from codeloop.sandbox.language import BOX, Language, version_of
from codeloop.sandbox.languages.go import box
from codeloop.sandbox.languages.go.source import _GO_STD
from codeloop.sandbox.languages.go.toolchain import GO
from codeloop.sandbox.testbuild import (
    BuildHost,
    build_once,
    failed_archives,
)
from codeloop.store import sha256_json

_GO_RUNTIME_PACKAGES = (
    "bufio",
    "bytes",
    "encoding/base64",
    "encoding/json",
    "errors",
    "fmt",
    "io",
    "os",
    "reflect",
    "strconv",
    "strings",
    "testing",
    "github.com/stretchr/testify/assert",
)
"""What the trusted Go files and HumanEval-X's tests import."""
GOCACHE_MOUNT = "/gocache"
"""Where a Go compile sees the shared build cache (`gocache` in the cache root):
read-write in `go_warm_cache`'s trusted builds only, read-only in checks."""
GOCACHEPROG_MOUNT = "/gocacheprog"
"""Where a Go check's compile sees the cache program (`box/cacheprog.go.txt`, built)."""
GO_OWN_CACHE = "/tmp/gocache"
"""A Go check's own GOCACHE, in its compile sandbox's tmpfs (thrown away with it)."""
_go_warmed: dict[str, int] = {}
"""Warm-up keys this process saw done, with the inode of the shared cache they went
into: the check is a dict lookup and one stat (an evicted cache is a new folder)."""


def go_check_cache(
    sandbox: BuildHost, language: Language, gocache: Path
) -> tuple[list[tuple[str, str, bool]], dict[str, str]]:
    """The binds and environment that give a Go check's compile the shared build cache,
    read-only.

    The go command asks the cache program (GOCACHEPROG, `box/cacheprog.go.txt`) for
    cached outputs; it answers from `gocache` (the standard packages `go_warm_cache`
    prebuilt) and takes no `put`, so what the check compiles (its own packages, a
    200 MiB array) stays in the go command's work folder in the sandbox's tmpfs, and
    no check can grow the shared cache or leave anything in it for another. GOCACHE
    itself is the check's own empty folder there (the go command wants one; nothing
    is stored in it). Where the cache program cannot be built, a check gets only its
    own cache (slower, as safe). Checks no longer fill the shared cache, so the
    standard packages are warmed here too (once; stdio checks call no other warm-up;
    not Debian's whole testify, whose net/http stack no HumanEval-X test needs).
    """
    go_warm_cache(sandbox, language, dict(language.env), third_party=False)
    program = _go_cacheprog(sandbox, language)
    if program is None:
        return [], {"GOCACHE": GO_OWN_CACHE}
    if sandbox.backend.name != "bwrap":  # no mounts: the go command sees the real folders
        command = shlex.join([str(program), str(gocache)])
        return [], {"GOCACHE": GO_OWN_CACHE, "GOCACHEPROG": command}
    binds = [(str(gocache), GOCACHE_MOUNT, False), (str(program.parent), GOCACHEPROG_MOUNT, False)]
    command = f"{GOCACHEPROG_MOUNT}/{program.name} {GOCACHE_MOUNT}"
    return binds, {"GOCACHE": GO_OWN_CACHE, "GOCACHEPROG": command}


_cacheprogs: dict[str, Path] = {}
"""Cache program builds this process saw done (key -> binary)."""


@functools.cache
def _cacheprog_source() -> str:
    return (Path(box.__file__).parent / "cacheprog.go.txt").read_text()


def _go_cacheprog(sandbox: BuildHost, language: Language) -> Path | None:
    """The cache program, built once per toolchain and source by a trusted one-time build
    (the compile uid, in the sandbox; its standard packages through the shared cache, as
    a warm-up): a binary root writes, which checks run from a read-only bind. None if
    it cannot be built."""
    source = _cacheprog_source()
    key = sha256_json({"go": version_of(language), "source": source})[:16]
    known = _cacheprogs.get(key)
    if known is not None:
        return known
    if key in failed_archives:
        return None
    uid = sandbox.backend.compile_uid
    folder = shared_folder("gocacheprog", uid) / key
    binary = folder / "cacheprog"
    with contextlib.suppress(OSError):
        if (folder / ".done").exists() and binary.stat().st_mode & 0o111:
            _cacheprogs[key] = binary
            return binary
    with locked("gocache"):
        if not (folder / ".done").exists():
            _go_cap_cache(uid)
        gocache = shared_folder("gocache", uid)
        try:
            build_once(
                sandbox,
                "gocacheprog",
                key,
                {"cacheprog.go": source},
                [GO, "build", "-ldflags=-s -w", "-o", f"{BOX}/cacheprog", f"{BOX}/cacheprog.go"],
                {**language.env, "GOCACHE": GOCACHE_MOUNT},
                "cacheprog",
                binds=[(str(gocache), GOCACHE_MOUNT, True)],
            )
        except ValueError:
            failed_archives.add(key)
            return None
        binary.chmod(0o755)  # build_once stores products read-only to all
    _cacheprogs[key] = binary
    return binary


def go_warm_cache(
    sandbox: BuildHost,
    language: Language,
    env: dict[str, str],
    binds: Sequence[tuple[str, str, bool]] = (),
    more: Sequence[str] = (),
    third_party: bool = True,
) -> bool:
    """Compile the standard packages checks import (and `more`; with `third_party`, the
    testify the tests use) into the shared GOCACHE, once; whether that succeeded.

    With a fresh cache every worker's first checks would compile them at the same
    time (the go command shares finished results, not work in progress), each paying
    for all of them. Optional: where this fails, checks compile what they miss.
    """
    runtime = [path for path in _GO_RUNTIME_PACKAGES if third_party or "." not in path]
    packages = sorted({*_GO_STD, *runtime, *more})
    key = sha256_json({"go": version_of(language), "env": env, "packages": packages})
    key = key[:16]
    if key in failed_archives:
        return False
    uid = sandbox.backend.compile_uid
    with contextlib.suppress(OSError):
        if _go_warmed.get(key) == (cache_root() / "gocache").stat().st_ino:
            return True
    command = f"{shlex.join([GO, 'build', *packages])} && : > {BOX}/warmed"
    with locked("gocache"):
        if not (shared_folder("gocache-warmed", uid) / key / ".done").exists():
            _go_cap_cache(uid)
        gocache = shared_folder("gocache", uid)
        try:
            build_once(
                sandbox,
                "gocache-warmed",
                key,
                {},
                ["/bin/sh", "-c", command],
                {**env, "GOCACHE": GOCACHE_MOUNT},
                "warmed",
                binds=[(str(gocache), GOCACHE_MOUNT, True), *binds],
            )
        except ValueError:
            failed_archives.add(key)
            return False
        _go_warmed[key] = gocache.stat().st_ino
    return True


def _go_cap_cache(uid: int | None) -> None:
    """Before a warm-up writes the shared Go cache: evict it when over its cap
    (CODELOOP_GOCACHE_MIB, default DEFAULT_GOCACHE_MIB), with every warm-up's mark, so
    each warm-up runs again into the fresh folder when next needed. Warm-ups are its
    only writers, so it stays under the cap plus one warm-up's packages.

    The go command's own trim (entries unused for 5 days, deleted in place, once a
    day) is kept off: checks read the cache without marking what they use, and a
    file deleted under a running compile would fail it. `trim.txt` says it just ran.
    """
    cap_mib = int(os.environ.get("CODELOOP_GOCACHE_MIB") or DEFAULT_GOCACHE_MIB)
    if cap_shared_folder("gocache", uid, cap_mib << 20):
        shutil.rmtree(cache_root() / "gocache-warmed", ignore_errors=True)
        _go_warmed.clear()
    trim = shared_folder("gocache", uid) / "trim.txt"
    trim.write_text(str(int(time.time())))
    if uid is not None:
        os.chown(trim, uid, uid)
