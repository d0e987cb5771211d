"""Artifacts on disk: atomic JSON, sha256 of files and folders, heartbeats, session paths.

Every round can be killed at any instant and resumed, so no artifact may ever be
seen half-written: each write goes to a temp file in the same folder, is flushed
and fsynced, renamed over the target, and the folder is fsynced so the rename
itself survives a power cut. A corrupt artifact is never silently replaced: the
reader raises an error naming the file, because rewriting it would hide lost work.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from codeloop.errors import IntegrityError

SCHEMA_VERSION = 1
"""Version of the artifact layout; bumped when a reader could misread an older file."""

PROGRESS_FILE = "progress.json"
_RESERVED_PROGRESS_KEYS = frozenset(
    {"schema_version", "phase", "completed", "total", "heartbeat_at"}
)
_CHUNK = 1 << 20
_MISSING: Any = object()


# --- atomic writes -------------------------------------------------------------------------


def _fsync_folder(folder: Path) -> None:
    """Persist a rename: on Linux a rename is durable only once its folder is fsynced."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Atomically replace `path` with `data`: readers see old or new, never a mix."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    _fsync_folder(target.parent)
    return target


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Atomically replace a UTF-8 text artifact (for example `train.jsonl`)."""
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike[str], value: Mapping[str, Any]) -> Path:
    """Atomically write a JSON artifact; it gains `schema_version` unless it already has one.

    Only objects are accepted at the top level so that every artifact can carry its
    schema version; wrap a list as `{"rows": [...]}`.
    """
    if not isinstance(value, Mapping):
        raise TypeError(f"artifact {path} must be a JSON object, got {type(value).__name__}")
    document = {"schema_version": SCHEMA_VERSION, **value}
    text = json.dumps(document, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    return write_bytes(path, text.encode("utf-8"))


# --- reads -----------------------------------------------------------------------------------


def read(path: str | os.PathLike[str], default: Any = _MISSING) -> Any:
    """Read a JSON artifact.

    A missing file returns `default` (or raises `IntegrityError` when no default was
    given); a file that exists but is not valid JSON always raises `IntegrityError`
    naming the file, never returns the default, so that lost work is noticed.
    """
    source = Path(path)
    try:
        raw = source.read_bytes()
    except FileNotFoundError:
        if default is _MISSING:
            raise IntegrityError(
                f"{source}: required artifact is missing; run the phase that writes it first"
            ) from None
        return default
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        reason = f"not UTF-8 at byte {error.start}"
    except json.JSONDecodeError as error:
        reason = f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
    raise IntegrityError(
        f"{source}: corrupt artifact ({reason}); it was not replaced. "
        "Restore it from a backup, or delete it to make its phase run again."
    )


# --- hashes ----------------------------------------------------------------------------------


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes, streamed so that multi-GB weights fit in memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of bytes in memory."""
    return hashlib.sha256(data).hexdigest()


def sha256_json(value: Any) -> str:
    """Hex sha256 of a JSON value in canonical form (sorted keys, no spaces)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256_bytes(canonical.encode("utf-8"))


def _tree_files(root: Path, ignore: Callable[[Path], bool] | None) -> Iterable[tuple[str, Path]]:
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if ignore is not None and ignore(relative):
            continue
        if path.is_symlink():
            raise IntegrityError(f"{path}: symbolic links are not hashed; replace it with a file")
        if path.is_file():
            yield relative.as_posix(), path


def sha256_tree(
    folder: str | os.PathLike[str], *, ignore: Callable[[Path], bool] | None = None
) -> str:
    """Hex sha256 of a folder: its files' relative paths and contents, in sorted path order.

    Independent of creation order and of timestamps; empty folders do not count.
    `ignore` gets each path relative to `folder` and may skip it (e.g. checkpoints).
    """
    root = Path(folder)
    if not root.is_dir():
        raise IntegrityError(f"{root}: expected a folder to hash, found none")
    digest = hashlib.sha256()
    for relative, path in sorted(_tree_files(root, ignore)):
        digest.update(relative.encode("utf-8") + b"\0" + sha256_file(path).encode("ascii") + b"\n")
    return digest.hexdigest()


# --- progress heartbeat --------------------------------------------------------------------


def write_progress(
    folder: str | os.PathLike[str],
    phase: str,
    completed: int = 0,
    total: int = 0,
    **extra: Any,
) -> Path:
    """Write `progress.json` in `folder`: what runs, how far it is, and when it last said so.

    `heartbeat_at` is wall-clock seconds since the epoch, so that `codeloop status`
    in another process can tell how long ago a phase last showed signs of life.
    """
    clash = _RESERVED_PROGRESS_KEYS & extra.keys()
    if clash:
        raise ValueError(f"progress extra fields may not be named {sorted(clash)}")
    value = {
        "phase": phase,
        "completed": completed,
        "total": total,
        "heartbeat_at": time.time(),
        **extra,
    }
    return write_json(Path(folder) / PROGRESS_FILE, value)


def read_progress(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The last heartbeat in `folder`, or None when nothing has run there yet."""
    return read(Path(folder) / PROGRESS_FILE, None)


def heartbeat_age(progress: Mapping[str, Any], now: float | None = None) -> float:
    """Seconds since a heartbeat was written."""
    return (time.time() if now is None else now) - float(progress["heartbeat_at"])


# --- session layout ------------------------------------------------------------------------

_ROUND = re.compile(r"^round-(\d{6})$")
_BATCH = re.compile(r"^batch-(\d{6})$")


def _numbered(prefix: str, number: int) -> str:
    if not isinstance(number, int) or number < 1 or number > 999_999:
        raise ValueError(f"{prefix} number must be an integer from 1 to 999999, got {number!r}")
    return f"{prefix}-{number:06d}"


def round_name(number: int) -> str:
    """Folder name of round `number`: `round-000001`."""
    return _numbered("round", number)


def batch_name(number: int) -> str:
    """Folder name of pool batch `number`: `batch-000001`."""
    return _numbered("batch", number)


class SessionPaths:
    """Where every file of a session lives (docs/INTERNALS.md, store.py)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    @property
    def status(self) -> Path:
        return self.root / "status.json"

    @property
    def development(self) -> Path:
        return self.root / "development.json"

    @property
    def pool(self) -> Path:
        return self.root / "pool"

    @property
    def pause_file(self) -> Path:
        return self.root / "PAUSE"

    @property
    def answers(self) -> Path:
        """Every model answer of the session, keyed by what decided it (loop/answer_cache.py)."""
        return self.root / "answers.jsonl"

    def round(self, number: int) -> Path:
        return self.root / round_name(number)

    def batch(self, number: int) -> Path:
        return self.pool / batch_name(number)

    def rounds(self) -> list[int]:
        """Numbers of the rounds that have a folder, ascending."""
        return _numbers(self.root, _ROUND)

    def batches(self) -> list[int]:
        """Numbers of the pool batches that have a folder, ascending."""
        return _numbers(self.pool, _BATCH)


def _numbers(folder: Path, pattern: re.Pattern[str]) -> list[int]:
    if not folder.is_dir():
        return []
    found = (pattern.match(child.name) for child in folder.iterdir() if child.is_dir())
    return sorted(int(match.group(1)) for match in found if match)
