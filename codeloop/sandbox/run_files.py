"""Files a `RunRequest` puts beside its program, and files it takes back after the run.

SandboxFusion's `/run_code` takes `files` (path -> base64 content, written into the
program's working folder before it runs) and `fetch_files` (paths read back after it
ends, returned base64). Here the working folder is the run's own /work, a size-capped
tmpfs that vanishes with the sandbox, so both happen inside the sandbox, around the
program, by a shell (`wrap`):

- in: the files are written on the host into `in/` of the program's box (read-only at
  /box during the run) and copied to their places before the program starts; then the
  shell writes a fresh random mark on its trailer channel, so a run whose channel does
  not start with it never started its program (the copy failed: an environment error,
  never the program's exit status);
- out: when the program has ended, the shell kills every other process of the run (in
  its own pid namespace: `kill -KILL -1`, then waits until none is left), so nothing the
  program left behind can still write a file or the channel; then it writes the mark
  again and each fetched file that exists as a line with its path and one with its
  base64. `split` reads that trailer, and keeps only the paths that were asked for.

The trailer channel is a pipe of its own (`harness.run(trailer=True)`), not the run's
stdout: the shell moves it to fd 9 and starts the program with fd 9 closed, so the
program's stdout is exactly what it printed, whatever it prints. A process of the
program could still reopen the shell's fd through /proc while it lives, but every one
is dead before the shell writes its trailer, which is read after the last mark. The
trailer shares the run's output limit; a run that met it, or timed out, hands back no
files. Where the command has no pid namespace of its own (the `process` backend, no
isolation), nothing is killed: `kill -1` there would reach every process of the uid.
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
NAME_MAX = 255
"""Bytes of one name in a path (Linux's NAME_MAX): a longer one can be neither written
nor fetched."""
PATH_MAX = 1024
"""Bytes of a whole path: with the host's scratch folder before it (where input files
are written first) it stays far within Linux's PATH_MAX (4096)."""
_SAFE = re.compile(r"[^\x00-\x1f\x7f]+")
_KILL_WAITS = 20000
"""How many times the shell asks whether any other process of the run is left after
killing them all, before it gives up and hands back no files (they are gone within a few
asks: nothing signalled with SIGKILL runs again)."""
_SCRIPT = (
    'fd="$1"; mark="$2"; isolated="$3"; count="$4"; shift 4; '
    f"for root in {' '.join(ROOTS)}; do if [ -d /box/{INPUT_FOLDER}/$root ]; then "
    f"cp -R /box/{INPUT_FOLDER}/$root/. /$root/ || exit 125; fi; done; "
    'fetch=""; i=0; while [ "$i" -lt "$count" ]; do '
    'fetch="$fetch$(printf "%s" "$1" | base64 -w0) "; shift; i=$((i+1)); done; '
    'if [ "$fd" != 9 ]; then eval "exec 9>&$fd $fd>&-"; fi; '
    'printf "%s\\n" "$mark" >&9; "$@" 9>&-; rc=$?; '
    'if [ "$isolated" = 1 ]; then kill -KILL -1 2>/dev/null; n=0; '
    f'while kill -0 -1 2>/dev/null; do n=$((n+1)); [ "$n" -lt {_KILL_WAITS} ] || exit $rc; '
    "done; fi; "
    'printf "%s\\n" "$mark" >&9; '
    'for name in $fetch; do path="$(printf "%s" "$name" | base64 -d)"; '
    'if [ -f "$path" ]; then printf "%s\\n" "$name" >&9; base64 -w0 < "$path" >&9; '
    'printf "\\n" >&9; fi; done; exit $rc'
)
"""bash (dash takes no fd number above 9): $1 the trailer's fd, $2 the mark, $3 whether
the run has a pid namespace of its own, $4 how many fetched paths follow, then those
paths, then the program's argv. Paths travel base64 inside the loop so no name is split
or globbed."""


def check_path(path: str) -> str:
    """`path` as a file of the run: relative to its working folder, or absolute under
    /work or /tmp; no `..`, no control characters. ValueError says why not."""
    if not path or not _SAFE.fullmatch(path):
        raise ValueError(f"file path {_shown(path)}: empty or holds control characters")
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"file path {_shown(path)}: not UTF-8 text") from None
    longest = max(len(part.encode("utf-8")) for part in PurePosixPath(path).parts)
    if size > PATH_MAX or longest > NAME_MAX:
        raise ValueError(
            f"file path {_shown(path)}: {size} bytes, a name of {longest}; the sandbox "
            f"takes paths of at most {PATH_MAX} bytes, names of at most {NAME_MAX}"
        )
    root, inside = place(path)
    if ".." in inside.parts or inside == PurePosixPath(".") or root not in ROOTS:
        raise ValueError(
            f"file path {path!r}: must be relative to the run's folder or under /work or "
            "/tmp, with no '..'"
        )
    return str(PurePosixPath(path))


def _shown(path: str) -> str:
    """`path` for a message: its start, quoted (an over-long one is not echoed whole)."""
    return repr(path if len(path) <= 80 else path[:60] + "...")


def check_places(paths: list[str]) -> None:
    """ValueError naming two input files (checked paths) that cannot both be written
    because one would be a folder of the other (`a` and `a/b`), found before the run
    rather than by the write, whose error would be the sandbox's and name the host's
    scratch folder."""
    files = {place(path): path for path in paths}
    for (root, inside), path in files.items():
        for folder in inside.parents:
            other = files.get((root, folder))
            if other is not None:
                raise ValueError(
                    f"files {_shown(other)} and {_shown(path)}: the first would have to be "
                    "a file and the folder of the second at once"
                )


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
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(decode(path, content))
        except OSError as error:  # named by its path in the run, never the host's
            reason = error.strerror or type(error).__name__
            raise ValueError(f"input file {_shown(path)} cannot be written: {reason}") from None
        target.chmod(0o644)
    for folder in (root, *(p for p in root.rglob("*") if p.is_dir())):
        folder.chmod(0o755)


def wrap(argv: list[str], fetch: list[str]) -> tuple[list[str], str]:
    """The program's `argv` run by the shell that copies the input files in and writes the
    fetched ones on the trailer channel after it (`harness.run(..., trailer=True)` fills
    `{trailer}` and `{isolated}`); and the trailer's mark."""
    mark = f"codeloop-files-{secrets.token_hex(16)}"
    head = ["/bin/bash", "-c", _SCRIPT, "codeloop-files", "{trailer}", mark, "{isolated}"]
    return [*head, str(len(fetch)), *fetch, *argv], mark


def split(
    trailer: bytes, stdout: str, mark: str, asked: list[str]
) -> tuple[bool, str, dict[str, str]]:
    """From a wrapped run's trailer channel: whether its program started (the channel
    opens with the mark), the program's stdout (untouched: nothing else is on it), and the
    fetched files (path -> base64) among those `asked`, read after the last mark; none
    when that trailer is missing (the run was cut short)."""
    text = trailer.decode("utf-8", "replace")
    opening = f"{mark}\n"
    if not text.startswith(opening):
        return False, stdout, {}
    _before, found, tail = text[len(opening) :].rpartition(opening)
    if not found:
        return True, stdout, {}
    wanted = set(asked)
    files: dict[str, str] = {}
    lines = tail.split("\n")
    for name, content in zip(lines[0::2], lines[1::2], strict=False):
        try:
            path = base64.b64decode(name, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            continue
        if path in wanted:
            files[path] = content
    return True, stdout, files
