"""Helpers the sandbox tests use to look for side effects on the host."""

from __future__ import annotations

import os
from pathlib import Path

from codeloop.sandbox.harness import COMPILE_UID, RUN_UID_BASE, RUN_UID_SLOTS
from codeloop.sandbox.languages.java import javac_service
from codeloop.sandbox.languages.python import warm


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


def descendants(root: int) -> set[int]:
    """Every process below `root` (children, their children, ...), from /proc's PPid."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        line = next((line for line in status.splitlines() if line.startswith("PPid:")), "")
        if line:
            parents[int(entry.name)] = int(line.split()[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def namespace_depth(pid: int) -> int:
    """How many pid namespaces deep a process is (1: the machine's own)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    line = next((line for line in status.splitlines() if line.startswith("NSpid:")), "")
    return len(line.split()) - 1


def warm_host(pid: int, cmdline: str) -> bool:
    """A worker's warm Python sandbox itself (its bwrap, zygote and the check processes
    it made ahead), which lives as long as its worker: trusted code, never a check.

    Every process of a check is one pid namespace deeper than the zygote; those made
    ahead are that deep too, but wait under their own name until their checks arrive (a
    program could take that name, but not outlive its pid 1: this helper only looks).
    """
    if f"/{warm.ZYGOTE} " not in cmdline:
        return False
    depth = namespace_depth(pid)
    if 0 < depth <= 2:
        return True
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return False
    return depth == 3 and name == warm.READY_NAME


def javac_host(pid: int, uid: int, cmdline: str) -> bool:
    """A worker's javac service (its bwrap and JVM), which lives as long as its worker:
    trusted code, started as the compile uid; a check's processes run as run uids, and
    a compile step's end with its own pid namespace."""
    serving = cmdline.rstrip().endswith(f"{javac_service.SERVICE_CLASS} --serve")
    return serving and (os.geteuid() != 0 or uid == COMPILE_UID) and 0 < namespace_depth(pid) <= 2


def sandbox_processes() -> list[tuple[int, str]]:
    """Processes still running as a sandbox uid, or with a sandbox command line."""
    sandbox_uids = set(range(RUN_UID_BASE, RUN_UID_BASE + RUN_UID_SLOTS)) | {COMPILE_UID}
    return [
        (pid, cmdline)
        for pid, (uid, cmdline) in processes().items()
        if ((os.geteuid() == 0 and uid in sandbox_uids) or cmdline.startswith("/usr/bin/bwrap"))
        and not warm_host(pid, cmdline)
        and not javac_host(pid, uid, cmdline)
    ]


def peak_rss_kib(pid: int) -> int:
    """The high-water resident memory of a process (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise LookupError(f"no VmHWM for pid {pid}")
