"""One process run under limits: its limits and result, the set-up between fork and exec
(cgroup, rlimits, uid, parent-death signal), reading its output without blocking up to
a byte cap and a wall-clock deadline, and how it ended. `harness` builds the bubblewrap
command, makes its cgroup and seccomp filter, and calls `_supervise`; the warm runner
(`warm`) reads its output the same way. Nothing here calls back into the cgroup: what
the set-up needs from it are fields fixed at its creation, and its end-of-run facts are
read by the caller (`RunCgroup.finish`)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from codeloop.sandbox import reaping
from codeloop.sandbox.cgroups import RunCgroup

_MIB = 1 << 20
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class RunLimits:
    """Limits of one sandboxed command."""

    wall_s: float
    cpu_s: float
    memory_mib: int
    output_bytes: int
    processes: int
    workdir_mib: int
    address_space: bool = True
    virtual_overhead_mib: int = 0
    """Without `address_space`: RLIMIT_AS is memory_mib plus this where no memory cgroup
    caps the run (see Language.virtual_overhead_mib); with a memory cgroup, no RLIMIT_AS."""
    file_size_mib: int = 256
    open_files: int = 512


@dataclass
class RunResult:
    """What happened to one sandboxed command."""

    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    wall_ms: float
    timed_out: bool = False
    output_exceeded: bool = False
    oom_killed: bool = False
    peak_memory_kib: int | None = None
    setup_error: str | None = None
    cpu_limited: bool = False
    """The command used its whole CPU-time limit (so a SIGXCPU/SIGKILL came from the
    limit, not from the program signalling itself or exiting 128 + N)."""
    partner_cpu_limited: bool = False
    """The partner (the solution's sandbox of a two-process test) ended by itself after
    using its whole CPU-time limit: the test side then saw its solution vanish, and the
    check is a timeout, not a failed test."""
    phases_ms: dict[str, float] = field(default_factory=dict)
    """Where the time went, where the runner measures it (the warm sandbox: setup,
    program, clean-up); for benches."""
    trailer: bytes = b""
    """What the run's wrapper wrote on its trailer channel (`harness.run(trailer=True)`:
    a pipe the program's own process is not given; `run_files`)."""


def cpu_limit_s(limits: RunLimits) -> int:
    """RLIMIT_CPU's soft limit in whole seconds (SIGXCPU there, SIGKILL a second later)."""
    return max(1, int(limits.cpu_s + 0.999))


def child_setup(
    procs_files: list[str],
    limits: RunLimits,
    uid: int | None,
    umask: int,
    memory_capped: bool = False,
    cpu: int | None = None,
) -> None:
    """Runs in the forked child before exec: join cgroups, set rlimits, drop privileges.

    `memory_capped`: a memory cgroup holds the run. Without one, a run that may not
    have RLIMIT_AS at its memory limit gets it at the limit plus the runtime's
    reservations: a looser cap, never none (no silent weaker mode). `cpu`: pin the run
    there (no CPU quota applies; the seccomp filter denies sched_setaffinity, so the
    program cannot widen it again).
    """
    os.setsid()
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    for procs in procs_files:
        fd = os.open(procs, os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)
    cpu = cpu_limit_s(limits)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    file_size = limits.file_size_mib * _MIB
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
    if limits.address_space or not memory_capped:
        space = limits.memory_mib * _MIB
        if not limits.address_space:
            space += limits.virtual_overhead_mib * _MIB
        resource.setrlimit(resource.RLIMIT_AS, (space, space))
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    os.umask(umask)
    # Set after the uid change, which clears it: die if the harness dies.
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _supervise(
    command: list[str],
    env: dict[str, str],
    cwd: str,
    stdin: bytes,
    limits: RunLimits,
    uid: int | None,
    cgroup: RunCgroup | None,
    pass_fds: tuple[int, ...] = (),
    cpu: int | None = None,
    side_fd: int | None = None,
    trailer_fd: int | None = None,
) -> RunResult:
    """Start `command` with stdin from `stdin`, its child set-up joining `cgroup`, and
    read its output to the end (`_stream`; `trailer_fd`: see `collect_output`). The
    cgroup's facts (memory kill, peak) are the caller's to read, together with its
    removal (`RunCgroup.finish`)."""
    procs = cgroup.procs_files if cgroup else []
    capped = cgroup is not None and cgroup.caps_memory
    with tempfile.TemporaryFile() as stdin_file, _closing(pass_fds):
        stdin_file.write(stdin)
        stdin_file.seek(0)
        started = time.monotonic()
        try:
            process = subprocess.Popen(
                command,
                stdin=stdin_file,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=cwd,
                close_fds=True,
                pass_fds=pass_fds,
                preexec_fn=lambda: child_setup(procs, limits, uid, 0o022, capped, cpu),
            )
        except (OSError, subprocess.SubprocessError) as error:
            return RunResult(None, None, b"", b"", 0.0, setup_error=f"cannot start: {error}")
        reaping.track(process.pid)
    try:
        return _stream(process, started, limits, side_fd, trailer_fd)
    finally:
        reaping.track(process.pid, running=False)


def start_partner(
    command: list[str],
    limits: RunLimits,
    uid: int | None,
    cgroup: RunCgroup | None,
    pass_fds: tuple[int, ...],
    cpu: int | None,
    output_fd: int,
) -> subprocess.Popen[bytes] | str:
    """Start the partner of a two-process test (no stdin, all its output to `output_fd`),
    its child set-up joining `cgroup`; the process, or why it could not start.

    Our copies of `pass_fds` and `output_fd` are closed once it has started (or failed
    to). The caller kills its process group and reaps it when the test side is done."""
    procs = cgroup.procs_files if cgroup else []
    capped = cgroup is not None and cgroup.caps_memory
    with _closing((*pass_fds, output_fd)):
        try:
            partner = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=output_fd,
                stderr=output_fd,
                cwd="/",
                env={},
                close_fds=True,
                pass_fds=pass_fds,
                preexec_fn=lambda: child_setup(procs, limits, uid, 0o022, capped, cpu),
            )
        except (OSError, subprocess.SubprocessError) as error:
            return f"cannot start the partner: {error}"
    reaping.track(partner.pid)  # until the caller has reaped it
    return partner


def _command_exited(status_fd: int) -> bool:
    """Whether bwrap's status pipe recorded the command's exit (`"exit-code"`)."""
    os.set_blocking(status_fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError, OSError):
        while chunk := os.read(status_fd, 65536):
            data += chunk
            if len(data) > 1 << 20:
                break
    return b'"exit-code"' in data


@contextlib.contextmanager
def _closing(fds: tuple[int, ...]) -> Iterator[None]:
    """Close our copies of fds handed to the child, once it has started (or failed to)."""
    try:
        yield
    finally:
        for fd in fds:
            os.close(fd)


def _stream(
    process: subprocess.Popen[bytes],
    started: float,
    limits: RunLimits,
    side_fd: int | None = None,
    trailer_fd: int | None = None,
) -> RunResult:
    """Read stdout and stderr until exit, the deadline, or the output cap; then reap."""
    assert process.stdout is not None and process.stderr is not None
    pidfd = os.pidfd_open(process.pid)
    try:
        output = collect_output(
            process.stdout.fileno(),
            process.stderr.fileno(),
            pidfd,
            started,
            limits,
            side_fd,
            trailer_fd=trailer_fd,
        )
    finally:
        os.close(pidfd)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = code = os.waitstatus_to_exitcode(status)
    wall_ms = (time.monotonic() - started) * 1000
    process.stdout.close()
    process.stderr.close()
    # wait4 reports the sandbox's pid 1 with the descendants it reaped.
    cpu_s = usage.ru_utime + usage.ru_stime
    result = finished_run(code, output, wall_ms, usage.ru_maxrss, cpu_s, limits)
    result.trailer = output.trailer
    return result


def finished_run(
    code: int,
    output: Output,
    wall_ms: float,
    maxrss_kib: int,
    cpu_s: float,
    limits: RunLimits,
    phases_ms: dict[str, float] | None = None,
) -> RunResult:
    """The RunResult of a run that ended with `code` (negative: killed by that signal)."""
    return RunResult(
        exit_code=code if code >= 0 else None,
        signal=-code if code < 0 else None,
        stdout=output.stdout,
        stderr=output.stderr,
        wall_ms=wall_ms,
        timed_out=output.timed_out,
        output_exceeded=output.exceeded,
        peak_memory_kib=maxrss_kib or None,
        cpu_limited=cpu_s >= cpu_limit_s(limits) - 0.05,
        phases_ms=phases_ms or {},
    )


@dataclass
class Output:
    """What a run printed (capped), and whether it was cut short."""

    stdout: bytes
    stderr: bytes
    timed_out: bool
    exceeded: bool
    ended: bool = False
    """The run said it finished (`collect_output`'s `finished`) and closed its output; it
    may not have exited yet."""
    trailer: bytes = b""
    """What came on the trailer channel (`collect_output`'s `trailer_fd`)."""


def collect_output(
    out_fd: int,
    err_fd: int,
    exit_fd: int,
    started: float,
    limits: RunLimits,
    side_fd: int | None = None,
    finished: bytes | None = None,
    trailer_fd: int | None = None,
) -> Output:
    """Read two pipes until `exit_fd` (a pidfd) signals exit, the deadline, or the cap.

    The caller kills the run afterwards: a timeout or an overflow returns at once.
    `side_fd`: a partner's output, added to stderr and to the cap, but never waited
    for after the exit (the partner lives until the caller kills it).
    `finished`: a last line only the run's trusted side prints, as its last act, and
    closes both pipes after: once both have ended with stdout ending in it, the run is
    over (`Output.ended`, whether or not it has exited yet) without waiting for the
    exit, which for a warm check is the tearing down of the process and its namespaces
    (bench/warm_end.py).
    `trailer_fd`: a pipe only the run's wrapper writes (`run_files`), read to its end like
    stdout and under the same cap, kept apart (`Output.trailer`).
    """
    buffers = {out_fd: bytearray(), err_fd: bytearray()}
    open_pipes = {out_fd, err_fd}
    if trailer_fd is not None:
        buffers[trailer_fd] = bytearray()
        open_pipes.add(trailer_fd)
    selector = selectors.DefaultSelector()
    for fd in open_pipes:
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ)
    if side_fd is not None:
        os.set_blocking(side_fd, False)
        selector.register(side_fd, selectors.EVENT_READ)
        buffers[side_fd] = buffers[err_fd]  # one stderr: the test side's and the partner's
    selector.register(exit_fd, selectors.EVENT_READ)
    deadline = started + limits.wall_s
    drain_until = deadline
    timed_out = exceeded = exited = ended = False
    tail = b"\n" + finished + b"\n" if finished else None
    total = 0
    try:
        while not exceeded:
            now = time.monotonic()
            if not exited and now >= deadline:
                timed_out = True
                break
            if tail is not None and not open_pipes and buffers[out_fd].endswith(tail):
                ended = True
                break
            if exited and (not open_pipes or now >= drain_until):
                break
            for key, _events in selector.select(timeout=max(0.0, drain_until - now)):
                if key.fd == exit_fd:
                    # Whatever still holds the pipes open gets a moment to flush, no more.
                    exited = True
                    drain_until = min(deadline, time.monotonic() + 0.2)
                    selector.unregister(exit_fd)
                    continue
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(key.fd)
                    open_pipes.discard(key.fd)
                    continue
                room = max(limits.output_bytes - total, 0)
                buffers[key.fd] += chunk[:room]
                total += len(chunk)
                exceeded = total > limits.output_bytes
    finally:
        selector.close()
    trailer = bytes(buffers[trailer_fd]) if trailer_fd is not None else b""
    return Output(
        bytes(buffers[out_fd]), bytes(buffers[err_fd]), timed_out, exceeded, ended, trailer
    )


PARTNER_EXIT_GRACE_S = 0.5
"""How long a failed test side's partner gets to finish exiting before we ask how it ended."""


def ran_out_of_cpu(pid: int, limits: RunLimits) -> bool:
    """Whether the partner `pid` (our child, not yet reaped) ended by itself having used
    its whole CPU-time limit. Waits up to PARTNER_EXIT_GRACE_S for it to end.

    Here, beside `finished_run`'s own CPU-limit test, because both read a run's rusage
    against `cpu_limit_s`; the harness asks right after the test side's run."""
    deadline = time.monotonic() + PARTNER_EXIT_GRACE_S
    while True:
        try:
            found, _status, usage = os.wait4(pid, os.WNOHANG)
        except ChildProcessError:
            return False
        if found:
            return usage.ru_utime + usage.ru_stime >= cpu_limit_s(limits) - 0.05
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
