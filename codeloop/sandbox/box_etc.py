"""The /etc files every sandbox sees that are ours, not the host's: `hosts` (so that
`localhost` resolves, as it does in SandboxFusion's boxes, where programs serve on it and
call themselves) and `nsswitch.conf` (names come from that file only: the box has no
network and no resolver). The host's own /etc/hosts is never shown: it may name the
machine's neighbours.

The files live in a world-readable folder under the cache root, written once (a
checkout may sit in a folder the sandbox's uids cannot enter)."""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path

from codeloop.paths import cache_root

FILES = {
    "hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    "nsswitch.conf": "hosts: files\n",
}


@functools.cache
def folder() -> Path | None:
    """The installed copy of FILES (None where the cache root cannot be written: the box
    then has no /etc/hosts, and `localhost` does not resolve in it)."""
    digest = hashlib.sha256(repr(sorted(FILES.items())).encode()).hexdigest()[:16]
    parent = cache_root() / "box-etc"
    target = parent / digest
    if target.is_dir():
        return target
    try:
        parent.mkdir(parents=True, exist_ok=True)
        os.chmod(parent, 0o755)
        temp = Path(tempfile.mkdtemp(dir=parent, prefix=".tmp-"))
        for name, text in FILES.items():
            (temp / name).write_text(text)
            (temp / name).chmod(0o644)
        temp.chmod(0o755)
        try:
            os.rename(temp, target)
        except OSError:  # another process installed it first
            for path in temp.iterdir():
                path.unlink()
            temp.rmdir()
    except OSError:
        return None
    return target if target.is_dir() else None


def bind_args() -> list[str]:
    """bubblewrap's options that show FILES at /etc/NAME, read-only."""
    found = folder()
    if found is None:
        return []
    return [part for name in FILES for part in ("--ro-bind", str(found / name), f"/etc/{name}")]
