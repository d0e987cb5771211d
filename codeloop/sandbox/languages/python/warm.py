"""The warm Python sandbox of one worker: a fork per check instead of a fresh sandbox.

A Python function test costs two interpreter starts and a bubblewrap setup in a cold
sandbox (`harness.run`), about 40 ms of a ~60 ms check. Here each worker keeps one
long-lived bubblewrap sandbox whose only program is `languages/python/box/_codeloop_zygote.py`; for
every check it clones a process with its own user, mount, pid, IPC, UTS and network
namespaces, fresh tmpfs folders, the program on a read-only /box, the check's own
cgroup and rlimits, no capabilities and the seccomp filter (see the zygote's
docstring). Each check still runs as the worker's uid, in a process the zygote never
shares anything with afterwards.

The worker talks to the zygote over a SOCK_SEQPACKET socket: one message per check (a
JSON header plus the check's fds: stdin, stdout, stderr, a report socket, the program
in a memfd, and the cgroup.procs files to join). The check's pid 1 says "ready" on the
report socket; with SO_PASSCRED the kernel hands us its pid in our namespace, so we
hold a pidfd to kill the whole check by, and say `go`. When it ends, its parent (the
zygote, or with CODELOOP_WARM_CLONE=off an intermediate process) reports the exit
status and CPU time on the same socket. A test that ran to its end needs neither: its
driver prints the nonce last and closes its output, and the worker moves on while the
process is still exiting (`_run`).

Where the zygote cannot start (no nested user namespaces, an old kernel), `start`
returns why and the worker uses the cold sandbox: slower, equally isolated.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import json
import os
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass

from codeloop.sandbox import harness, seccomp
from codeloop.sandbox.cache import cache_root
from codeloop.sandbox.cgroups import RunCgroup
from codeloop.sandbox.languages.python import box as pybox

ZYGOTE = pybox.ZYGOTE
READY_NAME = "codeloop-ready"
"""The name the zygote gives a check process made ahead (see the zygote), until its check
arrives."""
_HOST_DIR = "/codeloop-pybox"
_START_TIMEOUT_S = 20.0
_READY_TIMEOUT_S = 10.0
_REPORT_TIMEOUT_S = 5.0
AHEAD = 2
"""Check processes a worker keeps made ahead. Joining a cgroup v1 waits for an RCU grace
period, now and then longer than a whole check (13% of HumanEval checks waited for
their process, 7 ms on average, with one made ahead); two hide it."""
_MIB = 1 << 20
_ZYGOTE_LIMITS = harness.RunLimits(
    wall_s=0,  # unused: the zygote lives as long as its worker
    cpu_s=0,
    memory_mib=0,
    output_bytes=0,
    processes=0,
    workdir_mib=1,
)
"""Only the tmpfs sizes of the zygote's own sandbox; each check sets its own limits."""


def _zygote_setup(uid: int | None) -> None:
    """Before exec of the zygote's bwrap: a session of its own, the worker's run uid.

    No rlimits: each check lowers its own, and a hard limit set here could not be
    raised there.
    """
    os.setsid()
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def enabled() -> bool:
    """Whether workers use the warm sandbox for Python function tests (CODELOOP_WARM)."""
    return os.environ.get("CODELOOP_WARM", "").lower() not in ("off", "0", "no")


def direct_clone() -> bool:
    """Whether the zygote makes each check's process in one clone(2) call, or through an
    intermediate process (CODELOOP_WARM_CLONE=off: the way before, kept for the bench and
    for architectures whose clone number the zygote does not know)."""
    return os.environ.get("CODELOOP_WARM_CLONE", "").lower() not in ("off", "0", "no")


def _key(limits: harness.RunLimits) -> tuple[int, int, int]:
    """What a prepared check was made for (its cgroup's limits, its tmpfs size)."""
    return limits.memory_mib, limits.processes, limits.workdir_mib


def _spec(prepared: _Prepared, limits: harness.RunLimits, script: bool) -> dict[str, object]:
    """The rlimits the zygote sets on a check: CPU, file size, open files, processes, and
    an address space where the memory cgroup cannot cap memory (or the language asks);
    and what it runs: the test driver, or (`script`) the program as `python3 main.py`."""
    capped = prepared.cgroup is not None and prepared.cgroup.caps_memory
    space = None
    if limits.address_space or not capped:
        space = (
            limits.memory_mib + (0 if limits.address_space else limits.virtual_overhead_mib)
        ) * _MIB
    return {
        "cpu_s": harness.cpu_limit_s(limits),
        "file_size": limits.file_size_mib * _MIB,
        "open_files": limits.open_files,
        "address_space": space,
        "processes": limits.processes,
        "mode": "script" if script else "driver",
    }


def _hand_over(
    report: socket.socket,
    spec: dict[str, object],
    program: bytes,
    stdin: bytes,
    out_write: int,
    err_write: int,
) -> OSError | None:
    """Send the prepared check its spec and fds (stdin and the program in memfds, the
    output pipes' write ends); ours are closed either way. The error, when it is gone."""
    code = os.memfd_create("program", os.MFD_CLOEXEC)
    stdin_fd = os.memfd_create("stdin", os.MFD_CLOEXEC)
    try:
        os.write(code, program)
        os.lseek(code, 0, os.SEEK_SET)
        os.write(stdin_fd, stdin)
        os.lseek(stdin_fd, 0, os.SEEK_SET)
        fds = [stdin_fd, out_write, err_write, code]
        socket.send_fds(report, [json.dumps(spec).encode()], fds)
    except OSError as error:
        return error
    finally:
        for fd in (stdin_fd, out_write, err_write, code):
            os.close(fd)
    return None


def _setup_error(reason: str) -> harness.RunResult:
    return harness.RunResult(None, None, b"", b"", 0.0, setup_error=reason)


@dataclass
class _Prepared:
    """A check process the zygote made ahead: its report socket and cgroup."""

    report: socket.socket
    cgroup: RunCgroup | None
    key: tuple[int, int, int]

    def close(self) -> None:
        """Drop it (its process exits when the socket closes) and its cgroup."""
        self.report.close()
        if self.cgroup is not None:
            self.cgroup.destroy()


class WarmPython:
    """One worker's zygote: started on first use, restarted if it dies."""

    def __init__(self, backend: harness.Backend) -> None:
        self.backend = backend
        self._process: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self.problem: str | None = None
        """Why the warm sandbox cannot run here (then the worker stays cold)."""
        self._ahead: collections.deque[_Prepared] = collections.deque()
        """Check processes made ahead, oldest first (at most AHEAD)."""
        self._finished: list[_Prepared] = []
        self._intermediate = True
        """Whether a check's cgroup also holds the zygote's intermediate process (C)."""

    # -- life cycle ----------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The zygote's bwrap process (None: not running); its tree is this worker's."""
        return self._process.pid if self._process is not None else None

    def __del__(self) -> None:
        # A worker that forgot close(): its zygote and prepared check go with it now, not
        # at interpreter exit (a long-lived process would otherwise gather zygotes).
        with contextlib.suppress(Exception):
            self.stop()

    def start(self) -> str | None:
        """Start the zygote if it is not running; why it cannot run, or None."""
        if self._process is not None and self._process.poll() is None:
            return None
        self.stop()
        if self.backend.name != "bwrap":
            return "the warm sandbox needs bubblewrap"
        try:
            folder = pybox.installed(cache_root())
        except OSError as error:
            return f"cannot install the warm sandbox's files under {cache_root()}: {error}"
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        limits = _ZYGOTE_LIMITS
        args = harness.bind_args(None, False, limits, [(str(folder), _HOST_DIR, False)], {}, "/")
        # The zygote creates a user namespace per check, so not --disable-userns; the
        # checks themselves get no further one (it sets their limit to zero), and it
        # loads the seccomp filter into each check, not into itself.
        args = [arg for arg in args if arg != "--disable-userns"]
        command = [
            *args,
            "/usr/bin/python3",
            "-S",
            "-E",
            "-B",
            f"{_HOST_DIR}/{ZYGOTE}",
            str(theirs.fileno()),
        ]
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env={},
                cwd="/",
                close_fds=True,
                pass_fds=(theirs.fileno(),),
                preexec_fn=lambda: _zygote_setup(self.backend.zygote_uid),
            )
        except (OSError, subprocess.SubprocessError) as error:
            theirs.close()
            ours.close()
            return f"cannot start the warm sandbox: {error}"
        theirs.close()
        self._control = ours
        harness.keep_child(self._process.pid)
        program = seccomp.program() if seccomp.available() else b""
        try:
            ours.settimeout(_START_TIMEOUT_S)
            ours.send(json.dumps({"seccomp": program.hex(), "clone": direct_clone()}).encode())
            answer = ours.recv(64)
            if answer not in (b"ready", b"ready clone"):
                raise OSError("no handshake")
            self._intermediate = answer == b"ready"
            ours.settimeout(None)
        except OSError as error:
            detail = self._stderr_of_dead_zygote()
            self.stop()
            return f"the warm sandbox did not start ({error}): {detail}"
        return None

    def _stderr_of_dead_zygote(self) -> str:
        process = self._process
        if process is None or process.stderr is None:
            return ""
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.kill()
            _out, err = process.communicate(timeout=2)
            return err.decode("utf-8", "replace")[-500:]
        return ""

    def stop(self) -> None:
        self._drop_prepared()
        self._clean_up(wait=True)
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            self._process.wait()
            harness.keep_child(self._process.pid, kept=False)
            if self._process.stderr is not None:
                self._process.stderr.close()
            self._process = None

    # -- one check -----------------------------------------------------------------------

    def _prepare(self, limits: harness.RunLimits, retire: bool = False) -> _Prepared | str:
        """Have the zygote make the next check's process (namespaces, cgroups) now.

        `retire`: first remove the cgroups of finished checks (`_clean_up`), so that a
        check's cgroup work (removing the last ones, making the next one) is one pass
        over the cgroup manager, between the zygote's start and its message."""
        problem = self.start()  # first: the zygote's answer says what pids.max must hold
        if problem is not None:
            return problem
        if retire:
            self._clean_up()
        # pids.max: the check's own processes, and C waiting for them where there is one.
        pids = limits.processes + (1 if self._intermediate else 0)
        cgroup = self.backend.cgroups.create(limits.memory_mib * _MIB, pids, harness.RUN_CPU_QUOTA)
        pin = None if cgroup is not None and cgroup.caps_cpu else self.backend.cpu
        report, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        report.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        procs: list[int] = []
        try:
            procs = [os.open(path, os.O_WRONLY) for path in (cgroup.procs_files if cgroup else [])]
            header = {"cpu": pin, "workdir_bytes": limits.workdir_mib * _MIB}
            failure = self._send(json.dumps(header).encode(), [theirs.fileno(), *procs])
        finally:
            for fd in procs:
                os.close(fd)
            theirs.close()
        if failure is not None:
            report.close()
            if cgroup is not None:
                cgroup.destroy()
            return failure
        return _Prepared(report, cgroup, _key(limits))

    def _drop_prepared(self) -> None:
        while self._ahead:
            self._ahead.popleft().close()

    def _make_ahead(self, limits: harness.RunLimits) -> None:
        """Have AHEAD check processes waiting for checks with these limits, and remove
        the cgroups of finished checks (with the first one made, in the same pass)."""
        retire = True
        while len(self._ahead) < AHEAD:
            made = self._prepare(limits, retire)
            retire = False  # done there (or by the zygote's restart, which stops all)
            if isinstance(made, str):
                return  # the next check makes its own, and says why if it cannot
            self._ahead.append(made)
        if retire:
            self._clean_up()

    def check(
        self,
        program: bytes,
        stdin: bytes,
        limits: harness.RunLimits,
        finished: str | None = None,
        script: bool = False,
    ) -> harness.RunResult:
        """Run one Python function test (the driver reads `stdin`) in a fresh process;
        with `script`, `program` itself on `stdin`, as `python3 main.py` runs it (the
        zygote's `_script`).

        The check runs in a process made ahead during earlier checks (when it was made
        for the same limits), and the queue is topped up while this one runs. A
        prepared process that is gone (its zygote died since) is replaced once.
        `finished`: the line the driver prints last after a complete test (its nonce);
        a check whose output ends in it and then closes is over before its process has
        exited (see `_run`).
        """
        prepared = self._ahead.popleft() if self._ahead else None
        if prepared is not None and prepared.key != _key(limits):
            prepared.close()
            prepared = None
            self._drop_prepared()  # made for other limits, as all queued after it
        while True:
            reused = prepared is not None
            if prepared is None:
                made = self._prepare(limits)
                if isinstance(made, str):
                    return _setup_error(made)
                prepared = made
            result = self._run(prepared, program, stdin, limits, finished, script)
            if prepared.cgroup is not None:
                usage = prepared.cgroup.usage()
                result.oom_killed = usage.oom_killed
                if usage.peak_memory_kib is not None:
                    result.peak_memory_kib = usage.peak_memory_kib
            # Removing the cgroup waits for its last process: done after the next `go`.
            self._finished.append(prepared)
            if result.setup_error is None or not reused:
                return result
            prepared = None

    def _clean_up(self, wait: bool = False) -> None:
        """Remove the cgroups of finished checks (and close their sockets).

        Without `wait`, a check whose process is still exiting (its cgroup not yet
        empty: one that ended by its output, see `_run`) is left for the next clean-up,
        so that no check waits for another's teardown.
        """
        still_exiting = []
        for prepared in self._finished:
            if prepared.cgroup is None or wait:
                prepared.close()
            elif prepared.cgroup.remove_if_idle():
                prepared.report.close()  # its process is gone with its cgroup
            else:
                still_exiting.append(prepared)
        self._finished = still_exiting

    def _run(
        self,
        prepared: _Prepared,
        program: bytes,
        stdin: bytes,
        limits: harness.RunLimits,
        finished: str | None,
        script: bool = False,
    ) -> harness.RunResult:
        """One check in a prepared process.

        Its result comes with the exit status and rusage the zygote reports once the
        process has exited, except after a complete test: the driver prints its nonce
        last and closes its output (the zygote's `_inside`), and nothing but the driver
        can write that stdout or knows the nonce, so a stdout that ends in it and then
        closes is a test that ran to its end, exit status 0. The process is killed and
        left to finish exiting (its cgroup removed at a later clean-up) while the worker
        goes on, instead of waiting for the teardown of its memory and namespaces (0.6 ms
        of a 6.7 ms check with one worker, bench/warm_end.py). Its CPU time is then not
        reported; a test that completed was not stopped by its limit, which is all a
        verdict reads it for.
        """
        report = prepared.report
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        pidfd = None
        try:
            sent = time.monotonic()
            spec = _spec(prepared, limits, script)
            gone = _hand_over(report, spec, program, stdin, out_write, err_write)
            if gone is not None:
                return _setup_error(f"the warm sandbox's prepared check is gone: {gone}")
            pid, failure = self._ready(report)
            if pid is None:
                return _setup_error(failure)
            pidfd = os.pidfd_open(pid)
            started = time.monotonic()
            setup_ms = (started - sent) * 1000
            with contextlib.suppress(OSError):  # a check that died already is seen below
                report.send(b"g")
            # Made now, the next checks' namespaces and cgroup joins overlap this run, as
            # does removing the last check's cgroup.
            self._make_ahead(limits)
            marker = finished.encode() if finished else None
            output = harness.collect_output(
                out_read, err_read, pidfd, started, limits, finished=marker
            )
            exited = time.monotonic()
            with contextlib.suppress(ProcessLookupError):
                # pid 1 of the check: its namespace dies with it.
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            ended = {"exit": 0} if output.ended else self._report(report)
            wall_ms = (time.monotonic() - started) * 1000
            phases = {
                "setup": setup_ms,
                "program": (exited - started) * 1000,
                "clean-up": (time.monotonic() - exited) * 1000,
            }
        finally:
            for fd in (out_read, err_read):
                os.close(fd)
            if pidfd is not None:
                os.close(pidfd)
        if "error" in ended:
            return _setup_error(ended["error"])
        if "exit" not in ended:
            # The intermediate process always reports, even for a check we killed; without
            # its report the zygote died under the check (which was killed with it), so
            # the run says nothing about the program and is not a verdict.
            return _setup_error("the warm sandbox died during the check")
        return harness.finished_run(
            int(ended["exit"]),
            output,
            wall_ms,
            int(ended.get("maxrss_kib", 0)),
            float(ended.get("cpu_s", 0.0)),
            limits,
            phases,
        )

    def _send(self, header: bytes, fds: list[int]) -> str | None:
        """Hand a message to the zygote, restarting it once if it has gone; why not, or None."""
        for attempt in (1, 2):
            problem = self.start()
            if problem is not None:
                return problem
            assert self._control is not None
            try:
                socket.send_fds(self._control, [header], fds)
                return None
            except OSError as error:
                self.stop()
                if attempt == 2:
                    return f"the warm sandbox is gone: {error}"
        return None

    def _ready(self, report: socket.socket) -> tuple[int | None, str]:
        """The check's pid in our namespace once it is ready, or why it is not."""
        report.settimeout(_READY_TIMEOUT_S)
        try:
            data, ancillary, _flags, _address = report.recvmsg(
                1 << 16, socket.CMSG_SPACE(struct.calcsize("3i"))
            )
        except OSError as error:
            return None, f"the warm sandbox did not answer: {error}"
        finally:
            report.settimeout(None)
        if data != b"r":
            try:
                return None, str(json.loads(data)["error"])
            except (ValueError, KeyError, TypeError):
                return None, f"the warm sandbox said {data[:200]!r}"
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid, _uid, _gid = struct.unpack("3i", payload[: struct.calcsize("3i")])
                if pid > 0:
                    return pid, ""
        return None, "the warm sandbox's check sent no credentials"

    @staticmethod
    def _report(report: socket.socket) -> dict:
        """How the check ended, from the zygote's intermediate process."""
        report.settimeout(_REPORT_TIMEOUT_S)
        try:
            while True:
                data = report.recv(1 << 16)
                if not data:
                    return {}
                if data != b"r":
                    return json.loads(data)
        except (OSError, ValueError):
            return {}
