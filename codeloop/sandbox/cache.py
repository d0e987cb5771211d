"""What the sandbox's workers share on disk: the compile cache, the shared folders the
language homes keep their builds in, locks across workers, and uid slots.

- `CompileCache` and `compile_key`: a loop checks the same answer several times
  (collect, export re-verification, audit), so compiled artifacts and outcomes are
  cached by (language, toolchain version, compile command, environment, bound
  folders, sha256 of every input file). A failed compile is cached only when the
  compiler ran to its own end and the language's canary still compiles
  (`compiler.Compiler`, the only writer): then it is as deterministic as a success.
- `shared_folder`: folders the compile uid may write, for one-time builds
  (`testbuild.build_once`: Rust's crates, the codecs) and the homes' own caches (Go's
  build cache, `languages/go/cache.py`; C++'s precompiled header,
  `languages/cpp/headers.py`); `cap_shared_folder` retires one whole when it is over
  its cap (Go's build cache). Checked programs write none of them: only trusted
  warm-ups and one-time builds do, and checks bind them read-only.
- `locked`: an exclusive lock across worker processes (one-time builds, a task's
  trusted test half, pruning).
- `claim_slot`: a worker's uid slot, locked machine-wide, so two codeloop processes
  never run programs under the same uid.

The folders must be reachable by the sandbox's unprivileged uids, so as root they live
under /var/cache/codeloop (`paths.cache_root`), never under /root.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

# cache_root lives in codeloop.paths (engines and models need it too); it stays
# importable from here for the sandbox's modules.
from codeloop.paths import cache_root
from codeloop.store import sha256_bytes, sha256_json


def shared_folder(name: str, owner: int | None) -> Path:
    """A cache folder the compile uid may write (`gocache`, `pch`, ...)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    folder = root / name
    folder.mkdir(exist_ok=True)
    if owner is not None and folder.stat().st_uid != owner:
        for path in [folder, *folder.rglob("*")]:
            os.lchown(path, owner, owner)
    return folder


RETIRED_GRACE_S = 3600.0
"""How long a retired shared folder is kept before it is deleted: compiles that bound
it before it was retired still read it (a compile's wall-clock limit is far below)."""
_RENAME_EXCHANGE = 2


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths atomically (renameat2 RENAME_EXCHANGE); False where unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_cwd = -100
    done = renameat2(at_cwd, os.fsencode(first), at_cwd, os.fsencode(second), _RENAME_EXCHANGE)
    return done == 0


def cap_shared_folder(name: str, owner: int | None, cap_bytes: int) -> bool:
    """Evict the shared folder `name` when it holds more than `cap_bytes`; whether it did.

    The whole folder is retired: an empty one takes its place in one atomic swap, so a
    sandbox that binds the path sees the old folder or the new one, never a missing
    or half-deleted one. A compile that bound the old folder keeps reading it (a bind
    mount holds the folder, not its path) until it is deleted, RETIRED_GRACE_S after
    it was retired. Call it under a lock, before writing into the folder: what was
    evicted is rebuilt by whoever needs it (a warm-up), so disk use stays under the
    cap plus one writer's additions plus the retired folders of the last hour.
    """
    root = cache_root()
    folder = shared_folder(name, owner)
    retired = root / f"{name}-retired"
    if retired.is_dir():
        for old in retired.iterdir():
            with contextlib.suppress(OSError):
                if time.time() - old.lstat().st_mtime > RETIRED_GRACE_S:
                    shutil.rmtree(old, ignore_errors=True)
    if folder_bytes(folder) <= cap_bytes:
        return False
    retired.mkdir(exist_ok=True)
    os.chmod(retired, 0o700)
    fresh = Path(tempfile.mkdtemp(dir=root, prefix=f".{name}-"))
    os.chmod(fresh, 0o755)
    if owner is not None:
        os.chown(fresh, owner, owner)
    if _exchange(fresh, folder):
        old = fresh  # the swap left the old contents at the temporary name
    else:  # no renameat2: two renames (a sandbox set up in between fails, with no verdict)
        old = fresh.with_name(fresh.name + "-old")
        os.rename(folder, old)
        os.rename(fresh, folder)
    target = retired / f"{time.time_ns()}"
    os.rename(old, target)
    os.utime(target)
    return True


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """An exclusive lock across worker processes, for one-time builds (PCH, crates)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


SLOT_LOCKS = Path("/run/codeloop/uid-slots")
"""Where root's processes lock their uid slots: one folder for the whole machine, whatever
cache root (`CODELOOP_CACHE`) each process uses, so two never take the same uid."""
_claimed: dict[int, tuple[int, object]] = {}
"""worker -> (slot, its open lock file), held by this process until it exits."""


def claim_slot(worker: int, slots: int, on_claim: Callable[[int], None] | None = None) -> int:
    """A slot number no other live process holds, kept until this process exits.

    Sandboxed programs run as RUN_UID_BASE + slot: two codeloop processes on one
    machine (two sessions, a session and `codeloop eval`) never share a run uid, so
    one's programs cannot signal, ptrace or wait on the other's, and clean-up by uid
    never touches the other's processes. The kernel drops an flock when its holder
    dies, so a crashed process frees its slot. `on_claim(slot)` runs when this process
    takes a slot (not when it asks again): whatever still runs under the slot's uid
    then is a leftover of a process that died, which no check may share a uid with.
    """
    if worker in _claimed:
        return _claimed[worker][0]
    folder = SLOT_LOCKS if os.geteuid() == 0 else cache_root() / "uid-slots"
    folder.mkdir(parents=True, exist_ok=True)
    for slot in range(slots):
        handle = open(folder / f"{slot}.lock", "w")  # noqa: SIM115 - held for life
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        _claimed[worker] = (slot, handle)
        if on_claim is not None:
            on_claim(slot)
        return slot
    raise RuntimeError(f"all {slots} sandbox uid slots are taken by other processes")


def compile_key(
    language: str,
    toolchain: str,
    argv: list[str],
    files: dict[str, bytes],
    env: dict[str, str] | None = None,
    binds: Sequence[tuple[str, str, bool]] = (),
) -> str:
    """The cache key of one compilation.

    The environment and the folders bound into the compile are part of it: the same
    sources against other libraries (a GOPATH searched in another order, another
    one-time build's folder, whose path holds its own key) are another compilation.
    """
    hashes = {name: sha256_bytes(data) for name, data in sorted(files.items())}
    return sha256_json(
        {
            "language": language,
            "toolchain": toolchain,
            "argv": argv,
            "files": hashes,
            "env": env or {},
            "binds": [list(bind) for bind in binds],
        }
    )


DEFAULT_COMPILE_CACHE_MIB = 2048
"""Size cap of the compile cache; CODELOOP_COMPILE_CACHE_MIB overrides it."""
_PRUNE_EVERY = 32
"""Saves between two size scans (a scan walks the whole cache)..."""
_PRUNE_AFTER = 16
"""...or sooner, once the saves since the last scan add 1/_PRUNE_AFTER of the cap."""
_LARGEST_ENTRY = 8
"""An entry over 1/_LARGEST_ENTRY of the cap is not stored (a program that compiles to
a huge binary would evict a whole run's entries; compiling it again is cheaper)."""
DEFAULT_GOCACHE_MIB = 1024
"""Size cap of the shared Go build cache; CODELOOP_GOCACHE_MIB overrides it."""


def folder_bytes(folder: Path) -> int:
    """Bytes of the regular files under `folder` (symlinks not followed)."""
    total = 0
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
    return total


class CompileCache:
    """Artifacts and outcomes of earlier compilations, keyed by `compile_key`.

    Bounded: every few saves (and as soon as the saves since the last scan add a
    sixteenth of the cap, so a few huge binaries cannot overshoot it) the cache is
    measured, and when it is over its cap the least recently used entries (a hit
    refreshes an entry's time) are removed until it is under 80% of the cap. An
    entry bigger than an eighth of the cap is not stored at all. Every HumanEval-X
    sample of a run is a new entry (Go's among them: its box, both binaries), so an
    unbounded cache would grow with every evaluation.
    """

    def __init__(self, root: Path | None = None, cap_mib: int | None = None) -> None:
        self.root = (root or cache_root()) / "compile"
        env = os.environ.get("CODELOOP_COMPILE_CACHE_MIB")
        self.cap_bytes = (cap_mib or int(env or DEFAULT_COMPILE_CACHE_MIB)) << 20
        self._saves = 0
        self._added = 0
        """Bytes saved since the last size scan."""

    def _entry(self, key: str) -> Path:
        return self.root / key[:2] / key

    def load(self, key: str, box: Path) -> dict | None:
        """Copy a cached build into `box` and return its outcome, or None on a miss."""
        entry = self._entry(key)
        try:
            outcome = json.loads((entry / "outcome.json").read_text())
        except (OSError, ValueError):
            return None
        if outcome.get("ok"):
            try:
                shutil.copytree(entry / "box", box, symlinks=True, dirs_exist_ok=True)
            except (OSError, shutil.Error):
                return None  # evicted while we read it: compile again
        with contextlib.suppress(OSError):
            os.utime(entry / "outcome.json")  # recently used: evicted last
        return outcome

    def save(self, key: str, box: Path, outcome: dict) -> None:
        """Store a build atomically: a reader sees a whole entry or none."""
        entry = self._entry(key)
        if entry.exists():
            return
        size = folder_bytes(box) if outcome.get("ok") else 0
        if size > self.cap_bytes // _LARGEST_ENTRY:
            return
        entry.parent.mkdir(parents=True, exist_ok=True)
        temp = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".tmp-"))
        try:
            if outcome.get("ok"):
                shutil.copytree(box, temp / "box", symlinks=True)
            (temp / "outcome.json").write_text(json.dumps(outcome))
            os.chmod(temp, 0o755)
            os.rename(temp, entry)
        except OSError:
            shutil.rmtree(temp, ignore_errors=True)
        self._saves += 1
        self._added += size
        if self._saves % _PRUNE_EVERY == 1 or self._added >= self.cap_bytes // _PRUNE_AFTER:
            self._added = 0
            self.prune()

    def prune(self) -> int:
        """Remove least recently used entries while over the cap; returns bytes freed."""
        entries = []
        total = 0
        for entry in self.root.glob("??/*"):
            if entry.name.startswith(".tmp-"):
                continue
            size = folder_bytes(entry)
            try:
                used = (entry / "outcome.json").stat().st_mtime
            except OSError:
                used = 0.0
            entries.append((used, size, entry))
            total += size
        if total <= self.cap_bytes:
            return 0
        freed = 0
        with locked("compile-prune"):
            for _used, size, entry in sorted(entries, key=lambda item: item[0]):
                if total - freed <= self.cap_bytes * 0.8:
                    break
                # Renamed first, so that a reader never copies half an entry.
                doomed = entry.with_name(f".tmp-evict-{entry.name}")
                with contextlib.suppress(OSError):
                    os.rename(entry, doomed)
                    shutil.rmtree(doomed, ignore_errors=True)
                    freed += size
        return freed
