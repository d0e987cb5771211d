"""The warm Python sandbox: each check is forked fresh, and nothing of it reaches the next.

Every program here runs inside the sandbox (a Python function test in a worker's
warm sandbox). One `Sandbox` serves a module, so consecutive checks go to the same
zygote, as in a worker. A "leave" check tries to leave something behind and
reports whether it could; the next check looks for it. The same probes run in one
check show that they do see what is left there, so a "nothing seen" verdict means
something.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from codeloop.config import SandboxLimits
from codeloop.sandbox import languages
from codeloop.sandbox.check import Check, CheckRequest, Sandbox
from codeloop.sandbox.languages.python import warm
from codeloop.sandbox.request import RunRequest
from tests.support.sandbox_probe import (
    descendants,
    namespace_depth,
    processes,
    sandbox_processes,
    warm_host,
)

pytestmark = pytest.mark.timeout(120)
LIMITS = SandboxLimits(time_s=2.0, memory_mib=256, output_kib=64, processes=32, workdir_mib=16)

# Probes: `leave()` returns True when it left its trace; `look()` returns True when it
# sees a trace. Each is the body of a solution module (the test calls the function).
LEAVE = {
    "files": """
import os
def leave():
    for folder in ("/tmp", "/work", "/dev/shm"):
        with open(folder + "/codeloop-left", "w") as handle:
            handle.write("left")
    return all(os.path.exists(f + "/codeloop-left") for f in ("/tmp", "/work", "/dev/shm"))
""",
    "background process": """
import os, time
def leave():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open("/tmp/pid", "w") as handle:
                handle.write(str(os.getpid()))
            time.sleep(30)
        os._exit(0)
    os.wait()
    time.sleep(0.1)
    pid = int(open("/tmp/pid").read())
    return os.path.exists(f"/proc/{pid}")
""",
    "builtin patched": """
import builtins
def leave():
    builtins.len = lambda value: 42
    builtins.sorted = lambda value: ["patched"]
    return len([1, 2]) == 42
""",
    "sys.modules entry": """
import sys, types
def leave():
    sys.modules["codeloop_left"] = types.ModuleType("codeloop_left")
    import codeloop_left
    return "codeloop_left" in sys.modules
""",
    "cached global": """
import json, typing, _codeloop_codec
def leave():
    json.codeloop_left = True
    _codeloop_codec.codeloop_left = True
    typing.List = "patched"  # a preloaded module
    return json.codeloop_left
""",
    "environment": """
import os
def leave():
    os.environ["CODELOOP_LEFT"] = "1"
    return os.environ.get("CODELOOP_LEFT") == "1"
""",
    "SysV message queue": """
import ctypes
def leave():
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.msgget(0x5151, 0o1000 | 0o600) >= 0  # IPC_CREAT
""",
    "abstract socket": """
import os, socket, time
def leave():
    if os.fork() == 0:
        os.setsid()
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind("\\0codeloop-left")
        server.listen(1)
        time.sleep(30)
        os._exit(0)
    time.sleep(0.2)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect("\\0codeloop-left")
    return True
""",
}
LOOK = {
    "files": """
import os
def look():
    return any(os.path.exists(f + "/codeloop-left") for f in ("/tmp", "/work", "/dev/shm"))
""",
    "background process": """
import os
def look():
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) != [1, 2]
""",
    "builtin patched": """
def look():
    return len([1, 2]) != 2 or sorted([2, 1]) != [1, 2]
""",
    "sys.modules entry": """
import sys
def look():
    return "codeloop_left" in sys.modules
""",
    "cached global": """
import json, typing, _codeloop_codec
def look():
    seen = hasattr(json, "codeloop_left") or hasattr(_codeloop_codec, "codeloop_left")
    return seen or typing.List == "patched"
""",
    "environment": """
import os
def look():
    return "CODELOOP_LEFT" in os.environ
""",
    "SysV message queue": """
import ctypes
def look():
    return ctypes.CDLL(None).msgget(0x5151, 0) >= 0
""",
    "abstract socket": """
import socket
def look():
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect("\\0codeloop-left")
    except OSError:
        return False
    return True
""",
}


@pytest.fixture(scope="module")
def sandbox():
    box = Sandbox("bwrap", worker=13)
    assert box.warm is not None, "CODELOOP_WARM is off in this environment"
    assert box.warm.start() is None, box.warm.problem
    yield box
    box.warm.stop()


def check(sandbox: Sandbox, program: str, test: str, entry: str) -> Check:
    request = CheckRequest(
        language="python", program=program, test=test, entry_point=entry, limits=LIMITS
    )
    result = sandbox.check(request)
    assert sandbox.warm is not None and sandbox.warm.problem is None, sandbox.warm.problem
    return result


def returns(sandbox: Sandbox, program: str, entry: str, expected: object) -> Check:
    return check(sandbox, program, f"assert {entry}() == {expected!r}, {entry}()\n", entry)


@pytest.mark.parametrize("kind", sorted(LEAVE))
def test_the_probes_see_a_trace_left_in_the_same_check(sandbox: Sandbox, kind: str) -> None:
    program = LEAVE[kind] + LOOK[kind] + "\ndef both():\n    return leave() and look()\n"
    result = returns(sandbox, program, "both", True)
    assert result.status == "passed", result.feedback


@pytest.mark.parametrize("kind", sorted(LEAVE))
def test_nothing_a_check_leaves_reaches_the_next(sandbox: Sandbox, kind: str) -> None:
    left = returns(sandbox, LEAVE[kind], "leave", True)
    assert left.status == "passed", left.feedback  # it did leave its trace
    seen = returns(sandbox, LOOK[kind], "look", False)
    assert seen.status == "passed", f"the next check saw it: {seen.feedback}"


def test_each_check_draws_its_own_random_numbers(sandbox: Sandbox) -> None:
    # random is preloaded in the zygote; a forked check must not replay its state.
    program = "import random\ndef draw():\n    return random.getrandbits(64)\n"
    drawn = []
    for _ in range(3):
        result = check(sandbox, program, "value = draw()\nassert False, f'drew {value}'\n", "draw")
        found = re.search(r"drew (\d+)", result.feedback)
        assert result.status == "wrong_answer" and found, result.feedback
        drawn.append(int(found.group(1)))
    assert len(set(drawn)) == 3, drawn


def test_a_check_sees_only_its_own_two_processes_and_runs_as_the_zygote_uid(
    sandbox: Sandbox,
) -> None:
    """The warm sandbox's uid is its own, not the uid of the worker's cold runs (whose
    RLIMIT_NPROC would otherwise count the zygote's processes)."""
    assert sandbox.backend.zygote_uid not in (None, sandbox.backend.run_uid)
    program = """
import os
def world():
    return [sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), os.getuid(), os.getpid()]
"""
    result = returns(sandbox, program, "world", [[1, 2], sandbox.backend.zygote_uid, 2])
    assert result.status == "passed", result.feedback


def test_a_check_has_no_capabilities_no_namespaces_and_read_only_folders(
    sandbox: Sandbox,
) -> None:
    program = """
import ctypes, os, subprocess
def powers():
    status = open("/proc/self/status").read()
    caps = [line.split()[1] for line in status.splitlines() if line.startswith("Cap")]
    libc = ctypes.CDLL(None, use_errno=True)
    userns = libc.unshare(0x10000000)
    unshare = subprocess.run(["/usr/bin/unshare", "-U", "true"], capture_output=True).returncode
    written = []
    for path in ("/codeloop-left", "/dev/codeloop-left", "/box/codeloop-left", "/box/main.py"):
        try:
            with open(path, "a") as handle:
                handle.write("x")
            written.append(path)
        except OSError:
            pass
    filtered = [line.split()[1] for line in status.splitlines()
                if line.startswith(("Seccomp:", "NoNewPrivs:"))]
    return [sorted(set(caps)), userns, unshare != 0, written, filtered]
"""
    expected = [["0000000000000000"], -1, True, [], ["1", "2"]]  # no_new_privs, a filter
    result = returns(sandbox, program, "powers", expected)
    assert result.status == "passed", result.feedback


def test_a_timed_out_check_leaves_no_process_behind(sandbox: Sandbox) -> None:
    program = """
import os
def spin():
    for _ in range(4):
        if os.fork() == 0:
            os.setsid()
            while True:
                pass
    while True:
        pass
"""
    started = time.monotonic()
    result = check(sandbox, program, "spin()\n", "spin")
    assert result.status == "timeout"
    assert time.monotonic() - started < LIMITS.time_s + 3
    # The check's intermediate process exits just after its report: a moment, as the
    # security tests allow; the spinners never would.
    deadline = time.monotonic() + 5
    while (left := sandbox_processes()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == [], f"processes outlived their check: {left}"
    # Only this worker's tree: other tests' sandboxes may have warm hosts of their own.
    assert sandbox.warm is not None and sandbox.warm.pid is not None
    ours = descendants(sandbox.warm.pid)
    table = processes()
    hosts = [pid for pid in ours if pid in table and warm_host(pid, table[pid][1])]
    made_ahead = [pid for pid in hosts if namespace_depth(pid) == 3]
    assert hosts and len(made_ahead) <= warm.AHEAD  # the zygote's tree, the checks made ahead


STATUS_PROGRAMS = {
    "passed": ("def f(x):\n    return x + 1\n", "assert f(1) == 2\n"),
    "wrong answer": ("def f(x):\n    return x\n", "assert f(1) == 2\n"),
    "syntax error": ("def f(x) return x\n", "assert f(1) == 2\n"),
    "exits early": ("import sys\ndef f(x):\n    sys.exit(0)\n", "assert f(1) == 2\n"),
    "prints the marker": (
        "def f(x):\n    print('CODELOOP-TESTS-DONE-0')\n    return x\n",
        "assert f(1) == 2\n",
    ),
    "memory": ("def f(x):\n    return len(bytearray(1 << 30))\n", "assert f(1) == 2\n"),
    "timeout": ("def f(x):\n    while True:\n        pass\n", "assert f(1) == 2\n"),
    "output flood": (
        "import sys\ndef f(x):\n    while True:\n        sys.stderr.write('x' * 4096)\n",
        "assert f(1) == 2\n",
    ),
    "crash at import": ("raise SystemExit(3)\n", "assert f(1) == 2\n"),
}


@pytest.mark.parametrize("name", sorted(STATUS_PROGRAMS))
def test_warm_and_cold_verdicts_agree(sandbox: Sandbox, name: str) -> None:
    program, test = STATUS_PROGRAMS[name]
    warm = check(sandbox, program, test, "f")
    cold_box = Sandbox("bwrap", worker=14)
    cold_box.warm = None
    request = CheckRequest(
        language="python", program=program, test=test, entry_point="f", limits=LIMITS
    )
    cold = cold_box.check(request)
    assert (warm.status, warm.cases_passed) == (cold.status, cold.cases_passed)
    assert (warm.status == "passed") == (name == "passed")


RUN_PROGRAMS = {
    "echo": ("print(input()[::-1])\n", "abc\n"),
    "stdin and stderr": (
        "import sys\nsys.stderr.write('err\\n')\nprint(sum(map(int, sys.stdin.read().split())))\n",
        "1 2 3",
    ),
    "uncaught exception": ("def f():\n    return 1 / 0\n\nf()\n", ""),
    "chained exception": ("try:\n    {}['k']\nexcept KeyError:\n    raise ValueError('v')\n", ""),
    "exit code": ("import sys\nprint('a')\nsys.exit(3)\n", ""),
    "exit message": ("import sys\nsys.exit('bad thing')\n", ""),
    "exit none": ("raise SystemExit\n", ""),
    "syntax error": ("print(\n", ""),
    "main, file, argv, path": (
        "import sys\nprint(__name__, __file__, sys.argv, sys.path[0])\n",
        "",
    ),
    "a thread outlives the main code": (
        "import threading, time\ndef w():\n    time.sleep(0.2)\n    print('thread')\n"
        "threading.Thread(target=w).start()\nprint('main')\n",
        "",
    ),
    "unicode": ("print('h\\u00e9llo \\u2713', input())\n", "\u00fc\n"),
    "deep recursion": (
        "import sys\nsys.setrecursionlimit(10 ** 5)\ndef f(n):\n"
        "    return 0 if n == 0 else 1 + f(n - 1)\nprint(f(20000))\n",
        "",
    ),
    "timeout": ("while True:\n    pass\n", ""),
    "memory": ("x = bytearray(1 << 30)\nprint(len(x))\n", ""),
    "output flood": ("import sys\nwhile True:\n    sys.stdout.write('x' * 4096)\n", ""),
}


@pytest.mark.parametrize("name", sorted(RUN_PROGRAMS))
def test_a_warm_run_program_is_the_cold_one(sandbox: Sandbox, name: str) -> None:
    """`run_program` (SandboxFusion's /run_code) of a Python program runs in the warm
    sandbox, as `python3 -S -E -B main.py` would: the same status, exit code, stdout and
    stderr as the cold run of a sandbox without one."""
    program, stdin = RUN_PROGRAMS[name]
    request = RunRequest(language="python", program=program, stdin=stdin, limits=LIMITS)
    before = sandbox.warm.pid if sandbox.warm else None
    found = sandbox.run_program(request)
    cold_box = Sandbox("bwrap", worker=14)
    cold_box.warm = None
    cold = cold_box.run_program(request)
    assert sandbox.warm is not None and sandbox.warm.pid == before and not sandbox.warm.problem
    assert found.run is not None and cold.run is not None
    seen = [(r.status, r.exit_code, r.memory_limit, r.output_limit) for r in (found.run, cold.run)]
    assert seen[0] == seen[1], (found.run, cold.run)
    if found.run.status == "finished" and not found.run.output_limit:
        assert (found.run.stdout, found.run.stderr) == (cold.run.stdout, cold.run.stderr)


def test_run_program_runs_warm_and_cold_without_files(sandbox: Sandbox) -> None:
    """Where a worker keeps a warm sandbox, a Python run is forked from its zygote (which
    has the driver imported); one with files to copy in or fetch runs cold."""
    probe = "import sys\nprint('_codeloop_driver' in sys.modules)\n"
    warm_run = sandbox.run_program(RunRequest(language="python", program=probe))
    assert warm_run.run is not None and warm_run.run.stdout == "True\n"
    with_files = RunRequest(language="python", program=probe, fetch_files=["x"])
    cold_run = sandbox.run_program(with_files)
    assert cold_run.run is not None and cold_run.run.stdout == "False\n"


def test_a_dead_zygote_is_started_again(sandbox: Sandbox) -> None:
    assert sandbox.warm is not None and sandbox.warm._process is not None
    sandbox.warm._process.kill()
    sandbox.warm._process.wait()
    result = check(sandbox, *STATUS_PROGRAMS["passed"], "f")
    assert result.status == "passed", result.feedback


def test_a_zygote_that_dies_during_a_check_gives_no_verdict_on_it(sandbox: Sandbox) -> None:
    """The check dies with its zygote; that says nothing of the program, so it runs again.

    A first check leaves a prepared process waiting, so the slow check below runs in
    the old zygote, which is killed mid-run; the answer must come from a fresh one.
    """
    check(sandbox, *STATUS_PROGRAMS["passed"], "f")
    assert sandbox.warm is not None and sandbox.warm.pid is not None
    old = sandbox.warm.pid
    program = "import time\ndef f(x):\n    time.sleep(1.0)\n    return x + 1\n"
    killer = threading.Timer(0.4, os.kill, (old, signal.SIGKILL))
    killer.start()
    result = check(sandbox, program, "assert f(1) == 2\n", "f")
    killer.join()
    assert result.status == "passed", result.feedback
    assert sandbox.warm.pid not in (None, old)


def test_a_worker_whose_warm_sandbox_cannot_start_checks_cold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(warm, "ZYGOTE", "no-such-zygote.py")
    box = Sandbox("bwrap", worker=15)
    try:
        result = box.check(
            CheckRequest(
                language="python",
                program=STATUS_PROGRAMS["passed"][0],
                test=STATUS_PROGRAMS["passed"][1],
                entry_point="f",
                limits=LIMITS,
            )
        )
        assert result.status == "passed", result.feedback
        assert box.warm is not None and box.warm.problem
        assert "warm Python sandbox: off (the warm sandbox did not start" in box.describe()
    finally:
        box.close()


def test_codeloop_warm_off_means_every_check_is_cold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODELOOP_WARM", "off")
    assert Sandbox("bwrap", worker=15).warm is None
    monkeypatch.setenv("CODELOOP_WARM", "on")
    assert Sandbox("bwrap", worker=15).warm is not None
    assert Sandbox("process", worker=15).warm is None


def _parent(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("PPid:")).split()[1])


def _made_ahead(box: Sandbox) -> tuple[int, list[int]]:
    """The zygote's pid and those of the check processes it made ahead (after one check;
    the zygote makes them while the worker reads the verdict, so they may be on their
    way)."""
    assert box.warm is not None and box.warm.pid is not None
    deadline = time.monotonic() + 5
    while True:
        table = processes()
        ours = [pid for pid in descendants(box.warm.pid) if pid in table]
        python = [pid for pid in ours if table[pid][1].startswith("/usr/bin/python3 ")]
        zygotes = [pid for pid in python if f"/{warm.ZYGOTE} " in table[pid][1]]
        roots = [pid for pid in zygotes if _parent(pid) not in zygotes]  # not C, not G
        ready = []
        for pid in zygotes:
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().strip() == warm.READY_NAME:
                    ready.append(pid)
        if (len(roots), len(ready)) == (1, warm.AHEAD) or time.monotonic() > deadline:
            assert (len(roots), len(ready)) == (1, warm.AHEAD), (roots, ready)
            return roots[0], ready
        time.sleep(0.02)


@pytest.mark.parametrize("direct", [True, False], ids=["clone", "two-step"])
def test_the_zygote_clones_each_check_itself_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch, direct: bool
) -> None:
    """One clone(2) makes a check's pid 1 a child of the zygote; CODELOOP_WARM_CLONE=off
    puts the intermediate process back between them. Both ways, the check process
    waiting for its check is pid 1 of a pid namespace one below the zygote's."""
    monkeypatch.setenv("CODELOOP_WARM_CLONE", "on" if direct else "off")
    box = Sandbox("bwrap", worker=16)
    try:
        assert check(box, *STATUS_PROGRAMS["passed"], "f").status == "passed"
        zygote, made = _made_ahead(box)
        for ready in made:
            assert namespace_depth(ready) == namespace_depth(zygote) + 1
            if direct:
                assert _parent(ready) == zygote
            else:
                assert _parent(ready) != zygote and _parent(_parent(ready)) == zygote
    finally:
        box.close()


THREADS_SIGNALS_FORK = """
import os, signal, threading
seen = []
signal.signal(signal.SIGUSR1, lambda *_: seen.append("signal"))
signal.raise_signal(signal.SIGUSR1)
thread = threading.Thread(target=lambda: seen.append(threading.get_native_id()))
thread.start()
thread.join()
child = os.fork()
if child == 0:
    os._exit(7)
_pid, status = os.waitpid(child, 0)
assert seen[0] == "signal" and seen[1] != os.getpid(), seen
assert os.waitstatus_to_exitcode(status) == 7
assert threading.get_native_id() == os.getpid() == 1
assert f(1) == 2
"""


def test_a_cloned_check_process_signals_threads_and_forks_as_a_forked_one(
    sandbox: Sandbox,
) -> None:
    """The test's code runs in the check's pid 1, which the zygote made by a raw clone(2)
    (not glibc's fork): signals to itself, threads and forks work there as usual."""
    result = check(sandbox, STATUS_PROGRAMS["passed"][0], THREADS_SIGNALS_FORK, "f")
    assert result.status == "passed", result.feedback


FORK_COUNT = """
import os, time
def count():
    made = 0
    while made < 100:
        try:
            child = os.fork()
        except OSError:
            return made
        if child == 0:
            time.sleep(10)
            os._exit(0)
        made += 1
    return made
"""


def test_a_check_may_start_its_process_budget_less_the_driver_and_the_solution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pids.max and RLIMIT_NPROC hold the check's processes: the driver (its pid 1), the
    solution's process and what the solution starts. The two-step way leaves one fewer,
    as it always did: C, which unshared the check's user namespace, counts against its
    RLIMIT_NPROC there."""
    budget = max(8, languages.get("python").processes)
    limits = LIMITS.model_copy(update={"processes": 8})
    counts = {}
    for mode in ("on", "off"):
        monkeypatch.setenv("CODELOOP_WARM_CLONE", mode)
        box = Sandbox("bwrap", worker=16)
        try:
            request = CheckRequest(
                language="python",
                program=FORK_COUNT,
                test="made = count()\nassert False, f'made {made}'\n",
                entry_point="count",
                limits=limits,
            )
            result = box.check(request)
            found = re.search(r"made (\d+)", result.feedback)
            assert result.status == "wrong_answer" and found, result.feedback
            counts[mode] = int(found.group(1))
        finally:
            box.close()
    assert counts == {"on": budget - 2, "off": budget - 3}, counts


def test_two_step_verdicts_agree_with_the_direct_clone(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODELOOP_WARM_CLONE", "off")
    box = Sandbox("bwrap", worker=17)
    try:
        for name, (program, test) in sorted(STATUS_PROGRAMS.items()):
            two_step, direct = (check(b, program, test, "f") for b in (box, sandbox))
            assert (two_step.status, two_step.cases_passed) == (
                direct.status,
                direct.cases_passed,
            ), name
    finally:
        box.close()


@pytest.mark.parametrize("clone", ["on", "off"])
def test_a_solution_killed_by_its_cpu_limit_is_a_timeout_whoever_noticed_first(
    clone: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our wall clock and RLIMIT_CPU end a looping solution at about the same moment. On a
    busy machine the worker wakes late, after the kernel killed the solution's process
    for its CPU time: the driver then saw its solution end, exited 1, and the check was
    a wrong answer (once in make test). Now the driver exits 128 + the signal, and the
    check's CPU time (the solution's, reaped by the driver) shows the limit was reached.
    Here the clock waits 2 s more, so the CPU limit always comes first."""
    monkeypatch.setenv("CODELOOP_WARM_CLONE", clone)
    limits_of = Sandbox._limits

    def late_clock(self, language, limits):
        run = limits_of(self, language, limits)
        return dataclasses.replace(run, wall_s=run.wall_s + 2.0)

    monkeypatch.setattr(Sandbox, "_limits", late_clock)
    box = Sandbox("bwrap", worker=18)
    try:
        result = check(box, *STATUS_PROGRAMS["timeout"], "f")
        assert result.status == "timeout", result.feedback
        assert result.run_ms < (LIMITS.time_s + 2.0) * 1000  # the CPU limit ended it
    finally:
        box.close()


def test_a_run_that_says_it_finished_and_closes_its_output_is_over_before_its_exit() -> None:
    """`collect_output(finished=...)`: the line last printed, then both pipes closed, ends
    the wait; without it the wait lasts until the exit (here, the deadline)."""
    import subprocess
    import sys

    from codeloop.sandbox import runs

    # Trusted test code (no model-written program): prints its last line, closes its
    # output, then takes three seconds to exit.
    helper = (
        "import os, sys, time\n"
        "sys.stdout.write('work\\nDONE-7f3a\\n'); sys.stdout.flush()\n"
        "os.close(1); os.close(2); time.sleep(3)\n"
    )
    limits = runs.RunLimits(
        wall_s=1.0, cpu_s=1.0, memory_mib=64, output_bytes=4096, processes=4, workdir_mib=1
    )
    for finished, ends in ((b"DONE-7f3a", True), (b"DONE-other", False), (None, False)):
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        process = subprocess.Popen(
            [sys.executable, "-c", helper], stdout=out_write, stderr=err_write
        )
        os.close(out_write)
        os.close(err_write)
        pidfd = os.pidfd_open(process.pid)
        started = time.monotonic()
        try:
            output = runs.collect_output(
                out_read, err_read, pidfd, started, limits, finished=finished
            )
        finally:
            process.kill()
            process.wait()
            for fd in (out_read, err_read, pidfd):
                os.close(fd)
        waited = time.monotonic() - started
        assert output.stdout == b"work\nDONE-7f3a\n"
        assert output.ended is ends
        assert output.timed_out is not ends  # the others waited for an exit that never came
        assert (waited < 0.9) is ends, waited


def test_only_a_passed_check_ends_by_its_output(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A complete test ends by the driver's nonce and closed output (no wait for the exit);
    every other run waits for the exit status its verdict is made of."""
    ended: list[bool] = []
    original = warm.harness.collect_output

    def recorded(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        output = original(*args, **kwargs)  # type: ignore[arg-type]
        ended.append(output.ended)
        return output

    monkeypatch.setattr(warm.harness, "collect_output", recorded)
    for name in sorted(STATUS_PROGRAMS):
        ended.clear()
        result = check(sandbox, *STATUS_PROGRAMS[name], "f")
        assert ended == [name == "passed"], (name, result.status, result.feedback)
        assert (result.status == "passed") == (name == "passed")
