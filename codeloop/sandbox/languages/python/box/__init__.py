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
import hashlib
import os
import tempfile
from importlib import resources
from pathlib import Path

FILES = ("_codeloop_codec.py", "_codeloop_server.py", "_codeloop_driver.py")
ZYGOTE = "_codeloop_zygote.py"
SCRIPT = "_codeloop_script.py"
"""How a stdio program is started, cold (`script_code`, as `-c` code) and warm (imported
by the zygote): one text for both."""
DRIVER = "_codeloop_driver.py"
SERVER = "_codeloop_server.py"
CODEC = "_codeloop_codec.py"


def sources() -> dict[str, bytes]:
    """The trusted files of the box, by name (a fresh dict; the files are read once per
    process, not once per check)."""
    return dict(_read())


@functools.cache
def _read() -> tuple[tuple[str, bytes], ...]:
    folder = resources.files(__name__)
    return tuple((name, folder.joinpath(name).read_bytes()) for name in FILES)


@functools.cache
def script_code() -> str:
    """`_codeloop_script.py`'s text, the `-c` code a cold stdio run starts with. It must
    hold no curly brackets: argv templates go through `str.format`."""
    text = resources.files(__name__).joinpath(SCRIPT).read_text()
    if "{" in text or "}" in text:
        raise ValueError(f"{SCRIPT} holds a curly bracket; argv templates are formatted")
    return text


def installed(root: Path) -> Path:
    """A world-readable copy of the warm sandbox's files (the zygote and the files above)
    in `root/pybox/<hash>/`, made once; what the zygote's sandbox binds.

    Never the package folder itself: a checkout in a folder other users cannot enter
    (`mktemp -d`, /root/..., a 0700 home) is out of reach of the sandbox's uid, and
    what a sandbox reads at check time must not be a file the user may be editing."""
    folder = resources.files(__name__)
    files = dict(_read()) | {name: folder.joinpath(name).read_bytes() for name in (ZYGOTE, SCRIPT)}
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name] + b"\0")
    parent = root / "pybox"
    folder = parent / digest.hexdigest()[:16]
    if folder.is_dir():
        return folder
    parent.mkdir(parents=True, exist_ok=True)
    os.chmod(parent, 0o755)
    temp = Path(tempfile.mkdtemp(dir=parent, prefix=".tmp-"))
    try:
        for name, data in files.items():
            (temp / name).write_bytes(data)
            (temp / name).chmod(0o644)
        temp.chmod(0o755)
        os.rename(temp, folder)
    except OSError:
        for path in temp.iterdir():
            path.unlink()
        temp.rmdir()
        if not folder.is_dir():  # another worker's rename won, or a real failure
            raise
    return folder
