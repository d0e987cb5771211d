"""HumanEval-X: HumanEval in C++, Go, Java, JavaScript, Python and Rust.

Read from the copy shipped in the package when `path` is unset, from a local
folder of `humaneval_<lang>.jsonl(.gz)` (as published by CodeGeeX), or, when
`path = "hub"`, from the hub dataset THUDM/humaneval-x with `datasets`. Like
HumanEval it is a benchmark: every problem is in `test`, and a problem's family
(`humaneval/N`) is shared by all its languages.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from codeloop import data as shipped
from codeloop.config import HumanEvalXSource
from codeloop.errors import ConfigError
from codeloop.sandbox.language import HumanEvalX as Naming
from codeloop.sandbox.languages import HOMES
from codeloop.tasks.schema import FunctionSpec, Problem, Program, Provenance, make_task
from codeloop.tasks.sources.common import files_revision, read_jsonl, row_sha256
from codeloop.tasks.sources.humaneval import family_of

HUB_ID = "THUDM/humaneval-x"
LICENSE = "Apache-2.0"
NAMING: dict[str, Naming] = {
    home.language.name: home.humaneval_x
    for home in sorted(HOMES, key=lambda home: home.language.name)
    if home.humaneval_x is not None
}
"""Our language name -> how HumanEval-X names it and reads its rows (from its home)."""
FILE_CODES: dict[str, str] = {name: naming.file_code for name, naming in NAMING.items()}
"""Our language name -> the code in HumanEval-X file names and hub configs."""


def statement_of(language: str, row: dict[str, Any]) -> str:
    """The code the task shows: the prompt, and the declaration where only it holds the
    function's signature (the language's `signature_in_declaration`)."""
    if NAMING[language].signature_in_declaration:
        return row["prompt"] + row["declaration"]
    return row["prompt"]


def reference_code(language: str, row: dict[str, Any]) -> str:
    """The canonical solution as complete code: the statement, then the solution."""
    return statement_of(language, row) + row["canonical_solution"]


def _entry_point(language: str, row: dict[str, Any]) -> str:
    """The function under test: the last match of the language's pattern in the row's
    declaration (else its prompt); the task id when nothing matches."""
    pattern = NAMING[language].entry_point
    found = re.findall(pattern, row.get("declaration") or row["prompt"], flags=re.MULTILINE)
    if not found:
        return row["task_id"]
    last = found[-1]
    return next(name for name in last if name) if isinstance(last, tuple) else last


def problem_of(language: str, row: dict[str, Any], provenance: Provenance) -> Problem:
    """One HumanEval-X row as a function task in `language`."""
    family = family_of(row["task_id"])
    example = row.get("example_test") or ""
    task = make_task(
        family=family,
        language=language,
        kind="function",
        statement=statement_of(language, row),
        function=FunctionSpec(
            entry_point=_entry_point(language, row),
            declaration=row.get("declaration") or "",
            tests=row["test"],
            public_tests="" if example.strip() in {"", "None"} else example,
        ),
        references=[Program(language=language, code=reference_code(language, row))],
        provenance=provenance,
    )
    return Problem(
        key=f"humaneval-x:{row['task_id']}", family=family, tasks=[task], fixed_split="test"
    )


class HumanEvalX:
    """The `humaneval-x` source."""

    kind = "humaneval-x"

    def __init__(self, config: HumanEvalXSource, languages: Sequence[str], where: str) -> None:
        self.config = config
        self.where = where
        self.languages = [lang for lang in languages if lang in FILE_CODES]
        self.files: dict[str, Path] = {}
        if config.path != shipped.HUB:
            self.files = self._local_files(Path(config.path or shipped.HUMANEVAL_X))
            self.revision = files_revision(list(self.files.values()))
        else:
            self.revision = config.revision or "unpinned"

    def _local_files(self, folder: Path) -> dict[str, Path]:
        if not folder.is_dir():
            raise ConfigError(
                f"{self.where}.path: {folder} is not a folder; point it at a folder of "
                "humaneval_<lang>.jsonl.gz files, or unset it to read the shipped copy"
            )
        found: dict[str, Path] = {}
        for language in self.languages:
            code = FILE_CODES[language]
            for name in (f"humaneval_{code}.jsonl.gz", f"humaneval_{code}.jsonl"):
                if (folder / name).is_file():
                    found[language] = folder / name
                    break
            else:
                raise ConfigError(
                    f"{self.where}.path: {folder} has no humaneval_{code}.jsonl(.gz) for "
                    f"{language}; add it or remove {language} from tasks.languages"
                )
        return found

    def _rows(self, language: str) -> Iterator[dict[str, Any]]:
        if self.files:
            for _, row in read_jsonl(self.files[language], self.where):
                yield row
            return
        from codeloop.tasks.sources.hf import load_hub

        yield from load_hub(
            HUB_ID,
            name=FILE_CODES[language],
            split="test",
            revision=self.config.revision,
            where=self.where,
            local_hint=f"set {self.where}.path to a local folder of humaneval_<lang>.jsonl.gz, "
            "or unset it to read the shipped copy",
        )

    def problems(self) -> Iterator[Problem]:
        dataset = "THUDM/humaneval-x"
        for language in self.languages:
            for row in self._rows(language):
                provenance = Provenance(
                    dataset=dataset,
                    revision=self.revision,
                    source_row_sha256=row_sha256(row),
                    license=LICENSE,
                )
                yield problem_of(language, row, provenance)

    def manifest(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "config": self.config.model_dump(mode="json"),
            "dataset": HUB_ID,
            "files": {lang: path.name for lang, path in self.files.items()},
            "revision": self.revision,
            "languages": self.languages,
        }
