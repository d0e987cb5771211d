"""A warm Python sandbox: forks one fresh, isolated process tree per check (inside bwrap).

Runs as the worker's sandbox uid inside a long-lived bubblewrap sandbox (no network,
own pid space, read-only system folders) and only ever runs this trusted code: it has
imported the test driver, the solution server and the codec once, so a check costs a
fork instead of two interpreter starts and a bubblewrap setup.

For each check (see `codeloop/sandbox/languages/python/warm.py`), made ahead while
earlier ones run:
  zygote --clone--> G, in one clone(2) call: a new user, mount, pid, IPC, UTS and
              network namespace, G being pid 1 of the new pid namespace. G maps only
              our own uid, joins the check's cgroups (the cgroup.procs fds came with
              the "prepare" message), mounts a fresh /proc and fresh size-limited
              tmpfs on /tmp, /work and /dev/shm, makes `/` and `/dev` read-only and
              forbids further user namespaces; then it waits (named READY_NAME). On the
              check's message (limits, stdin, stdout, stderr and the program, on the
              report socket): the program on a read-only tmpfs at /box, rlimits, every
              capability dropped, the seccomp filter, then the test driver (which forks
              the solution's process before it reads the nonce). The zygote waits for G
              (a pidfd per check in its poll loop) and reports its status and rusage on
              the report socket.
Where clone(2) cannot be called directly (an architecture whose syscall number we do
not know, or CODELOOP_WARM_CLONE=off), an intermediate process C does it in two steps:
zygote --fork--> C: unshare the namespaces, map the uid, join the cgroups, fork G (pid 1
of the new pid namespace), wait for it and report. That costs one more copy of the
interpreter per check, which is most of why the direct clone exists.
So each check has its own pid namespace (when G exits, everything the check started
dies with it), its own files, IPC objects and sockets, and its own copy of the
interpreter: nothing a check changes (files, processes, builtins, sys.modules,
globals) reaches the next one, which is cloned from the untouched zygote.
"""

import atexit
import contextlib
import ctypes
import fcntl
import json
import os
import platform
import resource
import select
import signal
import socket
import struct
import sys
import traceback

import _codeloop_driver as driver
import _codeloop_script as script

libc = ctypes.CDLL(None, use_errno=True)

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_CAPBSET_DROP = 24
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
MAX_FDS = 16
NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET
SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(platform.machine())
"""clone(2)'s number where we know it (both take flags first and accept zeros after)."""
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFREQ = "16sH14x"
"""struct ifreq with its flags member: the interface's name, then short ifr_flags."""
READY_NAME = "codeloop-ready"
"""The name (comm) of a check process made ahead, until its check arrives."""


class SetupError(Exception):
    """The check's sandbox could not be built (reported as an environment error)."""


def _call(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(error)}")


def _mount(source, target, fstype, flags, data=None):
    _call(
        libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _write(path, text):
    with open(path, "w") as handle:
        handle.write(text)


class _Filter(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Lockdown:
    """What a check process does last before the driver runs: drop every capability,
    load the worker's seccomp filter. Made once in the zygote (the filter laid out for
    prctl, the kernel's last capability number read), so a check only makes the calls."""

    def __init__(self, program):
        self.program = program
        self.buffer = ctypes.create_string_buffer(program, len(program))
        self.fprog = _Filter(len(program) // 8, ctypes.cast(self.buffer, ctypes.c_void_p))
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            self.last_cap = int(handle.read())

    def apply(self):
        _drop_capabilities(self.last_cap)
        if self.program:
            fprog = ctypes.byref(self.fprog)
            _call(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0), "seccomp")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _drop_capabilities(last_cap):
    """Empty the bounding set, then every capability set (the new user namespace gave
    G all of them there; the program runs with none, and no_new_privs keeps it so)."""
    for cap in range(last_cap + 1):
        _call(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop the bounding set")
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _call(libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")
    left = (_CapData * 2)()
    _call(libc.capget(ctypes.byref(header), ctypes.byref(left)), "capget")
    if any(
        getattr(part, name) for part in left for name in ("effective", "permitted", "inheritable")
    ):
        raise SetupError("capabilities remained after dropping them")


def _limits(spec):
    cpu = spec["cpu_s"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (spec["file_size"], spec["file_size"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (spec["open_files"], spec["open_files"]))
    if spec.get("address_space"):
        resource.setrlimit(resource.RLIMIT_AS, (spec["address_space"], spec["address_space"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (spec["processes"], spec["processes"]))


def _set_name(name):
    libc.prctl(PR_SET_NAME, name.encode(), 0, 0, 0)


_syscall = ctypes.PyDLL(None, use_errno=True).syscall
"""libc's syscall(2) through PyDLL: the GIL stays held across the call, so a child made
by it starts holding it, as after os.fork."""
_syscall.restype = ctypes.c_long
_syscall.argtypes = [ctypes.c_long] * 6


def _clone(flags):
    """fork(), but into new namespaces in one step: the child is pid 1 of its own pid
    namespace. Python's own fork hooks run around it, as os.fork runs them (the import
    lock and thread state re-made in the child, random reseeded). glibc's fork wrapper
    is not run: the zygote is single-threaded and holds no libc lock here, and since
    glibc 2.34 nothing a check's process calls reads glibc's cached thread id (raise
    and abort ask the kernel)."""
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = _syscall(SYS_CLONE, flags | signal.SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    error = ctypes.get_errno()
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(error, f"clone: {os.strerror(error)}")
    return pid


def _enter(spec, cgroups, ids):
    """In the check's fresh user namespace: map our own uid and gid (`ids`, read before:
    unmapped, they read as the overflow id here), join the check's cgroups, take its
    CPU."""
    uid, gid = ids
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    for fd in cgroups:
        os.write(fd, b"0")  # cgroup.procs, opened by the worker: "0" moves the writer
        os.close(fd)
    if spec.get("cpu") is not None:
        os.sched_setaffinity(0, {spec["cpu"]})


def _loopback_up():
    """Bring up the check's own `lo`, as bubblewrap does for a cold run's network
    namespace: a program that serves on 127.0.0.1 and calls itself (SandboxFusion's
    network tests) then runs the same warm and cold. The namespace is the check's alone:
    nothing outside it is reachable either way."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        current = fcntl.ioctl(probe, SIOCGIFFLAGS, struct.pack(IFREQ, b"lo", 0))
        flags = struct.unpack(IFREQ, current)[1]
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))


def _inside(spec, report, lockdown):
    """G: pid 1 of the check's namespaces. Builds its world ahead of the check, waits for
    it, then locks itself down and runs the driver."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.setsid()
    _set_name(READY_NAME)
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    size = f"size={spec['workdir_bytes']},mode=755"
    for path in ("/tmp", "/work", "/dev/shm"):
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, size)
    _mount("tmpfs", "/box", "tmpfs", MS_NOSUID | MS_NODEV, f"size={1 << 20},mode=755")
    locked = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
    _mount("none", "/", None, locked)
    _mount("none", "/dev", None, locked)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _write("/proc/sys/user/max_user_namespaces", "0")
    _loopback_up()

    reporter = socket.socket(fileno=report)
    message, fds, _flags, _address = socket.recv_fds(reporter, 1 << 16, MAX_FDS)
    reporter.detach()  # the fd stays ours, without an owner that may close it
    if not message:
        os._exit(0)  # the worker dropped this prepared check
    check = json.loads(message)
    if len(fds) != 4:
        raise SetupError("a check needs 4 fds")
    stdin, stdout, stderr, program = fds
    _set_name("python3")
    data = b""
    while chunk := os.read(program, 1 << 16):
        data += chunk
    os.close(program)
    with open("/box/main.py", "wb") as handle:
        handle.write(data)
    os.chmod("/box/main.py", 0o644)
    _mount("none", "/box", None, locked)
    _limits(check)
    for target, fd in ((0, stdin), (1, stdout), (2, stderr)):
        os.dup2(fd, target)
    os.umask(0o022)
    lockdown.apply()
    os.chdir("/work")
    # Tell the worker our pid (the kernel translates it into the worker's namespace),
    # and start only when it says so: it holds a pidfd to kill us by from then on.
    os.write(report, b"r")
    if os.read(report, 1) != b"g":
        os._exit(125)
    for fd in {stdin, stdout, stderr, report}:
        if fd > 2:
            os.close(fd)
    os.closerange(3, 1 << 16)
    # Bound before the program runs: it may rebind os._exit, os.close or builtins (an
    # anti-cheat prelude's `os._exit = None`), which must not change how this ends.
    close, exit_now, error_type = os.close, os._exit, OSError
    if check.get("mode") == "script":
        code = _script("/box/main.py", data)
    else:
        code = driver.main(forked=True)
    # The output ends here, before the exit tears this process and its namespaces down
    # (see bench/warm_end.py): a run whose stdout ends in the nonce is then over for the
    # worker (`runs.collect_output`'s `finished`), which needs no exit status for it.
    for fd in (1, 2):
        try:  # noqa: SIM105 (the program closed it itself)
            close(fd)
        except error_type:
            pass
    exit_now(code)


def _script(path, source):
    """A stdio program run as `python3 -S -E -B main.py` runs it (a SandboxFusion-style
    `/run_code`), in this check process, by the same `_codeloop_script.run` the cold path
    runs; then the interpreter's own exit, which the program may not change: non-daemon
    threads waited for, atexit handlers run, sys.stdout and sys.stderr flushed (120 when
    that fails), then the original ones, which the interpreter flushes as it tears down
    (a failure there changes no status). All used after the program is bound before it."""
    modules, system_exit, base_exception = sys.modules, SystemExit, BaseException
    getattr_, status_of, flush = getattr, script.status, _flush
    run_atexit = atexit._run_exitfuncs
    atexit._clear()  # the zygote's own handlers are not the program's
    status = 0
    try:
        script.run(path, source)
    except system_exit as error:
        status = status_of(error.code)
    except base_exception:  # `run` ends every exception in SystemExit; this is a fault
        status = 1
    threading = modules.get("threading")
    if threading is not None:
        try:  # noqa: SIM105 (bound privately: contextlib may be patched)
            threading._shutdown()
        except base_exception:
            pass
    try:  # noqa: SIM105
        run_atexit()
    except base_exception:
        pass
    for name in ("stdout", "stderr"):
        if not flush(getattr_(sys, name, None)):
            status = 120
    for name in ("__stdout__", "__stderr__"):  # restored, flushed; a failure ignored
        flush(getattr_(sys, name, None))
    return status


def _flush(stream, _getattr=getattr, _base=BaseException):
    """Flush one standard stream as the interpreter does at exit: None or closed is left
    alone; False when flushing failed."""
    if stream is None:
        return True
    try:
        if _getattr(stream, "closed", False):
            return True
    except _base:
        pass
    try:
        stream.flush()
    except _base:
        return False
    return True


def _run_g(spec, report, lockdown):
    """G, whichever way it was made: build the check's world, run it; never returns."""
    try:
        _inside(spec, report, lockdown)
    except BaseException as error:
        message = "".join(traceback.format_exception_only(type(error), error)).strip()
        with_error = json.dumps({"error": f"warm sandbox setup: {message}"})
        try:
            os.write(report, with_error.encode())
        finally:
            os._exit(126)
    os._exit(127)


def _ended(status, usage):
    """What the worker learns of a finished G: its exit status and resources."""
    return json.dumps(
        {
            "exit": os.waitstatus_to_exitcode(status),
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "maxrss_kib": usage.ru_maxrss,
        }
    ).encode()


def _prepared(spec, fds, ids, lockdown):
    """C (the two-step way): made ahead of its check (joining a cgroup v1 costs
    milliseconds of RCU wait, and building G's namespaces and mounts some more, paid here
    while the previous check runs): new namespaces, the check's cgroups, G forked; then
    wait for G and report how it ended."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    report, cgroups = fds[0], fds[1:]
    try:
        _call(libc.unshare(NAMESPACES), "unshare")
        _enter(spec, cgroups, ids)  # G, forked next, inherits all of it
        child = os.fork()
    except BaseException as error:
        os.write(report, json.dumps({"error": f"warm sandbox: {error}"}).encode())
        os._exit(1)
    if child == 0:
        _run_g(spec, report, lockdown)
    _pid, status, usage = os.wait4(child, 0)
    with contextlib.suppress(OSError):  # a dropped check's socket is closed
        os.write(report, _ended(status, usage))
    os._exit(0)


class _Checks:
    """The zygote's Gs made by direct clone: each one's pidfd and report socket, until
    it ends and the zygote, its parent, reports how."""

    def __init__(self, control):
        self.control = control
        self.poller = select.poll()
        self.poller.register(control, select.POLLIN)
        self.running = {}  # pidfd -> (pid, report fd)

    def start(self, spec, fds, ids, lockdown):
        report, cgroups = fds[0], fds[1:]
        pid = _clone(NAMESPACES)
        if pid == 0:
            # G, which never returns into the zygote's loop.
            try:
                # Nothing of the zygote's or of other checks' channels stays open here.
                self.control.close()
                for pidfd, (_pid, other) in self.running.items():
                    os.close(pidfd)
                    os.close(other)
                _enter(spec, cgroups, ids)
            except BaseException as error:
                with contextlib.suppress(BaseException):
                    os.write(report, json.dumps({"error": f"warm sandbox: {error}"}).encode())
                os._exit(1)
            try:
                _run_g(spec, report, lockdown)
            finally:
                os._exit(127)
        pidfd = os.pidfd_open(pid)
        self.running[pidfd] = (pid, os.dup(report))
        self.poller.register(pidfd, select.POLLIN)

    def wait(self):
        """Until a message is waiting on the control socket, report every G that ended."""
        while True:
            ready = [fd for fd, _event in self.poller.poll()]
            for fd in ready:
                if fd in self.running:
                    pid, report = self.running.pop(fd)
                    self.poller.unregister(fd)
                    _pid, status, usage = os.wait4(pid, 0)
                    with contextlib.suppress(OSError):  # a dropped check's socket is closed
                        os.write(report, _ended(status, usage))
                    os.close(report)
                    os.close(fd)
            if self.control.fileno() in ready:
                return


def main():
    control = socket.socket(fileno=int(sys.argv[1]))
    hello = json.loads(control.recv(1 << 16))
    lockdown = Lockdown(bytes.fromhex(hello["seccomp"]))
    direct = bool(hello.get("clone")) and SYS_CLONE is not None
    ids = os.getuid(), os.getgid()
    driver.preload()
    checks = _Checks(control) if direct else None
    # Two-step: children are reaped by the kernel, C waits for its own G. Direct: the
    # zygote waits for its Gs itself.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL if direct else signal.SIG_IGN)
    control.send(b"ready clone" if direct else b"ready")
    while True:
        if checks is not None:
            checks.wait()
        try:
            message, fds, _flags, _address = socket.recv_fds(control, 1 << 16, MAX_FDS)
        except OSError:
            return
        if not message:
            return
        try:
            spec = json.loads(message)
            if not fds:
                raise ValueError("a prepared check needs its report socket")
            if checks is not None:
                checks.start(spec, fds, ids, lockdown)
            elif os.fork() == 0:
                control.close()
                _prepared(spec, fds, ids, lockdown)
        except BaseException as error:
            if fds:
                text = json.dumps({"error": f"warm sandbox: {error}"}).encode()
                with contextlib.suppress(OSError):
                    os.write(fds[0], text)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    sys.path[0] = os.path.dirname(os.path.abspath(__file__))
    main()
