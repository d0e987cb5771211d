"""The solution's process: load the program, then answer calls (inside the sandbox).

Run as a script (argv: request fd, reply fd) or, in the warm sandbox, by `serve` in a
process forked from the test driver before it read anything secret. Anything the
program prints goes to stderr, so stdout stays the driver's. Whatever this process
sends can only be plain values (the codec), so taking it over gains the program
nothing beyond returning values itself.
"""

import os
import sys
import traceback

import _codeloop_codec as codec

PROGRAM = "/box/main.py"


def serve(request_fd, reply_fd):
    """Load the program and answer calls until the driver closes the pipe; never returns."""
    requests = os.fdopen(request_fd, "rb")
    replies = os.fdopen(reply_fd, "wb")
    os.dup2(2, 1)
    sys.argv = [PROGRAM]
    sys.path[0] = "/box"
    # The optional scientific runtime (`make science`), as `_codeloop_script.run` adds it.
    sys.path.append(f"/opt/codeloop-science/python{sys.version_info[0]}.{sys.version_info[1]}")
    os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    namespace = {"__name__": "__main__", "__file__": PROGRAM, "__builtins__": __builtins__}
    try:
        with open(PROGRAM, "rb") as handle:
            code = compile(handle.read(), PROGRAM, "exec")
    except SyntaxError as error:
        # As the interpreter reports it (no traceback header): a parse error, not a run.
        sys.stderr.write("".join(traceback.format_exception_only(type(error), error)))
        sys.stderr.flush()
        os._exit(1)
    try:
        exec(code, namespace)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    names = [
        name
        for name, value in list(namespace.items())
        if type(name) is str and callable(value) and not isinstance(value, type)
    ]
    codec.write(replies, {"ready": names})
    while True:
        message = codec.read(requests)
        if message is None:
            break
        try:
            function = namespace[message["call"]]
            args = codec.decode(message["args"])
            kwargs = codec.decode(message["kwargs"])
            reply = {"value": codec.encode(function(*args, **kwargs))}
        except BaseException as error:
            try:
                text = str(error)[:1000]
            except BaseException:
                text = ""
            name = type(error).__name__ if isinstance(type(error).__name__, str) else "Exception"
            reply = {"raise": name, "message": text}
        codec.write(replies, reply)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))
