"""Sandbox workers that die during an honest check, on purpose: the programs and the
watcher the tests of re-runs use (tests/test_eval_tasks.py, tests/test_reward.py)."""

from __future__ import annotations

import os
import signal
import threading
import time

from codeloop.sandbox.pool import WorkerPool
from codeloop.sandbox.reaping import descendants

SLOW_DOUBLE = "import time\nn = int(input())\ntime.sleep(2)\nprint(2 * n)\n"
"""Right, and slow enough to be caught running: its worker is killed mid-check."""
DOUBLE_CASES = [{"input": "21\n", "output": "42\n"}]


def _running(pid: int, marker: str) -> bool:
    """Whether a process under `pid` runs a command line containing `marker`."""
    for child in descendants(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    return True
        except OSError:
            continue
    return False


def kill_workers_mid_check(
    pool: WorkerPool, times: int, marker: str = "main.py"
) -> tuple[threading.Thread, list[int]]:
    """SIGKILL the pool's worker process whenever one is running a program (a command line
    with `marker`), `times` times, each time a different (fresh) worker process: a sandbox
    worker that dies during an honest check. Returns the watcher and the killed pids."""
    killed: list[int] = []

    def watch() -> None:
        deadline = time.monotonic() + 240
        while len(killed) < times and time.monotonic() < deadline:
            for worker in pool.workers:
                process = worker.process
                if process is None or process.pid in killed or process.poll() is not None:
                    continue
                if _running(process.pid, marker):
                    os.kill(process.pid, signal.SIGKILL)
                    killed.append(process.pid)
            time.sleep(0.02)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, killed
