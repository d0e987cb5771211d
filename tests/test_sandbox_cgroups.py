"""A run's cgroups hold the limits asked for, report what happened, and leave nothing.

Real cgroup files (v1 or v2, whichever this machine delegates); skipped where none is
writable. No program runs here: the sandbox tests run programs inside these cgroups.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.sandbox.cgroups import CgroupManager

MIB = 1 << 20


@pytest.fixture
def manager() -> Iterator[CgroupManager]:
    made = CgroupManager(f"test-{os.getpid()}")
    if not made.available:
        pytest.skip(made.describe())
    yield made
    for folder, _controllers in made.parents:
        with contextlib.suppress(OSError):
            folder.rmdir()


def test_a_run_cgroup_holds_its_limits_and_is_removed(manager: CgroupManager) -> None:
    cgroup = manager.create(300 * MIB, 17, cpu_quota=1.0)
    assert cgroup is not None, manager.error
    values: dict[str, str] = {}
    for folder in cgroup.folders:
        for name in (
            "memory.limit_in_bytes",
            "memory.memsw.limit_in_bytes",
            "memory.max",
            "pids.max",
            "cpu.cfs_period_us",
            "cpu.cfs_quota_us",
            "cpu.max",
        ):
            if (folder / name).exists():
                values[name] = (folder / name).read_text().strip()
    memory = values.get("memory.limit_in_bytes", values.get("memory.max"))
    assert memory == str(300 * MIB)
    if "memory.memsw.limit_in_bytes" in values:
        assert values["memory.memsw.limit_in_bytes"] == str(300 * MIB)
    assert values["pids.max"] == "17"
    if cgroup.caps_cpu:
        quota = (
            values.get("cpu.max") or f"{values['cpu.cfs_quota_us']} {values['cpu.cfs_period_us']}"
        )
        assert quota == "100000 100000"
    assert cgroup.procs_files == [str(folder / "cgroup.procs") for folder in cgroup.folders]
    assert cgroup.pids() == [] and cgroup.oom_killed() is False
    peak = cgroup.peak_bytes()
    assert peak is None or peak >= 0
    cgroup.destroy()
    assert not any(Path(folder).exists() for folder in cgroup.folders)


def test_a_closed_worker_leaves_no_folder() -> None:
    manager = CgroupManager(f"w{os.getpid()}-97")
    if not manager.available:
        pytest.skip(manager.describe())
    cgroup = manager.create(64 * MIB, 8, cpu_quota=1.0)
    assert cgroup is not None, manager.error
    cgroup.destroy()
    assert all(folder.is_dir() for folder, _controllers in manager.parents)
    manager.close()
    assert not any(folder.exists() for folder, _controllers in manager.parents)
    again = manager.create(64 * MIB, 8)  # a closed manager is made again on use
    assert again is not None and all(folder.is_dir() for folder in again.folders)
    again.destroy()
    manager.close()


def test_the_cgroups_of_workers_that_are_gone_are_swept_and_no_others() -> None:
    """A worker killed before it closed leaves its cgroups; the next worker to start
    removes them (each one left on cgroup v1 makes every CPU quota write slower), and
    never touches those of a live process."""
    import subprocess
    import sys

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()  # a pid no process has now
    gone = CgroupManager(f"w{ended.pid}-0")
    live = CgroupManager(f"w{os.getpid()}-98")
    if not (gone.available and live.available):
        pytest.skip(gone.describe())
    left = gone.create(64 * MIB, 8, cpu_quota=1.0)  # never destroyed: as if killed
    kept = live.create(64 * MIB, 8, cpu_quota=1.0)
    assert left is not None and kept is not None
    fresh = CgroupManager(f"w{os.getpid()}-99")
    try:
        assert fresh.available
        assert not any(folder.exists() for folder in left.folders)
        assert not any(folder.exists() for folder, _controllers in gone.parents)
        assert all(folder.is_dir() for folder in kept.folders)
    finally:
        kept.destroy()
        for manager in (live, fresh, gone):
            manager.close()
