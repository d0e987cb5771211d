"""A worker's javac service: one warm JVM compiles every Java program of the worker.

A fresh javac spends most of a HumanEval-X compile starting and warming its JVM (about
0.5 s per half, two halves per check); a JVM that keeps running compiles the same
sources several times faster. The service is `CodeloopJavac --serve` (`box/`) in a
long-lived bubblewrap sandbox of its own, as the compile uid, with the compile steps'
seccomp filter, no network and a memory cap. It only ever sees source text: for each
compile the worker copies the sources into the service's folder (mounted at /box, so
javac's arguments and messages are the one-shot compile's own), sends the argument
groups, and copies back the regular files javac wrote. The folder is emptied before
each compile, and every compile is a fresh javac run, so nothing of one compile is
seen by the next.

Anything unexpected (the service died, a malformed reply, a javac status other than
0 or 1, a file that is not regular) returns None and the caller compiles the one-shot
way, under the usual limits; a compile that outruns its wall limit is a timeout, as
the one-shot compile's would be. `CODELOOP_JAVAC_SERVICE=off` turns the service off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

from codeloop.sandbox import harness, runs, seccomp
from codeloop.sandbox.cgroups import RunCgroup
from codeloop.sandbox.language import BOX, Language
from codeloop.sandbox.languages.java.javac import JAVAC_BATCH_JAR, JAVAC_BATCH_MOUNT, javac_batch
from codeloop.sandbox.testbuild import ONE_TIME_LIMITS, BuildHost

SERVICE_CLASS = "CodeloopJavac"
_MAX_REQUESTS = 400
"""Compiles before the JVM is replaced (bounds what a long life accumulates)."""
_START_GRACE_S = 30.0
"""The first compile also pays the JVM's start: its deadline is this much longer."""
_HEAP = "-Xmx768m"
_LIMITS = dataclasses.replace(
    ONE_TIME_LIMITS,
    wall_s=0,  # unused: the service lives as long as its worker
    cpu_s=24 * 3600,  # RLIMIT_CPU: a JVM that has spent this is replaced
    memory_mib=2048,
)
"""A one-time build's limits (a JVM's threads, address space and output are the same
there), but for the service's long life and its smaller heap."""
_MIB = 1 << 20


def enabled() -> bool:
    """Whether workers compile Java in a javac service (CODELOOP_JAVAC_SERVICE)."""
    return os.environ.get("CODELOOP_JAVAC_SERVICE", "").lower() not in ("off", "0", "no")


def groups_of(argv: list[str], jar: str) -> list[str] | None:
    """The service request equal to the one-shot compile `argv`, or None if it has none.

    Two forms: the batch compiler (`java ... -cp JAR CodeloopJavac GROUPS`) and plain
    javac (`javac -J... OPTIONS FILES`), which gets the options the batch compiler adds
    for the same meaning in a shared JVM: `-proc:none` and, where the command names
    none, the class path javac would default to in a one-shot compile (its working
    folder, /box). A class path the command names (the registry's: the box and the
    libraries) is kept: it means the same in the service's sandbox, which sees /usr.
    """
    if SERVICE_CLASS in argv and jar in argv:
        return argv[argv.index(SERVICE_CLASS) + 1 :]
    if Path(argv[0]).name == "javac":
        options = [arg for arg in argv[1:] if not arg.startswith("-J")]
        if "-classpath" not in options and "-cp" not in options:
            options = ["-classpath", BOX, *options]
        return ["-proc:none", *options]
    return None


class JavacService:
    """One worker's javac JVM: started on first use, replaced when it fails."""

    def __init__(self, backend: harness.Backend, scratch: Path) -> None:
        self.backend = backend
        self.scratch = scratch
        self._process: subprocess.Popen[bytes] | None = None
        self._cgroup: RunCgroup | None = None
        self._folder: Path | None = None
        self._requests = 0
        self._pending = b""

    @property
    def pid(self) -> int | None:
        """The service's bwrap process (None: not running)."""
        return self._process.pid if self._process is not None else None

    @property
    def folder(self) -> Path | None:
        """The host folder the service sees as /box (None: not running)."""
        return self._folder

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()

    def _start(self, language: Language, jar_folder: Path, jar_mount: str, jar: str) -> bool:
        assert language.compile is not None
        self._folder = harness.prepare_box(self.scratch, self.backend.compile_uid)
        env = harness.base_env(dict(language.env))
        binds = [(str(jar_folder), jar_mount, False)]
        args = harness.bind_args(self._folder, True, _LIMITS, binds, env, BOX)
        filter_args, filter_fds = seccomp.bwrap_args()
        jvm = [part[2:] for part in language.compile if part.startswith("-J")]
        jvm = [flag for flag in jvm if not flag.startswith(("-Xshare", "-XX:SharedArchive"))]
        command = [
            args[0],
            *filter_args,
            *args[1:],
            language.run[0],
            *jvm,
            _HEAP,
            "-XX:+ExitOnOutOfMemoryError",
            "-cp",
            f"{jar_mount}/{jar}",
            SERVICE_CLASS,
            "--serve",
        ]
        self._cgroup = self.backend.cgroups.create(_LIMITS.memory_mib * _MIB, _LIMITS.processes)
        procs = self._cgroup.procs_files if self._cgroup else []
        capped = self._cgroup is not None and self._cgroup.caps_memory
        uid = self.backend.compile_uid
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={},
                cwd="/",
                close_fds=True,
                pass_fds=filter_fds,
                preexec_fn=lambda: runs.child_setup(procs, _LIMITS, uid, 0o022, capped),
            )
        except (OSError, subprocess.SubprocessError):
            self.stop()
            return False
        finally:
            for fd in filter_fds:
                os.close(fd)
        harness.keep_child(self._process.pid)
        self._requests = 0
        self._pending = b""
        return True

    def stop(self) -> None:
        """Kill the JVM and its sandbox; remove its folder and cgroup."""
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                process.kill()
            with contextlib.suppress(ChildProcessError, subprocess.TimeoutExpired):
                process.wait(timeout=5)
            for pipe in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):
                    if pipe is not None:
                        pipe.close()
            harness.keep_child(process.pid, kept=False)
        if self._cgroup is not None:
            self._cgroup.destroy()
            self._cgroup = None
        if self._folder is not None:
            harness.remove_box(self._folder)
            self._folder = None

    def compile_program(
        self,
        host: BuildHost,
        language: Language,
        argv: list[str],
        box: Path,
        files: dict[str, bytes],
        limits: harness.RunLimits,
    ) -> harness.RunResult | None:
        """The one-shot compile `argv` done by this service (`home.CompileService`); None
        where it cannot be (no batch compiler jar, a command it has no request for)."""
        batch = javac_batch(host, language)
        if batch is None:
            return None
        request = groups_of(argv, f"{JAVAC_BATCH_MOUNT}/{JAVAC_BATCH_JAR}")
        if request is None:
            return None
        return self.compile(
            language, batch[0], JAVAC_BATCH_MOUNT, JAVAC_BATCH_JAR, request, box, files, limits
        )

    def compile(
        self,
        language: Language,
        jar_folder: Path,
        jar_mount: str,
        jar: str,
        request: list[str],
        box: Path,
        files: dict[str, bytes],
        limits: harness.RunLimits,
    ) -> harness.RunResult | None:
        """Compile `files` (already in `box`) with javac arguments `request`; the outputs
        land in `box`. None: the service could not answer (compile the one-shot way)."""
        if any("\n" in arg or "\0" in arg for arg in request):
            return None
        running = self._process is not None and self._process.poll() is None
        if not running or self._requests >= _MAX_REQUESTS:
            self.stop()
            if not self._start(language, jar_folder, jar_mount, jar):
                return None
        assert self._process is not None and self._folder is not None
        started = time.monotonic()
        grace = _START_GRACE_S if self._requests == 0 else 0.0
        self._requests += 1
        try:
            _empty(self._folder)
            _write_sources(self._folder, files, self.backend.compile_uid)
            reply = self._ask(request, started + limits.wall_s + grace, limits.output_bytes)
        except OSError:
            reply = None
        if reply is None or reply == "timeout":
            self.stop()
            if reply is None:
                return None
            return harness.RunResult(
                None, None, b"", b"", (time.monotonic() - started) * 1000, timed_out=True
            )
        status, stderr, stdout = reply
        try:
            copied = status in (0, 1) and _copy_outputs(self._folder, box, set(files))
        except OSError:
            copied = False
        if not copied:
            self.stop()
            return None
        wall_ms = (time.monotonic() - started) * 1000
        return harness.RunResult(status, None, stdout, stderr, wall_ms)

    def _ask(
        self, request: list[str], deadline: float, output_bytes: int
    ) -> tuple[int, bytes, bytes] | str | None:
        """Send one request, read its reply: (status, stderr, stdout), "timeout" or None."""
        assert self._process is not None
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write("\0".join(request).encode() + b"\n")
        self._process.stdin.flush()
        fd = self._process.stdout.fileno()
        header = self._read_until(fd, deadline, lambda data: b"\n" in data, 64)
        if not isinstance(header, bytes):
            return header
        line, self._pending = header.split(b"\n", 1)
        try:
            status, err_length, out_length = (int(part) for part in line.split())
        except ValueError:
            return None
        size = err_length + out_length
        if min(status, err_length, out_length) < 0 or size > output_bytes:
            return None
        body = self._read_until(fd, deadline, lambda data: len(data) >= size, size)
        if not isinstance(body, bytes) or len(body) != size:
            return None
        self._pending = b""
        return status, body[:err_length], body[err_length:]

    def _read_until(self, fd: int, deadline: float, done: object, limit: int) -> bytes | str | None:
        """Read `fd` into the pending bytes until `done(data)`; "timeout" or None (EOF)."""
        data = self._pending
        while not done(data):  # type: ignore[operator]
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            data += chunk
            if not done(data) and len(data) > limit:  # type: ignore[operator]
                return None
        self._pending = b""
        return data


_OUTPUT_BYTES = 64 << 20
"""Most bytes of class files one compile may hand back."""
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK

# The service's folder is written by a running process of another uid, so the worker
# (root) never follows a path through it: everything below goes through file
# descriptors opened without following symlinks, creates files exclusively and reads
# only what fstat says is a regular file, so nothing the service does meanwhile can
# point the worker at another file of the machine.


def _empty(folder: Path) -> None:
    """Remove everything in `folder` (rmtree walks by descriptors, never into a link)."""
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def _write_sources(folder: Path, files: dict[str, bytes], owner: int | None) -> None:
    """Create `files` in `folder` (new files only; folders the compile uid may write)."""
    for name, content in files.items():
        *parents, leaf = name.split("/")
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for part in parents:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _OPEN_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
                if owner is not None:
                    os.fchown(fd, owner, owner)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS
            out = os.open(leaf, flags, 0o644, dir_fd=fd)
            try:
                view = memoryview(content)
                while view:
                    view = view[os.write(out, view) :]
                if owner is not None:
                    os.fchown(out, owner, owner)
            finally:
                os.close(out)
        finally:
            os.close(fd)


def _copy_outputs(folder: Path, box: Path, sources: set[str]) -> bool:
    """Copy what javac wrote (every regular file but the sources) into `box`.

    False if the folder holds anything but regular files and folders (javac never
    makes one) or more than _OUTPUT_BYTES: the service is not trusted with this compile.
    """
    found: dict[str, bytes] = {}
    total = 0
    for root, dirs, names, dir_fd in os.fwalk(folder, follow_symlinks=False):
        for name in dirs:
            if not stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                return False
        for name in names:
            relative = (Path(root) / name).relative_to(folder).as_posix()
            fd = os.open(name, os.O_RDONLY | _OPEN_FLAGS, dir_fd=dir_fd)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return False
                if relative in sources:
                    continue
                with os.fdopen(os.dup(fd), "rb") as handle:
                    data = handle.read(_OUTPUT_BYTES - total + 1)
            finally:
                os.close(fd)
            total += len(data)
            if total > _OUTPUT_BYTES:
                return False
            found[relative] = data
    for relative, data in found.items():
        target = box / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o644)
    return True
