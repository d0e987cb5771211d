"""The test process (inside the sandbox): the only writer of the verdict.

stdin: one JSON line {"nonce", "prompt", "test", "entry_point"}. The nonce is printed
after the whole test ran; the solution can neither read it (it was never in a file,
and this process is not dumpable) nor stop this process from printing something else.
"""

import builtins
import contextlib
import ctypes
import json
import os
import subprocess
import sys
import traceback

import _codeloop_codec as codec

PR_SET_DUMPABLE = 4

setup = json.loads(sys.stdin.readline())
sys.stdin.close()
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
    sys.exit("codeloop driver: could not make the test process non-dumpable")

request_read, request_write = os.pipe()
reply_read, reply_write = os.pipe()
server = subprocess.Popen(
    [
        sys.executable,
        "-S",
        "-E",
        "-B",
        "/box/_codeloop_server.py",
        str(request_read),
        str(reply_write),
    ],
    stdin=subprocess.DEVNULL,
    stdout=2,
    stderr=2,
    pass_fds=(request_read, reply_write),
    close_fds=True,
)
os.close(request_read)
os.close(reply_write)
requests = os.fdopen(request_write, "wb")
replies = os.fdopen(reply_read, "rb")


class SolutionEnded(Exception):
    """The solution's process stopped answering (it exited or was killed)."""


def receive():
    message = codec.read(replies)
    if message is None:
        raise SolutionEnded("the solution's process ended before answering")
    if type(message) is not dict:
        raise ValueError("malformed reply")
    return message


def proxy(name):
    def call(*args, **kwargs):
        try:
            codec.write(
                requests,
                {"call": name, "args": codec.encode(list(args)), "kwargs": codec.encode(kwargs)},
            )
        except BrokenPipeError:
            raise SolutionEnded("the solution's process ended") from None
        reply = receive()
        if "value" in reply:
            return codec.decode(reply["value"])
        error = getattr(builtins, str(reply.get("raise")), None)
        if not (isinstance(error, type) and issubclass(error, Exception)):
            error = RuntimeError
        raise error(str(reply.get("message", "")))

    call.__name__ = call.__qualname__ = name
    return call


try:
    ready = receive()
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
        namespace[entry] = proxy(entry)
    else:
        # No named entry point: the solution's functions the test may call, but never
        # one that would shadow a builtin the test relies on (abs, len, sorted, ...).
        for name in names:
            if type(name) is str and name not in namespace and not hasattr(builtins, name):
                namespace[name] = proxy(name)
    exec(compile(setup["test"], "<test>", "exec"), namespace)
except SolutionEnded as error:
    server.wait()
    sys.stderr.write(f"{error} (exit status {server.returncode})\n")
    sys.exit(1)
except BaseException:
    server.kill()
    traceback.print_exc()
    sys.exit(1)
server.kill()
sys.stdout.write("\n" + setup["nonce"] + "\n")
sys.stdout.flush()
