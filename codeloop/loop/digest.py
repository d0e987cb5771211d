"""One root digest per finished round, over the whole chain up to it: a number to publish.

Every link of a session's chain is a sha256 that the next file records, so whoever can
write the session can rewrite every link to match (a coordinated forgery), and `verify`'s
hash checks then all hold. A digest printed at the end of a round and saved by a reader
outside the session (the way a transparency log's root is published) cannot be rewritten
later: `codeloop verify --expect-digest D` recomputes it from the files and fails unless
D is the digest of one of the session's finished rounds.

Round N's digest is the sha256 of the canonical JSON of: round N-1's digest (so one
published digest covers every round before it), the session's own files that shape every
round (config.toml, the config's origin record, development.json), and the sha256 of
every file in round N's folder except those that are not evidence or change after the
round ended: the heartbeat, the phases' clock files and log, and the adapter folder
(its weights are bound by train.json's adapter_sha256, a rejected candidate's are
deleted, and engines may cache converted weights beside them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codeloop import clock, store
from codeloop.loop.origin import ORIGIN_FILE

FORMAT = 1
"""The digest's layout version, hashed with it: a change of layout changes every digest."""
SESSION_FILES = ("config.toml", ORIGIN_FILE, "development.json")


def _evidence(folder: Path, path: Path) -> bool:
    """Whether a file of a round folder is part of the chain the digest covers."""
    relative = path.relative_to(folder)
    return not (
        relative.parts[0] == "adapter"
        or path.name == store.PROGRESS_FILE
        or path.name.endswith(clock.SUFFIX)
        or path.suffix == ".log"
    )


def round_files(folder: Path) -> dict[str, str]:
    """The sha256 of every file of a round folder the digest covers, by relative path."""
    return {
        str(path.relative_to(folder)): store.sha256_file(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink() and _evidence(folder, path)
    }


def _session_files(root: Path) -> dict[str, str | None]:
    return {
        name: store.sha256_file(root / name) if (root / name).is_file() else None
        for name in SESSION_FILES
    }


def digests(root: str | Path) -> dict[int, str]:
    """Each finished round's digest (a round is finished once finish.json exists), in
    order; a round that is not finished ends the chain."""
    session = store.SessionPaths(root)
    found: dict[int, str] = {}
    previous: str | None = None
    shared = _session_files(session.root)
    for number in session.rounds():
        folder = session.round(number)
        if not (folder / "finish.json").is_file():
            break
        document: dict[str, Any] = {
            "format": FORMAT,
            "round": number,
            "previous": previous,
            "session": shared,
            "files": round_files(folder),
        }
        previous = found[number] = store.sha256_json(document)
    return found


def round_digest(root: str | Path, number: int) -> str | None:
    """Round `number`'s digest (None until it is finished)."""
    return digests(root).get(number)
