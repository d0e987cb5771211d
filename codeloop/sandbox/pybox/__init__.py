"""Python function tests in two processes, so the checked code cannot write its verdict.

The box holds three trusted files and the solution:
  `_codeloop_codec.py`  a type-strict value codec (plain data only: no objects whose
                        `__eq__` the solution wrote can cross it);
  `_codeloop_server.py` runs in the solution's process: loads the program, then
                        answers calls `name(args)` with encoded return values;
  `_codeloop_driver.py` the test process: reads the nonce, the trusted prompt and the
                        hidden test from stdin (they are never files the solution can
                        read), makes itself non-dumpable (the solution, same uid, cannot
                        ptrace it or read its memory through /proc), starts the server,
                        runs the test with each solution function replaced by a proxy
                        that calls across the pipe, and prints the nonce only when the
                        whole test ran.
The test's helpers come from the task's trusted prompt, never from the solution, so a
solution cannot redefine what the test compares against (HumanEval/38's
`encode_cyclic`, /32's `poly`).
"""

from __future__ import annotations

import functools
from importlib import resources

FILES = ("_codeloop_codec.py", "_codeloop_server.py", "_codeloop_driver.py")
DRIVER = "_codeloop_driver.py"


def sources() -> dict[str, bytes]:
    """The trusted files of the box, by name (a fresh dict; the files are read once per
    process, not once per check)."""
    return dict(_read())


@functools.cache
def _read() -> tuple[tuple[str, bytes], ...]:
    folder = resources.files(__name__)
    return tuple((name, folder.joinpath(name).read_bytes()) for name in FILES)
