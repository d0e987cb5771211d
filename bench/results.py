"""The one way a bench script reports: print a table and append it to bench/RESULTS.md.

Every entry carries the date, the host and the load average at the end, because
timings on this shared 2-core machine vary 2-4x between runs: only numbers in one
entry are comparable with each other.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
"""The notebook. `python -m bench` (the quick forms) sets CODELOOP_BENCH_RESULTS to a
scratch file instead: a quick run is a smoke test, not an entry."""


def commit() -> str:
    """The commit the bench ran on, with `+dirty` when the work tree had changes."""

    def git(*args: str) -> str:
        return subprocess.run(
            # From the repository's root: the pathspecs below are relative to it.
            ["git", *args],
            capture_output=True,
            text=True,
            cwd=RESULTS.parent.parent,
            check=False,
        ).stdout.strip()

    head = git("rev-parse", "--short=10", "HEAD") or "unknown"
    # RESULTS.md itself is what benches append to: an entry written there is no change
    dirty = git(
        "status", "--porcelain", "--untracked-files=no", "--", "codeloop", "bench",
        ":!bench/RESULTS.md",
    )  # fmt: skip
    return head + ("+dirty" if dirty else "")


def record(heading: str, lines: list[str]) -> str:
    """Print `## heading (date, commit, host, load)` and `lines`, append them to RESULTS.md."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    title = (
        f"## {heading} ({stamp}, commit {commit()}, {platform.node()}, load {load:.1f} at the end)"
    )
    text = "\n".join([title, "", *lines, ""]) + "\n"
    print(text)
    target = Path(os.environ.get("CODELOOP_BENCH_RESULTS") or RESULTS)
    with target.open("a", encoding="utf-8") as handle:
        handle.write(text)
    return text
