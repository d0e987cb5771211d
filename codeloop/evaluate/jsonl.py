"""The one JSONL reader of `codeloop eval`: benchmark data, samples, answers, problems.

Every file `codeloop eval` reads is one JSON value per line, and a user who wrote
one by hand needs to know exactly what is wrong with it: so every error here names
the file and the line (`PATH:LINE: ...`) and what the line lacks, and a missing
file names the flag that gave it. Blank lines are skipped everywhere, so a trailing
newline or a spacer never counts as a bad line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codeloop.errors import ConfigError


def parse(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) for every non-blank line of `text`, read from `path`."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as error:
            raise ConfigError(f"{path}:{number}: not JSON ({error})") from None


def read(path: Path, named: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) for every non-blank line of the file; `named` is how the user
    gave it (`--samples PATH`, `--suite jsonl:PATH`), for the error when it is missing."""
    if not path.is_file():  # checked now, not at the first line: the caller may hash it first
        raise ConfigError(f"{named}: file not found")
    return parse(path, path.read_text(encoding="utf-8"))


def samples(path: Path, field: str, described: str) -> Iterator[tuple[int, str, str]]:
    """(line number, task id, text) for every line of a samples file of `{"task_id", field}`
    objects; `described` says what `field` holds, for the line that lacks it."""
    for number, row in read(path, f"--samples {path}"):
        if not isinstance(row, dict) or not isinstance(row.get("task_id"), str):
            raise ConfigError(f"{path}:{number}: needs a string field task_id")
        text = row.get(field)
        if not isinstance(text, str):
            raise ConfigError(f"{path}:{number}: needs a string field {described}")
        yield number, row["task_id"], text
