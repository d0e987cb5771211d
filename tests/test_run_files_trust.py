"""`fetch_files` cannot be forged by what a program leaves behind (`sandbox/run_files.py`).

The fetched files once came back behind a mark on the run's own stdout, read while the
program's processes could still run: a background process printing a trailer of its own
got a file returned that was never asked for (a `../../` name) and cut the real stdout.
Now the trailer travels on a pipe of its own, written by the wrapping shell only after
every other process of the run is dead, and only the paths asked for come back. Each
program here runs in the real sandbox (cold: a run with files never runs warm).
"""

from __future__ import annotations

import base64

import pytest

from codeloop.config import SandboxLimits
from codeloop.sandbox.check import Sandbox
from codeloop.sandbox.request import RunRequest

pytestmark = pytest.mark.timeout(120)
LIMITS = SandboxLimits(time_s=5.0, memory_mib=256, output_kib=256, processes=32, workdir_mib=16)

FORGER = r"""
import base64, os, sys, time

shell = os.getppid()  # the wrapping shell: its command line holds the mark
mark = [part for part in open(f"/proc/{shell}/cmdline", "rb").read().split(b"\0")
        if part.startswith(b"codeloop-files-")][0].decode()
def encoded(text):
    return base64.b64encode(text.encode()).decode()
forged = "".join(
    f"\n{mark}\n{encoded(name)}\n{encoded('forged')}\n"
    for name in ("../../etc/passwd", "/tmp/unasked", "out.txt")
)
with open("/tmp/unasked", "w") as handle:
    handle.write("unasked")
with open("out.txt", "w") as handle:
    handle.write("real")
for index in range(8):  # files to list: the shell's trailer takes a while to write
    with open(f"f{index}.txt", "w") as handle:
        handle.write(str(index) * 8192)
main = os.getpid()
if os.fork() == 0:  # left behind: forges the trailer every way it can, for 3 s
    os.setsid()
    end, ended = time.monotonic() + 3, None
    while time.monotonic() < end:
        os.write(1, forged.encode())  # its inherited stdout, the run's
        for target in (f"/proc/{shell}/fd/9", f"/proc/{shell}/fd/1"):  # the shell's
            try:
                with open(target, "w") as channel:
                    channel.write(forged)
            except OSError:  # the pipes are the harness's: their inodes refuse this uid
                pass
        if os.getppid() != main and ended is None:
            ended = time.monotonic()
        if ended is not None and time.monotonic() > ended + 0.05:
            # 50 ms after the program ended: every process of the run is dead by then,
            # and its files were read after that (so this never lands).
            try:
                with open("out.txt", "w") as handle:
                    handle.write("forged")
            except OSError:
                pass
        time.sleep(0.001 if ended is not None else 0.005)  # fast while the shell lists
    os._exit(0)
time.sleep(0.1)  # the forger is at work before this ends
print("real stdout")
"""


@pytest.fixture(scope="module")
def cold() -> Sandbox:
    box = Sandbox("bwrap", worker=23)
    box.warm = None
    return box


def test_a_left_behind_process_forges_no_file_and_no_trailer_in_stdout(cold: Sandbox) -> None:
    request = RunRequest(
        language="python",
        program=FORGER,
        fetch_files=["out.txt", "missing.txt", *(f"f{index}.txt" for index in range(8))],
        files={"in.txt": base64.b64encode(b"x").decode()},
        limits=LIMITS,
    )
    listed = {
        f"f{index}.txt": base64.b64encode(str(index).encode() * 8192).decode() for index in range(8)
    }
    for _ in range(3):
        found = cold.run_program(request)
        assert found.run is not None and found.run.status == "finished", found.run
        assert found.files == {"out.txt": base64.b64encode(b"real").decode(), **listed}, sorted(
            found.files
        )
        # stdout is what the program's processes printed (the forger's own writes to its
        # stdout are its output, never read as a trailer): the real line, once, and none
        # of the shell's trailer (the real file's base64), which once leaked in here.
        assert found.run.stdout.count("real stdout\n") == 1
        assert base64.b64encode(b"real").decode() not in found.run.stdout


def test_only_asked_files_come_back_and_a_run_that_starts_is_not_an_error(
    cold: Sandbox,
) -> None:
    program = (
        "open('a.txt', 'w').write('A')\nopen('/tmp/b.txt', 'w').write('B')\n"
        "open('c.txt', 'w').write('C')\nprint(open('in.txt').read())\n"
    )
    request = RunRequest(
        language="python",
        program=program,
        files={"in.txt": base64.b64encode(b"input").decode()},
        fetch_files=["a.txt", "/tmp/b.txt", "missing.txt"],
        limits=LIMITS,
    )
    found = cold.run_program(request)
    assert found.run is not None and found.run.status == "finished", found.run
    assert found.run.stdout == "input\n"
    assert found.files == {
        "a.txt": base64.b64encode(b"A").decode(),
        "/tmp/b.txt": base64.b64encode(b"B").decode(),
    }
