"""The optional scientific Python runtime: numpy, scipy, pandas, sympy, networkx and the
rest of `science.txt`, built by `make science` (scripts/setup_science.sh) for the system
Python the box runs, in a folder of its own that every sandbox binds read-only.

Why a folder apart: the box's Python starts with -S (no site-packages, no user site, no
.pth files), so nothing a user or the system installed reaches a program; only this one
pinned set does. The box's entry files (`box/_codeloop_script.py`, `_codeloop_server.py`,
`_codeloop_driver.py`) append `BOX_FOLDER/pythonX.Y` to `sys.path` after the standard
library, so a package never shadows a standard module, and -S stays.

The host folder is `$CODELOOP_SCIENCE`, else /opt/codeloop-science, and must be readable
by every user (the sandbox's uids bind it). It holds one folder per Python version
(`python3.11/`), whose stamp `make science` writes last. Where the runtime is missing, a
program that imports numpy fails as it always did; `missing_note` words what the service
adds to such an answer, naming the make target.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

ENV = "CODELOOP_SCIENCE"
"""The environment variable that moves the runtime's host folder (`make science` reads it
too)."""
DEFAULT = "/opt/codeloop-science"
BOX_FOLDER = "/opt/codeloop-science"
"""Where the host folder appears inside every sandbox (the box's entry files name it)."""
STAMP = ".codeloop-science"
"""Written last by `make science`, holding the hash of `science.txt`: the runtime is
installed when its version folder has it."""
MAKE_TARGET = "make science"
PYTHON = "/usr/bin/python3"
"""The box's Python (the runtime's wheels are built for its version)."""

MODULES = frozenset(
    {
        "numpy",
        "scipy",
        "pandas",
        "dateutil",
        "pytz",
        "tzdata",
        "six",
        "sympy",
        "mpmath",
        "networkx",
        "sklearn",
        "joblib",
        "threadpoolctl",
    }
)
"""The import names of `science.txt`'s packages (tests/test_box_libraries.py imports
each one in the box when the runtime is installed)."""

_MISSING = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


def host_folder() -> Path:
    """The runtime's folder on this machine (`$CODELOOP_SCIENCE`, else the default)."""
    return Path(os.environ.get(ENV) or DEFAULT)


def mount() -> tuple[str, str]:
    """(host folder, box folder): Python's `Language.mounts` entry. Read when the language
    registry is imported, so a worker binds the folder its own environment names."""
    return str(host_folder()), BOX_FOLDER


@functools.cache
def python_version() -> str:
    """'X.Y' of the box's Python, or '' where it cannot be run (then nothing is installed
    for it)."""
    try:
        found = subprocess.run(
            [PYTHON, "-S", "-E", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except OSError:
        return ""
    return found.stdout.strip()


def installed() -> bool:
    """Whether `make science` finished for the box's Python in the configured folder
    (read each time: the runtime may be added while a server runs)."""
    version = python_version()
    return bool(version) and (host_folder() / f"python{version}" / STAMP).is_file()


def missing_note(stderr: str) -> str:
    """What to tell a client whose Python program failed to import one of `MODULES` while
    the runtime is not installed here; '' otherwise.

    Only ever a note beside the answer, never a change to its status or output: the
    program writes its own stderr, so a program that prints the error text itself gets
    the note and nothing more."""
    names = {name.split(".")[0] for name in _MISSING.findall(stderr)}
    missing = sorted(names & MODULES)
    if not missing or installed():
        return ""
    return (
        f"{', '.join(missing)}: part of codeloop's optional scientific Python runtime, "
        f"which is not installed on this server. Install it with `{MAKE_TARGET}` in the "
        'codeloop checkout (docs/SERVICE.md, "Libraries in the box").'
    )
