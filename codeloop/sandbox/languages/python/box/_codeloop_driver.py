"""The test process (inside the sandbox): the only writer of the verdict.

stdin: one JSON line {"nonce", "prompt", "test", "entry_point"}. The nonce is printed
after the whole test ran and called the solution at least once (a test that never
called it prints the nonce + ":vacuous" instead: no verdict); the solution can neither
read it (it was never in a file, and this process is not dumpable) nor stop this
process from printing something else. A float the solution returns that is NaN or
infinite fails the test, whatever the test's comparison says (`abs(a - b) > 1e-4` is
False for NaN).

Run as a script with the fds of two pipes (a cold check: the solution's process runs in
a sandbox of its own, see `harness.run(partner=...)`, and never shares a folder, a pid
namespace or a uid with this one) or by `main(forked=True)` in the warm sandbox, where
the solution's process is forked from this one before it reads its stdin, so the fork
holds nothing secret.
"""

import builtins
import contextlib
import ctypes
import json
import math
import os
import sys
import traceback

import _codeloop_codec as codec
import _codeloop_server as server

PR_SET_DUMPABLE = 4


class SolutionEnded(Exception):
    """The solution's process stopped answering (it exited or was killed)."""


class _Solution:
    """The solution's process and our ends of its two pipes."""

    def __init__(self, pipes=None):
        """`pipes`: (request fd, reply fd) to a solution running in a sandbox of its own;
        None: fork the solution's process here (the warm sandbox)."""
        self.pid = None
        self.calls = 0
        if pipes is None:
            request_read, request_write = os.pipe()
            reply_read, reply_write = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(request_write)
                    os.close(reply_read)
                    null = os.open("/dev/null", os.O_RDONLY)
                    os.dup2(null, 0)
                    os.close(null)
                    server.serve(request_read, reply_write)
                finally:
                    os._exit(1)
            self.pid = pid
            os.close(request_read)
            os.close(reply_write)
        else:
            request_write, reply_read = pipes
        self.requests = os.fdopen(request_write, "wb")
        self.replies = os.fdopen(reply_read, "rb")

    def kill(self):
        if self.pid is None:  # the harness kills the solution's sandbox
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, 9)
        self.wait()

    def wait(self):
        """The solution process's exit status (after it ended); None where it is not our
        child (its own sandbox: the harness sees how it ended)."""
        if self.pid is None:
            return None
        try:
            _pid, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return None
        return os.waitstatus_to_exitcode(status)

    def receive(self):
        message = codec.read(self.replies)
        if message is None:
            raise SolutionEnded("the solution's process ended before answering")
        if type(message) is not dict:
            raise ValueError("malformed reply")
        return message

    def proxy(self, name):
        def call(*args, **kwargs):
            try:
                codec.write(
                    self.requests,
                    {
                        "call": name,
                        "args": codec.encode(list(args)),
                        "kwargs": codec.encode(kwargs),
                    },
                )
            except BrokenPipeError:
                raise SolutionEnded("the solution's process ended") from None
            self.calls += 1
            reply = self.receive()
            if "value" in reply:
                return finite(codec.decode(reply["value"]), name)
            raise solution_error(reply, sys._getframe(1))

        call.__name__ = call.__qualname__ = name
        return call


SIGNALS = (StopIteration, StopAsyncIteration)
"""Builtin exceptions the interpreter reads as "done", not as a failure: one that reaches
map(), zip(), filter(), a for loop or next(it, default) ends it early and silently, so a
test written `assert all(map(...))` would check nothing and pass. From the solution they
arrive as RuntimeError, as PEP 479 does for a StopIteration leaving a generator."""

PROTOCOL_SIGNALS = (LookupError, AttributeError)
"""What a protocol method reads as an answer: IndexError from `__getitem__` ends the
old sequence iteration, KeyError makes Mapping.get return its default, AttributeError
from `__getattr__` makes getattr(obj, name, default) and hasattr() answer. Raised into
such a method (a dunder frame of the test), they too arrive as RuntimeError; raised into
the test's own code they keep their type, so assertRaises(IndexError) still sees one."""


def solution_error(reply, caller):
    """The exception the test sees for a call the solution answered by raising: the
    builtin of that name where it can only mean a failure to the test's code, else a
    RuntimeError naming it (a signal type, a non-builtin or a BaseException such as
    SystemExit or GeneratorExit, whose handling would change the test's control flow)."""
    name = str(reply.get("raise"))
    message = str(reply.get("message", ""))
    kind = getattr(builtins, name, None)
    signal = not (isinstance(kind, type) and issubclass(kind, Exception))
    signal = signal or issubclass(kind, SIGNALS)
    code = caller.f_code.co_name if caller is not None else ""
    if not signal and code.startswith("__") and code.endswith("__"):
        signal = issubclass(kind, PROTOCOL_SIGNALS)
    if not signal:
        try:
            return kind(message)
        except Exception:  # a builtin whose constructor wants more (UnicodeDecodeError)
            pass
    return RuntimeError(f"the solution raised {name}: {message}")


def finite(value, name):
    """`value`, unless a float in it is NaN or infinite: then the test fails. No expected
    value of a test is NaN or infinite, and a NaN slips through comparisons written as
    `abs(a - b) > eps` (False for NaN)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is float and not math.isfinite(item):
            raise AssertionError(f"{name} returned {item!r}, not a finite number")
        if kind is complex and not (math.isfinite(item.real) and math.isfinite(item.imag)):
            raise AssertionError(f"{name} returned {item!r}, not a finite number")
        if kind in (list, tuple, set, frozenset):
            stack.extend(item)
        elif kind is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
    return value


PRELOADED = (
    "typing",
    "math",
    "string",
    "copy",
    "hashlib",
    "heapq",
    "bisect",
    "fractions",
    "decimal",
    "statistics",
    "datetime",
    "random",
)
"""Standard modules that programs and tests import most (typing alone costs a cold
interpreter 5-15 ms): the warm sandbox imports them once, and every check, forked
after, finds them in sys.modules. A check that changes one changes only its own copy,
and random reseeds itself in every forked child (os.register_at_fork), so no check
replays another's numbers."""


def preload():
    """What the warm sandbox imports once (the driver's own modules are imported above)."""
    import importlib

    for name in PRELOADED:
        importlib.import_module(name)


def main(forked=False, pipes=None):
    """Run the test against the solution; the exit code (0 only after the nonce).

    `forked`: fork the solution's process here (the warm sandbox); otherwise `pipes`
    (request fd, reply fd) lead to the solution's own sandbox."""
    # Non-dumpable before anything else: the solution (same uid) can then neither ptrace
    # this process nor read its memory through /proc, not even the forked solution,
    # which starts after this line and before the nonce is read.
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        sys.stderr.write("codeloop driver: could not make the test process non-dumpable\n")
        return 1
    solution = _Solution() if forked else _Solution(pipes)
    setup = json.loads(sys.stdin.readline())
    sys.stdin.close()
    # A test may import the optional scientific runtime too (`_codeloop_script.run`).
    sys.path.append(f"/opt/codeloop-science/python{sys.version_info[0]}.{sys.version_info[1]}")
    os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    try:
        ready = solution.receive()
        names = ready.get("ready")
        if type(names) is not list:
            raise ValueError("malformed handshake")
        namespace = {"__name__": "__main__", "__builtins__": builtins}
        if setup.get("prompt"):
            # A prompt that is not runnable code: the test must do without its helpers.
            with contextlib.suppress(Exception):
                exec(compile(setup["prompt"], "<prompt>", "exec"), namespace)
        entry = setup.get("entry_point")
        if entry:
            namespace[entry] = solution.proxy(entry)
        else:
            # No named entry point: the solution's functions the test may call, but never
            # one that would shadow a builtin the test relies on (abs, len, sorted, ...).
            for name in names:
                if type(name) is str and name not in namespace and not hasattr(builtins, name):
                    namespace[name] = solution.proxy(name)
        exec(compile(setup["test"], "<test>", "exec"), namespace)
    except SolutionEnded as error:
        status = solution.wait()
        sys.stderr.write(f"{error} (exit status {status})\n")
        sys.stderr.flush()
        # Killed by a signal (SIGXCPU, SIGKILL: its CPU limit), the solution's death is
        # passed on as the shell would (128 + N), so the worker can tell a solution that
        # ran out of CPU time (a timeout) from one that failed the test.
        return 128 - status if status is not None and status < 0 else 1
    except BaseException:
        if solution is not None:
            solution.kill()
        traceback.print_exc()
        sys.stderr.flush()
        return 1
    solution.kill()
    # A test that never called the solution passes any program: no verdict.
    marker = setup["nonce"] if solution.calls else setup["nonce"] + ":vacuous"
    sys.stdout.write("\n" + marker + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(pipes=(int(sys.argv[1]), int(sys.argv[2]))))
