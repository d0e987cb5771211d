"""Where codeloop keeps state outside a session: the machine-wide cache root.

A leaf module (standard library only), so engines, models and the sandbox can all
find the cache without importing one another.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """`$CODELOOP_CACHE`, else /var/cache/codeloop as root, else ~/.cache/codeloop.

    As root the caches live under /var/cache, never under /root: the sandbox's
    unprivileged uids must be able to reach them.
    """
    configured = os.environ.get("CODELOOP_CACHE")
    if configured:
        return Path(configured)
    if os.geteuid() == 0:
        return Path("/var/cache/codeloop")
    return Path.home() / ".cache" / "codeloop"
