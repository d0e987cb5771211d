"""Shared compiler state: the compile cache, the Go build cache, the C++ precompiled header.

A loop checks the same answer several times (collect, export re-verification,
audit), so compiled artifacts are cached by (language, toolchain version, compile
command, sha256 of every input file). Compile errors are cached too: they are as
deterministic as successes. The folders must be reachable by the sandbox's
unprivileged uids, so as root they live under /var/cache/codeloop, never under
/root.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from codeloop.store import sha256_bytes, sha256_json


def cache_root() -> Path:
    """`$CODELOOP_CACHE`, else /var/cache/codeloop as root, else ~/.cache/codeloop."""
    configured = os.environ.get("CODELOOP_CACHE")
    if configured:
        return Path(configured)
    if os.geteuid() == 0:
        return Path("/var/cache/codeloop")
    return Path.home() / ".cache" / "codeloop"


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


def compile_key(language: str, toolchain: str, argv: list[str], files: dict[str, bytes]) -> str:
    """The cache key of one compilation."""
    hashes = {name: sha256_bytes(data) for name, data in sorted(files.items())}
    return sha256_json(
        {"language": language, "toolchain": toolchain, "argv": argv, "files": hashes}
    )


class CompileCache:
    """Artifacts and outcomes of earlier compilations, keyed by `compile_key`."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or cache_root()) / "compile"

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
            shutil.copytree(entry / "box", box, symlinks=True, dirs_exist_ok=True)
        return outcome

    def save(self, key: str, box: Path, outcome: dict) -> None:
        """Store a build atomically: a reader sees a whole entry or none."""
        entry = self._entry(key)
        if entry.exists():
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
