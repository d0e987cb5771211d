"""Helpers the sandbox tests use to look for side effects on the host."""

from __future__ import annotations

import os
from pathlib import Path

from codeloop.sandbox.harness import COMPILE_UID, RUN_UID_BASE, RUN_UID_SLOTS


def processes() -> dict[int, tuple[int, str]]:
    """Every process on the machine: pid -> (real uid, command line)."""
    found: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
        found[int(entry.name)] = (int(uid_line.split()[1]), cmdline)
    return found


def sandbox_processes() -> list[tuple[int, str]]:
    """Processes still running as a sandbox uid, or with a sandbox command line."""
    sandbox_uids = set(range(RUN_UID_BASE, RUN_UID_BASE + RUN_UID_SLOTS)) | {COMPILE_UID}
    return [
        (pid, cmdline)
        for pid, (uid, cmdline) in processes().items()
        if (os.geteuid() == 0 and uid in sandbox_uids) or cmdline.startswith("/usr/bin/bwrap")
    ]


def peak_rss_kib(pid: int) -> int:
    """The high-water resident memory of a process (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise LookupError(f"no VmHWM for pid {pid}")
