"""A verdict depends on the program alone: not on what the test side holds, nor on what
ran before it in the same worker.

Every program here runs inside the sandbox. The attacks are wrong answers that try to
be judged "passed" by reading the hidden test (the only place the expected value is)
through the test process's descriptors: `/proc/1/fd/0` (in a cold check, bubblewrap's
pid 1 used to hold the driver's stdin, which carries the nonce and the test) and
`pidfd_getfd`. The state test runs a program whose verdict depended on an earlier
warm check (RLIMIT_NPROC counted the warm sandbox's processes, which ran as the same
uid).
"""

from __future__ import annotations

import secrets

import pytest

from codeloop.config import SandboxLimits
from codeloop.sandbox.check import Check, CheckRequest, Sandbox

pytestmark = pytest.mark.timeout(300)
LIMITS = SandboxLimits(time_s=3.0, memory_mib=256, output_kib=64, processes=32, workdir_mib=16)

READ_THE_TEST = """
import ctypes, glob, os, re, stat

def answer():
    found = []
    for path in ["/proc/1/fd/0", *glob.glob("/proc/*/fd/*")]:
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                continue  # a pipe or socket would block
            with open(path, "rb") as handle:
                found.append(handle.read(1 << 20))
        except OSError:
            pass
    libc = ctypes.CDLL(None, use_errno=True)
    for pid in range(1, 64):
        pidfd = libc.syscall(434, pid, 0)  # pidfd_open
        if pidfd < 0:
            continue
        for fd in range(8):
            copy = libc.syscall(438, pidfd, fd, 0)  # pidfd_getfd
            if copy >= 0 and stat.S_ISREG(os.fstat(copy).st_mode):
                os.lseek(copy, 0, 0)
                found.append(os.read(copy, 1 << 20))
    for data in found:
        match = re.search(rb"== '(SECRET[0-9a-f]+)'", data)
        if match:
            return match.group(1).decode()
    return "nothing found"
"""


def _request(program: str, test: str) -> CheckRequest:
    return CheckRequest(
        language="python", program=program, test=test, entry_point="answer", limits=LIMITS
    )


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_a_solution_cannot_read_the_hidden_test_from_the_test_process(mode: str) -> None:
    box = Sandbox("bwrap", worker=30 if mode == "warm" else 31)
    if mode == "cold":
        if box.warm is not None:
            box.warm.stop()
        box.warm = None
    try:
        secret = "SECRET" + secrets.token_hex(8)
        test = f"got = answer()\nassert got == '{secret}', got\n"
        forged = box.check(_request(READ_THE_TEST, test))
        honest = box.check(
            _request(f"def answer():\n    return '{secret}'\n", f"assert answer() == '{secret}'\n")
        )
    finally:
        box.close()
    assert honest.status == "passed", honest.feedback
    assert forged.status == "wrong_answer", forged.feedback
    assert "nothing found" in forged.feedback, forged.feedback


THREADS_JAVA = """
public class Main {
    public static void main(String[] args) throws Exception {
        Thread[] threads = new Thread[44];
        for (int i = 0; i < threads.length; i++) {
            threads[i] = new Thread(() -> {
                try { Thread.sleep(300); } catch (InterruptedException e) { }
            });
            threads[i].start();
        }
        for (Thread t : threads) t.join();
        System.out.println("ok");
    }
}
"""
THREADS_PYTHON = """
import threading, time
threads = [threading.Thread(target=time.sleep, args=(0.3,)) for _ in range(12)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("ok")
"""


def _threads(box: Sandbox) -> list[Check]:
    return [
        box.check(
            CheckRequest(
                language=language, program=program, cases=[{"input": "", "output": "ok\n"}]
            )
        )
        for language, program in (("java", THREADS_JAVA), ("python", THREADS_PYTHON))
    ]


def test_a_verdict_does_not_depend_on_a_warm_check_before_it() -> None:
    """The same thread-starting programs, in a fresh worker and after a Python function
    test in the same worker (its warm sandbox then holds processes made ahead)."""
    fresh = Sandbox("bwrap", worker=32)
    try:
        alone = _threads(fresh)
    finally:
        fresh.close()
    box = Sandbox("bwrap", worker=33)
    try:
        warmed = box.check(_request("def answer():\n    return 1\n", "assert answer() == 1\n"))
        after = _threads(box)
        used_warm = box.warm is not None and box.warm.pid is not None
    finally:
        box.close()
    assert warmed.status == "passed", warmed.feedback
    assert used_warm, "the Python function test did not run in the warm sandbox"
    assert [c.status for c in alone] == ["passed", "passed"], [c.feedback for c in alone]
    assert [c.status for c in after] == [c.status for c in alone], [c.feedback for c in after]


def test_a_test_that_never_calls_the_solution_is_no_verdict() -> None:
    box = Sandbox("bwrap", worker=34)
    try:
        vacuous = box.check(_request("def answer():\n    return 1\n", "def check(f):\n    pass\n"))
        called = box.check(_request("def answer():\n    return 1\n", "assert answer() == 1\n"))
    finally:
        box.close()
    assert vacuous.status == "environment_error" and vacuous.task_error, vacuous
    assert called.status == "passed", called.feedback


@pytest.mark.parametrize("value", ["float('nan')", "float('inf')", "[1.0, float('-inf')]"])
def test_a_non_finite_float_fails_a_comparison_that_nan_slips_through(value: str) -> None:
    box = Sandbox("bwrap", worker=35)
    try:
        result = box.check(
            _request(
                f"def answer():\n    return {value}\n",
                "got = answer()\ngot = got if isinstance(got, float) else got[1]\n"
                "assert not abs(got - 2.5) > 1e-4\n",
            )
        )
    finally:
        box.close()
    assert result.status == "wrong_answer", result.feedback
    assert "not a finite number" in result.feedback, result.feedback
