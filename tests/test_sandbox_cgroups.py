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
