"""The solution's process: load the program, then answer calls (inside the sandbox).

argv: request fd, reply fd. Anything the program prints goes to stderr, so stdout
stays the driver's. Whatever this process sends can only be plain values (the codec),
so taking it over gains the program nothing beyond returning values itself.
"""

import os
import sys
import traceback

import _codeloop_codec as codec

requests = os.fdopen(int(sys.argv[1]), "rb")
replies = os.fdopen(int(sys.argv[2]), "wb")
os.dup2(2, 1)
sys.argv = ["/box/main.py"]
namespace = {"__name__": "__main__", "__file__": "/box/main.py", "__builtins__": __builtins__}
try:
    with open("/box/main.py", "rb") as handle:
        code = compile(handle.read(), "/box/main.py", "exec")
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
os._exit(0)
