"""Per-run cgroups for memory, process count and CPU share, on cgroup v1 or v2, where writable.

rlimits cannot cap the memory of a JVM or Go runtime (they reserve huge virtual
ranges) and cannot count processes across uids, so each run gets its own cgroup
when the machine lets us create one. Where it does not (or CODELOOP_CGROUPS=off),
`available()` says so and the sandbox relies on rlimits, RLIMIT_AS included for
every run (see harness.RunLimits.virtual_overhead_mib); `codeloop doctor` reports
which applies. A run step (never a compile) also gets a CPU quota of one CPU, so a
program spinning many threads cannot slow other workers' programs into timeouts;
without a cpu controller the harness pins the run to its worker's CPU instead.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PREFIX = "codeloop"
_CPU_PERIOD_US = 100_000


def _v1_controller(name: str) -> Path | None:
    path = ROOT / name
    return path if (path / "cgroup.procs").exists() and os.access(path, os.W_OK) else None


def _v2_parent() -> tuple[Path, bool] | None:
    """Our own v2 cgroup, when memory and pids can be delegated below it (and whether
    cpu can be too)."""
    if not (ROOT / "cgroup.controllers").exists():
        return None
    try:
        line = next(x for x in Path("/proc/self/cgroup").read_text().splitlines() if x[:3] == "0::")
    except (StopIteration, OSError):
        return None
    parent = ROOT / line[3:].lstrip("/")
    try:
        controllers = (parent / "cgroup.controllers").read_text().split()
    except OSError:
        return None
    if not {"memory", "pids"} <= set(controllers) or not os.access(parent, os.W_OK):
        return None
    return parent, "cpu" in controllers


_WORKER_NAME = re.compile(r"w(\d+)-\d+")
"""A worker's folder under codeloop/: `w<pid>-<index>` (see harness.make_backend)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(codeloop_folder: Path) -> None:
    """Remove the cgroups that workers which are gone left under `codeloop_folder`.

    A worker killed before it closed leaves its folder, and runs killed with it leave
    theirs. Empty cgroups cost nothing by themselves, but on cgroup v1 every write of a
    CPU quota walks every cpu cgroup on the machine: with 5,000 left, the quota write
    of each check took 0.37 ms instead of 0.017, about 30% of a warm Python check's
    worker CPU (bench/cgroup_leak.py). Only folders of processes that no longer exist
    (and then only cgroups nothing runs in: rmdir refuses the others) are removed.
    """
    try:
        entries = list(os.scandir(codeloop_folder))
    except OSError:
        return
    for entry in entries:
        match = _WORKER_NAME.fullmatch(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False) or _alive(int(match[1])):
            continue
        with contextlib.suppress(OSError):
            for run in os.scandir(entry.path):
                if run.is_dir(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        os.rmdir(run.path)
            os.rmdir(entry.path)


def _read(path: str) -> str | None:
    """A cgroup file's text, or None where it is absent or unreadable.

    Plain os calls, not pathlib: every check reads and writes about twenty of these
    files, and on a 2-core machine the pathlib and io layers around them were a
    measurable share of a worker's time per check."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 1 << 16).decode()
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_int(path: str) -> int | None:
    try:
        return int(_read(path) or "")
    except ValueError:
        return None


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


@dataclass(frozen=True)
class CgroupUsage:
    """What a run's cgroup says about the run once it has ended, read in one go."""

    oom_killed: bool
    """The kernel killed something for exceeding the memory limit (v1: or the usage hit
    the limit at all)."""
    peak_memory_kib: int | None
    """The highest memory use of the cgroup, where the kernel reports it."""


@dataclass
class RunCgroup:
    """The cgroup(s) of one run: join by writing the pid to each of `procs_files`.

    Everything a run's set-up reads from it (`procs_files`, `caps_memory`, `caps_cpu`)
    is a plain field fixed at creation, so the child set-up never calls back here; the
    end of the run is one call too (`usage`, or `finish` to read and remove at once).
    """

    folders: list[Path]
    version: int
    caps_memory: bool = True
    """Whether one of `folders` has the memory controller (cgroup v1 may lack it)."""
    caps_cpu: bool = False
    """Whether a CPU quota applies to the run."""
    procs_files: list[str] = field(init=False)
    """The `cgroup.procs` file of each folder: a process joins by writing its pid there."""

    def __post_init__(self) -> None:
        self.procs_files = [f"{folder}/cgroup.procs" for folder in self.folders]

    def peak_bytes(self) -> int | None:
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        for folder in self.folders:
            value = _read_int(f"{folder}/{name}")
            if value is not None:
                return value
        return None

    def oom_killed(self) -> bool:
        """Whether the kernel killed something here for exceeding the memory limit
        (v1: or the usage hit the limit at all, memory.failcnt)."""
        events = "memory.oom_control" if self.version == 1 else "memory.events"
        for folder in self.folders:
            for line in (_read(f"{folder}/{events}") or "").splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
            if self.version == 1 and (_read_int(f"{folder}/memory.failcnt") or 0) > 0:
                return True
        return False

    def usage(self) -> CgroupUsage:
        """The end-of-run facts a result carries (memory kill, peak), read together so
        that the runner asks once, after the run and before the cgroup goes."""
        peak = self.peak_bytes()
        return CgroupUsage(self.oom_killed(), None if peak is None else peak // 1024)

    def finish(self) -> CgroupUsage:
        """`usage`, then `destroy`: the end of a run whose cgroup goes with it. The
        cgroup is destroyed even where reading it fails."""
        try:
            return self.usage()
        finally:
            self.destroy()

    def pids(self) -> list[int]:
        found: set[int] = set()
        for folder in self.folders:
            found.update(int(x) for x in (_read(f"{folder}/cgroup.procs") or "").split())
        return sorted(found)

    def remove_if_idle(self) -> bool:
        """Destroy the cgroup if nothing is left in it; whether it did. A run that ended
        by its output may still be exiting: its cgroup waits for a later call instead of
        making this one wait for the teardown."""
        if self.pids():
            return False
        self.destroy()
        return True

    def destroy(self) -> None:
        """Kill whatever is still inside, then remove the cgroup(s)."""
        deadline = time.monotonic() + 5
        if self.version == 2:
            for folder in self.folders:
                with contextlib.suppress(OSError):
                    _write(f"{folder}/cgroup.kill", "1")
        while (pids := self.pids()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)
        for folder in self.folders:
            while time.monotonic() < deadline:
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.005)


class CgroupManager:
    """Creates per-run cgroups under `codeloop/<worker>/` of each writable hierarchy."""

    def __init__(self, worker: str) -> None:
        self.worker = worker
        self.version = 0
        self.parents: list[tuple[Path, str]] = []  # (folder, which controllers it has)
        self._ready = False
        self._counter = 0
        self._memsw = False
        """Whether v1 memory cgroups have a memory+swap limit to set as well."""
        self.error: str | None = None
        if os.environ.get("CODELOOP_CGROUPS", "").lower() in ("off", "0", "no"):
            self.error = "cgroups: off (CODELOOP_CGROUPS); memory capped by RLIMIT_AS"
            return
        memory, pids = _v1_controller("memory"), _v1_controller("pids")
        if memory or pids:
            self.version = 1
            if memory:
                self.parents.append((memory / PREFIX / worker, "memory"))
            if pids:
                self.parents.append((pids / PREFIX / worker, "pids"))
            if cpu := _v1_controller("cpu"):
                self.parents.append((cpu / PREFIX / worker, "cpu"))
        elif (found := _v2_parent()) is not None:
            self.version = 2
            parent, cpu = found
            self.parents.append(
                (parent / PREFIX / worker, "memory pids cpu" if cpu else "memory pids")
            )

    def _prepare(self) -> bool:
        if self._ready:
            return True
        for folder, _controllers in self.parents:
            sweep_stale(folder.parent)
        try:
            for folder, controllers in self.parents:
                folder.mkdir(parents=True, exist_ok=True)
                if self.version == 2:
                    wanted = " ".join(f"+{name}" for name in controllers.split())
                    for level in (folder.parent, folder):
                        (level / "cgroup.subtree_control").write_text(wanted)
        except OSError as error:
            self.error = f"cannot create cgroups: {error}"
            self.parents = []
            return False
        self._memsw = any(
            (folder / "memory.memsw.limit_in_bytes").exists()
            for folder, controllers in self.parents
            if self.version == 1 and "memory" in controllers
        )
        self._ready = True
        return True

    @property
    def available(self) -> bool:
        return bool(self.parents) and self._prepare()

    def close(self) -> None:
        """Remove this worker's own folders (its runs' cgroups are gone by now)."""
        if not self._ready:
            return
        for folder, _controllers in self.parents:
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        self._ready = False

    def describe(self) -> str:
        if not self.available:
            return self.error or (
                "cgroups: none writable (memory and process limits by rlimit only,"
                " RLIMIT_AS on every run)"
            )
        kinds = " + ".join(controllers for _f, controllers in self.parents)
        return f"cgroup v{self.version} ({kinds})"

    def create(
        self, memory_bytes: int, max_pids: int, cpu_quota: float | None = None
    ) -> RunCgroup | None:
        """A fresh cgroup for one run, or None where cgroups are unavailable.

        `cpu_quota`: CPUs' worth of time the run may use (None: no quota).
        """
        if not self.available:
            return None
        self._counter += 1
        name = f"run-{os.getpid()}-{self._counter}"
        folders: list[Path] = []
        caps_cpu = False
        try:
            for parent, controllers in self.parents:
                if controllers == "cpu" and cpu_quota is None:
                    continue  # v1's own cpu hierarchy: only runs with a quota join it
                folder = f"{parent}/{name}"
                try:
                    os.mkdir(folder)
                except FileNotFoundError:
                    # Our own folder went (a sweep from a process that cannot see our
                    # pid, in another pid namespace): make it again, once.
                    self._ready = False
                    if not self._prepare():
                        raise
                    os.mkdir(folder)
                folders.append(Path(folder))
                if "memory" in controllers:
                    limit = str(memory_bytes)
                    if self.version == 1:
                        _write(f"{folder}/memory.limit_in_bytes", limit)
                        if self._memsw:
                            with contextlib.suppress(OSError):
                                _write(f"{folder}/memory.memsw.limit_in_bytes", limit)
                    else:
                        _write(f"{folder}/memory.max", limit)
                        with contextlib.suppress(OSError):
                            _write(f"{folder}/memory.swap.max", "0")
                if "pids" in controllers:
                    _write(f"{folder}/pids.max", str(max_pids))
                if "cpu" in controllers and cpu_quota is not None:
                    # A new cgroup's period is the kernel's default, 100 ms, in both
                    # versions (v1 writes only the quota: each write re-applies it).
                    quota = max(1000, int(_CPU_PERIOD_US * cpu_quota))
                    if self.version == 1:
                        _write(f"{folder}/cpu.cfs_quota_us", str(quota))
                    else:
                        _write(f"{folder}/cpu.max", f"{quota} {_CPU_PERIOD_US}")
                    caps_cpu = True
        except OSError as error:
            RunCgroup(folders, self.version).destroy()
            self.error = f"cannot create a run cgroup: {error}"
            return None
        memory = any("memory" in controllers for _parent, controllers in self.parents)
        return RunCgroup(folders, self.version, memory, caps_cpu)
