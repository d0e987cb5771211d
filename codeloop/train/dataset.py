"""Reading and checking `train.jsonl` and its manifest before any weight is touched.

Training is the one step that turns rows into weights, so it is also the last line
of defence: a row that is not a passed local execution of a TRAIN task, a dataset
whose bytes no longer match the manifest written at export, or too few rows per
language would silently teach the model the wrong thing. Every refusal names the
file, the line and the field, and says what to do.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop import store
from codeloop.errors import ConfigError, IntegrityError

ROLES = frozenset({"system", "user", "assistant"})
VERIFICATION_KIND = "local_execution"


@dataclass(frozen=True)
class Dataset:
    """The checked rows of one `train.jsonl`, bound to its sha256."""

    path: Path
    manifest_path: Path
    sha256: str
    rows: list[dict[str, Any]]
    manifest: dict[str, Any] = field(repr=False)

    def languages(self) -> dict[str, int]:
        """Rows per language, in first-seen order."""
        return dict(Counter(row["language"] for row in self.rows))


def default_manifest(dataset: str | os.PathLike[str]) -> Path:
    """Where export writes the manifest of `dataset`: `train.jsonl.manifest.json`."""
    return Path(f"{dataset}.manifest.json")


def load_dataset(
    dataset: str | os.PathLike[str],
    manifest: str | os.PathLike[str] | None = None,
) -> Dataset:
    """Read `train.jsonl` and its manifest and check that they belong together.

    Checks, in this order: the manifest exists and is JSON; the dataset's sha256
    equals the manifest's `dataset_sha256` (so a row edited after export is caught);
    every row has the documented shape, split `train` and a passed local execution;
    the manifest's row count and per-language counts match the rows.
    """
    path = Path(dataset)
    manifest_path = Path(manifest) if manifest is not None else default_manifest(path)
    if not path.is_file():
        raise IntegrityError(f"{path}: training dataset not found; run the export phase first")
    info = store.read(manifest_path)
    if not isinstance(info, dict):
        raise IntegrityError(f"{manifest_path}: manifest must be a JSON object")
    expected = info.get("dataset_sha256")
    if not isinstance(expected, str):
        raise IntegrityError(f"{manifest_path}: field dataset_sha256 is missing")
    actual = store.sha256_file(path)
    if actual != expected:
        raise IntegrityError(
            f"{path}: sha256 {actual} differs from dataset_sha256 {expected} in {manifest_path}; "
            "the dataset changed after export. Run the export phase again instead of editing rows."
        )
    for key, wanted in (("split", "train"), ("verification", VERIFICATION_KIND)):
        if info.get(key) != wanted:
            raise IntegrityError(
                f"{manifest_path}: field {key} is {info.get(key)!r}, expected {wanted!r}; "
                "only verified train rows may be trained on"
            )
    rows = _read_rows(path)
    _check_manifest_counts(manifest_path, info, rows)
    return Dataset(path=path, manifest_path=manifest_path, sha256=actual, rows=rows, manifest=info)


def _read_rows(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path} line {number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise IntegrityError(f"{where}: not valid JSON ({error.msg})") from None
            check_row(row, where)
            rows.append(row)
    return rows


def check_row(row: Any, where: str) -> None:
    """Refuse a row that is not a passed local execution of a train task in chat form."""
    if not isinstance(row, dict):
        raise IntegrityError(f"{where}: a row must be a JSON object")
    for key in ("task_id", "language"):
        if not isinstance(row.get(key), str) or not row[key]:
            raise IntegrityError(f"{where}: field {key} must be a non-empty string")
    where = f"{where} (task {row['task_id']})"
    if row.get("split") != "train":
        raise IntegrityError(
            f"{where}: field split is {row.get('split')!r}; only split 'train' may be trained on "
            "(validation and test answers must never reach the weights)"
        )
    verification = row.get("verification")
    if (
        not isinstance(verification, dict)
        or verification.get("kind") != VERIFICATION_KIND
        or verification.get("passed") is not True
    ):
        raise IntegrityError(
            f"{where}: field verification is {verification!r}; only rows with "
            f'{{"kind": "{VERIFICATION_KIND}", "passed": true}} may be trained on'
        )
    if not isinstance(row.get("provenance"), dict):
        raise IntegrityError(f"{where}: field provenance must be an object")
    _check_messages(row.get("messages"), where)


def _check_messages(messages: Any, where: str) -> None:
    if not isinstance(messages, list) or len(messages) < 2:
        raise IntegrityError(f"{where}: field messages must be a list of at least two turns")
    for index, message in enumerate(messages):
        if (
            not isinstance(message, dict)
            or message.get("role") not in ROLES
            or not isinstance(message.get("content"), str)
        ):
            raise IntegrityError(
                f"{where}: messages.{index} must be {{role: system|user|assistant, content: text}}"
            )
    if messages[-1]["role"] != "assistant" or not messages[-1]["content"].strip():
        raise IntegrityError(
            f"{where}: the last message must be the assistant's verified answer (non-empty)"
        )


def _check_manifest_counts(
    manifest_path: Path, info: dict[str, Any], rows: list[dict[str, Any]]
) -> None:
    if info.get("rows") != len(rows):
        raise IntegrityError(
            f"{manifest_path}: field rows is {info.get('rows')!r} but the dataset has {len(rows)} "
            "rows; export them again"
        )
    counts = dict(Counter(row["language"] for row in rows))
    declared = info.get("languages")
    if not isinstance(declared, dict) or {k: v for k, v in declared.items() if v} != counts:
        raise IntegrityError(
            f"{manifest_path}: field languages is {declared!r} but the rows count {counts}; "
            "export them again"
        )


def check_counts(
    counts: dict[str, int],
    *,
    min_examples: int,
    min_per_language: int,
    languages: list[str] | tuple[str, ...],
    origin: str,
    note: str = "",
) -> None:
    """Refuse training with too few rows overall or in any configured language.

    `counts` is rows per language; `origin` names the dataset in the message and
    `note` says why rows may be missing (for example rows dropped as too long).
    """
    total = sum(counts.values())
    if total < min_examples:
        raise ConfigError(
            f"{origin}: {total} rows{note}, fewer than export.min_examples = {min_examples}; "
            "collect more verified answers before training"
        )
    short = [lang for lang in languages if counts.get(lang, 0) < min_per_language]
    if short:
        listing = ", ".join(f"{lang} {counts.get(lang, 0)}" for lang in short)
        raise ConfigError(
            f"{origin}: languages under export.min_per_language = {min_per_language}{note}: "
            f"{listing}; collect more verified answers in them or lower the minimum"
        )
