"""Files a `RunRequest` puts beside its program, and files it takes back after the run.

SandboxFusion's `/run_code` takes `files` (path -> base64 content, written into the
program's working folder before it runs) and `fetch_files` (paths read back after it
ends, returned base64). Here the working folder is the run's own /work, a size-capped
tmpfs that vanishes with the sandbox, so both happen inside the sandbox, around the
program, by a POSIX shell (`wrap`):

- in: the files are written on the host into `in/` of the program's box (read-only at
  /box during the run) and copied to their places before the program starts; then the
  shell prints a fresh random mark on the run's stdout, so a run whose stdout does not
  start with it never started its program (the copy failed: an environment error,
  never the program's exit status);
- out: when the program has ended, the shell prints the mark again and then each
  fetched file that exists as a line with its path and one with its base64. `split`
  cuts the opening mark and that trailer off.

The program can read the mark (it is in the shell's command line) and could print a
trailer of its own, but the fetched files are its own output anyway: a forged one says
nothing the program could not have written to the file. It cannot take back the
opening mark, which is printed before it starts. The trailer shares the run's
output limit; a run that met it, or timed out, hands back no files.
A path is relative to the working folder (/work), or absolute inside one of the run's
own writable tmpfs folders, /work or /tmp: SandboxFusion writes an absolute path where
it says, and LazyLLM sends its input files under their host paths (often in /tmp).
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
from pathlib import Path, PurePosixPath

MAX_FILES = 64
"""Files of one request, each way."""
MAX_FILE_BYTES = 8 << 20
"""Bytes of all of a request's input files together, decoded."""
INPUT_FOLDER = "in"
ROOTS = ("work", "tmp")
"""The run's writable folders an absolute path may name (/work, /tmp), each its own
subfolder of `in/`."""
_SAFE = re.compile(r"[^\x00-\x1f\x7f]+")
_SCRIPT = (
    'mark="$1"; shift; count="$1"; shift; '
    f"for root in {' '.join(ROOTS)}; do if [ -d /box/{INPUT_FOLDER}/$root ]; then "
    f"cp -R /box/{INPUT_FOLDER}/$root/. /$root/ || exit 125; fi; done; "
    'fetch=""; i=0; while [ "$i" -lt "$count" ]; do '
    'fetch="$fetch$(printf "%s" "$1" | base64 -w0) "; shift; i=$((i+1)); done; '
    'printf "%s\\n" "$mark"; "$@"; rc=$?; printf "\\n%s\\n" "$mark"; '
    'for name in $fetch; do path="$(printf "%s" "$name" | base64 -d)"; '
    'if [ -f "$path" ]; then printf "%s\\n" "$name"; base64 -w0 < "$path"; printf "\\n"; fi; '
    "done; exit $rc"
)
"""$1 the mark, $2 how many fetched paths follow, then those paths, then the program's
argv. Paths travel base64 inside the loop so no name is split or globbed."""


def check_path(path: str) -> str:
    """`path` as a file of the run: relative to its working folder, or absolute under
    /work or /tmp; no `..`, no control characters. ValueError says why not."""
    if not path or not _SAFE.fullmatch(path):
        raise ValueError(f"file path {path!r}: empty or holds control characters")
    root, inside = place(path)
    if ".." in inside.parts or inside == PurePosixPath(".") or root not in ROOTS:
        raise ValueError(
            f"file path {path!r}: must be relative to the run's folder or under /work or "
            "/tmp, with no '..'"
        )
    return str(PurePosixPath(path))


def place(path: str) -> tuple[str, PurePosixPath]:
    """(the writable folder, the path inside it) of a file path: relative paths are in
    /work."""
    pure = PurePosixPath(path)
    if not pure.is_absolute():
        return "work", pure
    parts = pure.parts[1:]
    return (parts[0] if parts else ""), PurePosixPath(*parts[1:])


def decode(path: str, content: str) -> bytes:
    """The bytes of one input file; ValueError when `content` is not base64."""
    try:
        return base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ValueError(f"file {path!r}: content is not base64 ({error})") from None


def write_inputs(box: Path, files: dict[str, str]) -> None:
    """Write `files` (checked paths -> base64) under the box's `in/`, readable by the
    run's uid."""
    if not files:
        return
    root = box / INPUT_FOLDER
    for path, content in files.items():
        folder, inside = place(path)
        target = root / folder / inside
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(decode(path, content))
        target.chmod(0o644)
    for folder in (root, *(p for p in root.rglob("*") if p.is_dir())):
        folder.chmod(0o755)


def wrap(argv: list[str], fetch: list[str]) -> tuple[list[str], str]:
    """The program's `argv` run by the shell that copies the input files in and prints
    the fetched ones after it; and the trailer's mark."""
    mark = f"codeloop-files-{secrets.token_hex(16)}"
    return ["/bin/sh", "-c", _SCRIPT, "codeloop-files", mark, str(len(fetch)), *fetch, *argv], mark


def split(stdout: str, mark: str) -> tuple[bool, str, dict[str, str]]:
    """From a wrapped run's stdout: whether its program started (the opening mark is
    there), the program's own stdout, and the fetched files (path -> base64); no files
    when the trailer is missing (the run was cut short)."""
    opening = f"{mark}\n"
    if not stdout.startswith(opening):
        return False, stdout, {}
    stdout = stdout[len(opening) :]
    head, found, tail = stdout.rpartition(f"\n{mark}\n")
    if not found:
        return True, stdout, {}
    files: dict[str, str] = {}
    lines = tail.split("\n")
    for name, content in zip(lines[0::2], lines[1::2], strict=False):
        try:
            files[base64.b64decode(name).decode("utf-8")] = content
        except (binascii.Error, UnicodeDecodeError):
            continue
    return True, head, files
