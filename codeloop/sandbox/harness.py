"""Run one command inside the sandbox: isolation, limits, streaming caps, clean-up.

Layers, outermost first:
1. a per-run cgroup for memory and process count (where writable);
2. rlimits (CPU, file size, open files, processes, core=0, address space where the
   runtime tolerates it) and an unprivileged per-worker uid, set in the child before
   exec (process-count limits do not apply to root);
3. bubblewrap: every namespace unshared (no network, own pid space), all
   capabilities dropped, a clean environment, read-only system folders, the
   program's folder read-only at /box, and size-limited tmpfs for /work and /tmp.

The harness runs in a dedicated single-threaded worker process (see `pool.py`),
which makes `preexec_fn` safe and lets the worker be a child subreaper that reaps
every orphan after each run. A timeout or an output overflow kills the whole
process group; output is capped while it streams, so endless printing costs
bounded memory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeloop.sandbox import box_etc, reaping, seccomp
from codeloop.sandbox.cache import claim_slot
from codeloop.sandbox.cgroups import CgroupManager, CgroupUsage, RunCgroup
from codeloop.sandbox.language import BOX
from codeloop.sandbox.reaping import RUN_UID_BASE, become_subreaper, keep_child, uid_processes
from codeloop.sandbox.runs import (
    Output,
    RunLimits,
    RunResult,
    _command_exited,
    _supervise,
    collect_output,
    cpu_limit_s,
    finished_run,
    ran_out_of_cpu,
    start_partner,
)

__all__ = [  # the runner's interface; run types live in `runs`, reaping in `reaping`
    "RUN_UID_BASE",
    "Backend",
    "Output",
    "RunLimits",
    "RunResult",
    "become_subreaper",
    "collect_output",
    "cpu_limit_s",
    "finished_run",
    "keep_child",
    "make_backend",
    "prepare_box",
    "remove_box",
    "run",
    "uid_processes",
]

BWRAP = "/usr/bin/bwrap"
RUN_UID_SLOTS = 256
_PARTNER = 1 << 16
"""Offset of the slot keys of partner sandboxes (a second uid per worker)."""
_ZYGOTE = 2 << 16
"""Offset of the slot keys of warm sandboxes (a third uid per worker)."""
COMPILE_UID = 60999
"""Compilers run as this uid, which owns the shared compiler caches."""
_SANDBOX_UIDS = frozenset({COMPILE_UID, *range(RUN_UID_BASE, RUN_UID_BASE + RUN_UID_SLOTS)})
"""Every uid a sandbox of this package runs under (as root): no other process has them."""
_SYSTEM_RO = (
    "/usr",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl/certs",
)
"""Host folders every sandbox sees read-only (where they exist), with `_shared`."""
_shared: tuple[tuple[str, str], ...] = ()
"""The languages' own folders outside /usr (`Language.mounts`), `share_read_only`'s:
(host path, path in the box)."""
_MERGED_USR = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_MIB = 1 << 20


@dataclass
class Backend:
    """How commands are isolated. `bwrap` is the default; `process` is rlimits only."""

    name: str
    cgroups: CgroupManager
    run_uid: int | None = None
    compile_uid: int | None = None
    partner_uid: int | None = None
    """The uid of a partner sandbox (the solution's process of a two-process test)."""
    zygote_uid: int | None = None
    """The uid of the worker's warm Python sandbox and every check it runs. Not
    `run_uid`: RLIMIT_NPROC counts every live process of a uid, so the zygote's
    processes would count against a cold check's process budget (a Java program with
    44 threads failed after any warm check)."""
    cpu: int | None = None
    """The CPU this worker's runs are pinned to where no cgroup CPU quota applies."""

    def describe(self) -> str:
        who = f"uid {self.run_uid}" if self.run_uid is not None else "the calling user"
        isolation = "bubblewrap namespaces" if self.name == "bwrap" else "NO namespaces (weaker)"
        return f"{self.name}: {isolation}, runs as {who}, {self.cgroups.describe()}"

    def problem(self) -> str | None:
        """Why this backend cannot run anything here, or None."""
        if self.name == "bwrap" and not os.access(BWRAP, os.X_OK):
            return f"bubblewrap is not installed ({BWRAP}): apt-get install bubblewrap"
        return None


def make_backend(name: str, worker: int) -> Backend:
    """The backend of worker number `worker` (as root: a run uid no other process has)."""
    if name not in ("bwrap", "process"):
        raise ValueError(f"unknown sandbox backend {name!r}; choose bwrap or process")
    root = os.geteuid() == 0

    def uid(key: int) -> int | None:
        if not root:
            return None
        return RUN_UID_BASE + claim_slot(key, RUN_UID_SLOTS, reaping.end_leftovers)

    run_uid = uid(worker)
    slot = worker if run_uid is None else run_uid - RUN_UID_BASE
    cpus = sorted(os.sched_getaffinity(0))
    return Backend(
        name=name,
        cgroups=CgroupManager(f"w{os.getpid()}-{worker}"),
        run_uid=run_uid,
        partner_uid=uid(_PARTNER + worker),
        zygote_uid=uid(_ZYGOTE + worker),
        compile_uid=COMPILE_UID if root else None,
        # Slots differ between processes too, so two sessions' workers spread out.
        cpu=cpus[slot % len(cpus)] if len(cpus) > 1 else None,
    )


RUN_CPU_QUOTA = 1.0
"""CPUs' worth of time a run step may use: a program spinning many threads gets one
CPU, so it cannot slow other workers' programs into timeouts (compiles are trusted
tools and keep every CPU)."""


def share_read_only(paths: Sequence[str | tuple[str, str]]) -> None:
    """Let every sandbox see `paths` read-only (where they exist), as the system folders:
    a path at the same path in the box, a (host, box) pair at its box path.

    The registry calls it with every language's `Language.mounts`, so that the harness
    never names a toolchain: a runtime's configuration outside /usr (the JVM's) is
    needed wherever that runtime starts, including sandboxes no check of its language
    set up (a compile service, one-time builds, the tests' own runs). A pair lets a
    configurable host folder appear where the box's code looks for it (the optional
    scientific Python runtime)."""
    global _shared
    pairs = [(path, path) if isinstance(path, str) else path for path in paths]
    _shared = tuple(dict.fromkeys([*_shared, *pairs]))


def bind_args(
    box: Path | None,
    writable: bool,
    limits: RunLimits,
    binds: Sequence[tuple[str, str, bool]],
    env: dict[str, str],
    cwd: str,
) -> list[str]:
    args = [
        BWRAP,
        "--unshare-all",
        # A user namespace always, and none nested inside it.
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
    ]
    for source, target in (*((path, path) for path in _SYSTEM_RO), *_shared):
        if os.path.exists(source):
            args += ["--ro-bind", source, target]
    args += box_etc.bind_args()
    for path in _MERGED_USR:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    size = str(limits.workdir_mib * _MIB)
    args += ["--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/tmp"]
    # /dev/shm is writable to everyone: sized like /tmp, not left to the kernel default.
    args += ["--size", size, "--tmpfs", "/dev/shm"]
    if box is None:  # the warm sandbox: each check mounts its own /box
        args += ["--dir", BOX]
    else:
        args += ["--bind" if writable else "--ro-bind", str(box), BOX]
    args += ["--size", size, "--tmpfs", "/work"]
    for source, target, rw in binds:
        args += ["--bind" if rw else "--ro-bind", source, target]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return [*args, "--chdir", cwd, "--"]


def base_env(extra: dict[str, str]) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        **extra,
    }


def run(
    backend: Backend,
    argv: Sequence[str],
    *,
    box: Path,
    stdin: bytes = b"",
    limits: RunLimits,
    compile_step: bool = False,
    env: dict[str, str] | None = None,
    binds: Sequence[tuple[str, str, bool]] = (),
    partner: Sequence[str] | None = None,
    solution_files: Sequence[str] = (),
    trailer: bool = False,
) -> RunResult:
    """Run `argv` in the sandbox with `box` mounted at /box (writable only to compile).

    `trailer`: one more pipe, whose write end's number replaces an argument `{trailer}`;
    an argument `{isolated}` becomes 1 where the command has a pid namespace of its own
    (bubblewrap), else 0. What comes on it is `RunResult.trailer`, kept apart from stdout
    (the wrapper of `run_files` hands the program no copy of it).

    `partner`: a second command, started first in a sandbox of its own (own uid, pid
    namespace and cgroup) and killed when `argv` ends; the two talk over two pipes
    only. `{requests}` and `{replies}` in either argv become the fd numbers of each
    side's ends (argv writes requests and reads replies). This is how a test process
    stays out of reach of the solution it calls (see a home's `box/`). The
    partner's /box is a box of its own holding only `solution_files` (paths in `box`): the test's
    source, binary and inputs are never in a folder the solution can read.

    The steps, each one module's: build the commands (here), make their seccomp filter
    fds (`seccomp`) and cgroups (`cgroups`), start and read them (`runs`), read and
    remove the cgroups (`cgroups`), reap what is left (`reaping`).
    """
    problem = backend.problem()
    if problem:
        return RunResult(None, None, b"", b"", 0.0, setup_error=problem)
    # A worker reaps every orphan itself; a test or a tool running sandboxes itself
    # adopts the run's orphans while it goes (`reaping.adopting`).
    adopting = (
        contextlib.nullcontext()
        if reaping.is_subreaper()
        else reaping.adopting(_SANDBOX_UIDS, reaping.ORPHAN_SETTLE_S)
    )
    with adopting:
        return _run_steps(
            backend, argv, box, stdin, limits, compile_step, env, binds, partner,
            solution_files, trailer,
        )  # fmt: skip


def _run_steps(
    backend: Backend,
    argv: Sequence[str],
    box: Path,
    stdin: bytes,
    limits: RunLimits,
    compile_step: bool,
    env: dict[str, str] | None,
    binds: Sequence[tuple[str, str, bool]],
    partner: Sequence[str] | None,
    solution_files: Sequence[str],
    trailer: bool,
) -> RunResult:
    """`run`'s steps; a dedicated worker (a subreaper) also collects every orphan after them."""
    solution_box = None
    try:
        if partner is None and trailer:
            return _run_with_trailer(backend, argv, box, stdin, limits, env or {}, binds)
        if partner is None:
            own = _build(backend, argv, box, limits, env or {}, binds, compile_step)
            return _execute(backend, own, stdin, limits, compile_step)
        if backend.name != "bwrap":
            return RunResult(None, None, b"", b"", 0.0, setup_error="a partner needs bubblewrap")
        if not solution_files:
            raise ValueError("a partner needs `solution_files`: what its own box holds")
        solution_box = solution_box_of(box, solution_files)
        return _run_pair(backend, argv, partner, box, solution_box, stdin, limits, env or {}, binds)
    finally:
        # A worker (a subreaper) collects every exited child and waits a moment for the
        # run's killed processes to become its zombies; any other process reaps only
        # its sandbox-uid children, on leaving `reaping.adopting` (see `run`).
        if reaping.is_subreaper():
            reaping.reap_orphans()
            reaping.reap_orphans(settle_s=reaping.ORPHAN_SETTLE_S)
        if solution_box is not None:  # the partner's: removed once its processes are gone
            remove_box(solution_box)


@dataclass
class _Command:
    """One command built for the sandbox but not started. Nothing is made for it yet (no
    fd, no cgroup): building is a step of its own, before `_execute` makes and starts."""

    argv: list[str]
    """The whole command line; with bubblewrap, its own options may go after argv[0]."""
    env: dict[str, str]
    """Popen's environment (bubblewrap's command: empty, the sandbox's is in argv)."""
    cwd: str
    uid: int | None
    cpu_quota: float | None
    bwrap: bool


def _build(
    backend: Backend,
    argv: Sequence[str],
    box: Path,
    limits: RunLimits,
    env: dict[str, str],
    binds: Sequence[tuple[str, str, bool]],
    compile_step: bool,
) -> _Command:
    """`argv` as this backend runs it: inside bubblewrap, or (`process`) on the host."""
    full_env = base_env(env)
    uid = backend.compile_uid if compile_step else backend.run_uid
    quota = None if compile_step else RUN_CPU_QUOTA
    if backend.name == "bwrap":
        cwd = BOX if compile_step else "/work"
        command = [*bind_args(box, compile_step, limits, binds, full_env, cwd), *argv]
        return _Command(command, {}, "/", uid, quota, True)
    # No namespaces: /box does not exist, so point the command at the real folder.
    command = [part.replace(BOX, str(box)) for part in argv]
    popen_env = {k: v.replace(BOX, str(box)) for k, v in full_env.items()}
    return _Command(command, popen_env, str(box), uid, quota, False)


@dataclass
class _Partner:
    """The partner of a two-process test, built: its bubblewrap command, and the two
    pipes' ends of each side (`theirs` go to the partner, `ours` to the test side)."""

    command: list[str]
    theirs: tuple[int, int]
    ours: tuple[int, int]


def _execute(
    backend: Backend,
    own: _Command,
    stdin: bytes,
    limits: RunLimits,
    compile_step: bool,
    partner: _Partner | None = None,
    trailer: tuple[int, int] | None = None,
) -> RunResult:
    """Start `own` (after `partner`'s sandbox, where there is one) and see it to its end.

    What the commands need is made in one go per module, the partner's first: the
    seccomp filter fds, then the cgroups; then both are started and `own` read to its
    end (`runs`); then the cgroups are read and removed. The partner's output joins
    `own`'s stderr (feedback, and the output cap, as in one sandbox); what is left of
    it is killed when `own` ends.
    """
    status_read, status_write, options = _status_pipe(own)
    partner_filter, partner_filter_fds = seccomp.bwrap_args() if partner else ([], ())
    own_filter, own_filter_fds = seccomp.bwrap_args() if own.bwrap else ([], ())
    memory = limits.memory_mib * _MIB
    partner_cgroup = None
    if partner is not None:
        partner_cgroup = backend.cgroups.create(memory, limits.processes, RUN_CPU_QUOTA)
    cgroup = backend.cgroups.create(memory, limits.processes, own.cpu_quota)
    pin = None if compile_step or (cgroup is not None and cgroup.caps_cpu) else backend.cpu
    status = () if status_write is None else (status_write,)
    passed = (*(partner.ours if partner else ()), *status, *own_filter_fds)
    passed += (trailer[1],) if trailer else ()
    command = own.argv
    if own.bwrap:
        command = [command[0], *options, *own_filter, *command[1:]]
    process: subprocess.Popen[bytes] | None = None
    side_read: int | None = None
    try:
        try:
            if partner is not None:
                side_read, side_write = os.pipe()
                started = _start_partner(
                    backend,
                    [partner.command[0], *partner_filter, *partner.command[1:]],
                    (*partner.theirs, *partner_filter_fds),
                    partner_cgroup,
                    limits,
                    side_write,
                )
                if isinstance(started, str):
                    for fd in passed:  # never handed to `own`, which does not start
                        os.close(fd)
                    return RunResult(None, None, b"", b"", 0.0, setup_error=started)
                process = started
            result = _supervise(
                command,
                own.env,
                own.cwd,
                stdin,
                limits,
                own.uid,
                cgroup,
                passed,
                pin,
                side_read,
                trailer[0] if trailer else None,
            )
            exited = status_read is None or _command_exited(status_read)
        finally:
            if status_read is not None:
                os.close(status_read)
            usage = cgroup.finish() if cgroup is not None else None
        _settle(result, usage, exited)
        if process is not None and result.exit_code != 0:
            result.partner_cpu_limited = ran_out_of_cpu(process.pid, limits)
        return result
    finally:
        _release(process, side_read, trailer, partner_cgroup)


def _release(
    process: subprocess.Popen[bytes] | None,
    side_read: int | None,
    trailer: tuple[int, int] | None,
    partner_cgroup: RunCgroup | None,
) -> None:
    """What `_execute` holds once `own` has ended: what is left of the partner killed and
    reaped, our ends of the side and trailer pipes closed, the partner's cgroup removed."""
    if process is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            process.wait()
        reaping.track(process.pid, running=False)
    if side_read is not None:
        os.close(side_read)
    if trailer is not None:
        os.close(trailer[0])
    if partner_cgroup is not None:
        partner_cgroup.destroy()


def _status_pipe(own: _Command) -> tuple[int | None, int | None, list[str]]:
    """(read end, write end, bwrap's options) of the pipe bwrap's monitor records the
    command's exit on; none without bwrap.

    A run that ended without that record (and was not killed by us) failed to set up.
    The sandboxed program cannot reach the monitor (another pid namespace), so it cannot
    make its own failure look like a broken sandbox: what it writes to stderr is never
    consulted for that. `_supervise` closes our write end."""
    if not own.bwrap:
        return None, None, []
    status_read, status_write = os.pipe()
    return status_read, status_write, ["--json-status-fd", str(status_write)]


def _start_partner(
    backend: Backend,
    command: list[str],
    fds: tuple[int, ...],
    cgroup: RunCgroup | None,
    limits: RunLimits,
    side_write: int,
) -> subprocess.Popen[bytes] | str:
    """The partner started in its cgroup (pinned to the backend's CPU where the cgroup
    cannot cap it), or why it could not start."""
    capped = cgroup is not None and cgroup.caps_cpu
    return start_partner(
        command,
        limits,
        backend.partner_uid,
        cgroup,
        fds,
        None if capped else backend.cpu,
        side_write,
    )


def _settle(result: RunResult, usage: CgroupUsage | None, exited: bool) -> None:
    """What the cgroup saw of a run that started (its OOM kill, its peak memory), and a
    run that ended without bwrap's exit record, unkilled, as a sandbox that failed to
    set up."""
    if usage is not None and result.setup_error is None:  # it started: these are its
        result.oom_killed = usage.oom_killed
        if usage.peak_memory_kib is not None:
            result.peak_memory_kib = usage.peak_memory_kib
    killed = result.timed_out or result.output_exceeded or result.oom_killed
    if not exited and not killed and result.setup_error is None:
        reason = result.stderr.decode("utf-8", "replace").strip()[-500:]
        result.setup_error = f"bubblewrap could not set up the sandbox: {reason}"


def _run_with_trailer(
    backend: Backend,
    argv: Sequence[str],
    box: Path,
    stdin: bytes,
    limits: RunLimits,
    env: dict[str, str],
    binds: Sequence[tuple[str, str, bool]],
) -> RunResult:
    """A run with a trailer channel (`run`'s `trailer`): a pipe made for it, whose write
    end only the command's own wrapper is told of; ours is closed once it started."""
    read_end, write_end = os.pipe()
    isolated = "1" if backend.name == "bwrap" else "0"
    values = {"{trailer}": str(write_end), "{isolated}": isolated}
    filled = [values.get(part, part) for part in argv]  # whole arguments only
    own = _build(backend, filled, box, limits, env, binds, False)
    return _execute(backend, own, stdin, limits, False, trailer=(read_end, write_end))


def _run_pair(
    backend: Backend,
    argv: Sequence[str],
    partner: Sequence[str],
    box: Path,
    solution_box: Path,
    stdin: bytes,
    limits: RunLimits,
    env: dict[str, str],
    binds: Sequence[tuple[str, str, bool]],
) -> RunResult:
    """The two sandboxes of a `run` with a partner: the solution's over `solution_box`."""
    requests_read, requests_write = os.pipe()
    replies_read, replies_write = os.pipe()
    for fd in (requests_read, replies_read):
        # Runtimes that can only open a path (Java: /proc/self/fd/N) reopen these as
        # their sandbox uid; /proc/PID/fd of another uid's process stays out of reach.
        os.fchmod(fd, 0o666)
    own = {"requests": str(requests_write), "replies": str(replies_read)}
    theirs = {"requests": str(requests_read), "replies": str(replies_write)}
    command = [
        *bind_args(solution_box, False, limits, binds, base_env(env), "/work"),
        *[part.format(**theirs) for part in partner],
    ]
    own_argv = [part.format(**own) for part in argv]
    # A runtime whose arguments are not its own (Rust's test harness) takes the
    # channel's descriptors from its environment: "{requests}" / "{replies}".
    placeholders = {"{" + name + "}": fd for name, fd in own.items()}
    own_env = {key: placeholders.get(value, value) for key, value in env.items()}
    test_side = _build(backend, own_argv, box, limits, own_env, binds, False)
    pair = _Partner(command, (requests_read, replies_write), (requests_write, replies_read))
    return _execute(backend, test_side, stdin, limits, False, pair)


def solution_box_of(box: Path, solution_files: Sequence[str]) -> Path:
    """A sibling of `box` holding only `solution_files` (hard links where possible), for
    the solution's sandbox: nothing of the test side is in it."""
    solution_box = prepare_box(box.parent, None)
    for name in solution_files:
        source, target = box / name, solution_box / name
        if not source.exists():
            continue  # the compile did not make it: the partner fails to start, seen there
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(source), str(target))
    for path in [solution_box, *solution_box.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)
    return solution_box


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def prepare_box(parent: Path, owner: int | None) -> Path:
    """A fresh folder for one program, owned by the compile uid (so compilers may write).

    Here, beside `bind_args` that mounts it and `solution_box_of` that makes a partner's:
    the box is part of building a sandbox, not of running a process in it."""
    parent.mkdir(parents=True, exist_ok=True)
    box = Path(tempfile.mkdtemp(dir=parent))
    os.chmod(box, 0o755)
    if owner is not None:
        os.chown(box, owner, owner)
    return box


def remove_box(box: Path) -> None:
    """Remove a box made by `prepare_box` and everything in it."""
    shutil.rmtree(box, ignore_errors=True)
