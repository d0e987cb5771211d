"""Helpers shared by the dataset adapters: row hashes, file hashes, gzip-aware JSONL."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codeloop.errors import ConfigError
from codeloop.store import sha256_file


def row_sha256(row: Any) -> str:
    """sha256 of a dataset row in canonical JSON (non-JSON values by their text)."""
    text = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def files_revision(paths: list[Path]) -> str:
    """A revision for local files: sha256 over their names and contents."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode() + b"\0" + sha256_file(path).encode() + b"\n")
    return "sha256:" + digest.hexdigest()


def read_jsonl(path: Path, where: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a JSONL file, gzip or plain; a bad line is a ConfigError."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as error:
                    raise ConfigError(
                        f"{where}: {path}:{number}: not valid JSON ({error.msg})"
                    ) from None
                if not isinstance(value, dict):
                    raise ConfigError(f"{where}: {path}:{number}: expected a JSON object")
                yield number, value
    except FileNotFoundError:
        raise ConfigError(f"{where}: {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{where}: {path} could not be read: {error}") from None
