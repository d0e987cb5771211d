"""Processes a run leaves behind: a worker adopts orphans (a subreaper) and reaps them
between runs, and a worker taking a uid slot ends whatever still runs under that uid
(left by a worker that died).

Every bubblewrap run leaves one orphan: the sandbox's pid 1. bwrap's monitor learns the
command's exit from pid 1 and exits at once, without waiting for pid 1, which is still
tearing down the namespace; pid 1 then belongs to the nearest subreaper, else to init.
An init that reaps lazily keeps it a zombie under the sandbox's uid, where it counts
against the next run's RLIMIT_NPROC ("bwrap: Can't fork for pid 1"). So any process
that runs sandboxes adopts its orphans: a dedicated worker reaps every child, any
other process (a test, a tool calling `Sandbox` directly) only its children under the
sandbox uids it holds, so that no `subprocess` status of its own is taken (Popen reads
ECHILD as exit code 0)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
import time
from collections.abc import Iterator

_PR_SET_CHILD_SUBREAPER = 36

RUN_UID_BASE = 61000
"""Programs run as uid RUN_UID_BASE + a slot their worker process claimed (only when the
harness is root); RUN_UID_SLOTS slots, so no two live workers share a uid."""


def _status(entry: str) -> tuple[int, int] | None:
    """(parent pid, real uid) of process `entry` from /proc/ENTRY/status; None once it
    has ended (or cannot be read)."""
    ppid = None
    try:
        with open(f"/proc/{entry}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"PPid:"):
                    ppid = int(line.split()[1])
                elif line.startswith(b"Uid:"):  # after PPid in the file
                    return (-1 if ppid is None else ppid), int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _processes() -> list[tuple[int, int, int]]:
    """(pid, parent pid, real uid) of every process, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (status := _status(entry)) is not None:
            found.append((int(entry), *status))
    return found


def uid_processes(uid: int) -> list[int]:
    """The pids of the processes whose real uid is `uid`, from /proc."""
    return [pid for pid, _ppid, owner in _processes() if owner == uid]


def end_leftovers(slot: int, settle_s: float = 2.0) -> None:
    """Kill what still runs under a slot's uid when a worker takes the slot: a process
    left by a worker that died (no live codeloop process holds the slot), which would
    otherwise count against this worker's RLIMIT_NPROC and share a uid with its checks."""
    uid = RUN_UID_BASE + slot
    deadline = time.monotonic() + settle_s
    while (left := uid_processes(uid)) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


_subreaper = False
"""Whether this process adopts orphans (a sandbox worker): then every child it has
between two runs is a leftover of the last run, and `run` waits for them to go."""

ORPHAN_SETTLE_S = 2.0
"""How long `run` waits, in a worker, for the last run's killed processes to exit."""


def become_subreaper() -> None:
    """Make this process adopt orphaned descendants so that it can reap them."""
    global _subreaper
    _subreaper = _set_subreaper(True)


_long_lived: set[int] = set()
"""Children of this worker that outlive runs (its warm sandbox): never waited for."""


def keep_child(pid: int, kept: bool = True) -> None:
    """Tell `reap_orphans` that child `pid` lives on between runs (or no longer does)."""
    if kept:
        _long_lived.add(pid)
    else:
        _long_lived.discard(pid)


def _parents() -> dict[int, int]:
    """Every process's parent, from /proc: pid -> ppid."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        found[int(entry)] = int(stat[stat.rindex(b")") + 2 :].split()[1])
    return found


def _children() -> set[int]:
    """This process's children, from /proc (the kernel here may not list them per task)."""
    me = os.getpid()
    return {pid for pid, parent in _parents().items() if parent == me}


def descendants(pid: int) -> list[int]:
    """Every process below `pid` now (children, their children, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


def reap_orphans(settle_s: float = 0.0) -> None:
    """Collect every exited child (adopted orphans included).

    `settle_s` > 0: also wait up to that long for children that are still exiting.
    A killed sandbox's pid-1 leaves its cgroup before it has reaped its namespace and
    become our zombie, so a reap that never blocks can miss it; it would then stay a
    zombie under a sandbox uid until the next run. Long-lived children (`keep_child`)
    are not waited for.
    """
    deadline = time.monotonic() + settle_s
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if time.monotonic() >= deadline:
                return
            if _long_lived and _children() <= _long_lived:
                return
            time.sleep(0.002)


_adopting = 0
"""How many runs of this process (not a dedicated worker) are adopting orphans now."""
_adopting_lock = threading.Lock()


def _set_subreaper(on: bool) -> bool:
    """Turn PR_SET_CHILD_SUBREAPER on or off for this process; whether that worked."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    return False


@contextlib.contextmanager
def adopting(uids: frozenset[int], settle_s: float) -> Iterator[None]:
    """In a process that is not a dedicated worker: adopt orphans while a run goes (so its
    orphaned pid 1 comes back to us), then reap its children under the sandbox uids
    `uids` (`reap_box_orphans`). Only while some run of this process goes: another
    component's orphans (a daemon it starts) go to init as they would without us."""
    global _adopting
    with _adopting_lock:
        _adopting += 1
        if _adopting == 1:
            _set_subreaper(True)
    try:
        yield
    finally:
        reap_box_orphans(uids, settle_s)
        with _adopting_lock:
            _adopting -= 1
            if _adopting == 0:
                _set_subreaper(False)


def _children_under(uids: frozenset[int]) -> list[int]:
    """This process's children whose real uid is one of `uids`, from /proc."""
    me = os.getpid()
    return [pid for pid, ppid, uid in _processes() if ppid == me and uid in uids]


_in_flight: set[int] = set()
"""The sandboxes' outer processes this process has started and not yet waited for (any
thread's): `reap_box_orphans` leaves them to the `wait` of the run that owns them."""


def track(pid: int, running: bool = True) -> None:
    """Tell `reap_box_orphans` that child `pid` is a run's own (or no longer is)."""
    if running:
        _in_flight.add(pid)
    else:
        _in_flight.discard(pid)


def reap_box_orphans(uids: frozenset[int], settle_s: float) -> None:
    """In a process that is not a dedicated worker: wait up to `settle_s` for its children
    under the sandbox uids `uids` (orphaned pid 1s, of this run or of a warm sandbox
    stopped since) to exit, and reap them. Never a child some run still waits for
    (`track`), a long-lived one (`keep_child`), or one under another uid. A pid 1 that
    outlives the wait stays our child, to be reaped after a later run."""
    deadline = time.monotonic() + settle_s
    while True:
        left = []
        for pid in _children_under(uids):
            if pid in _long_lived or pid in _in_flight:
                continue
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    left.append(pid)
        if not left or time.monotonic() >= deadline:
            return
        time.sleep(0.002)


def is_subreaper() -> bool:
    """Whether this process adopts orphans (see `become_subreaper`)."""
    return _subreaper
