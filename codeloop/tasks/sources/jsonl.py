"""Tasks in codeloop's own schema, one JSON object per line.

This is how a person brings their own problems: write `Task` records (the id and
split may be left out; the id is derived, and the pool assigns the split from the
family). A given id must match the content, so a hand-edited test cannot keep an
old id. Each line is its own problem; its references, if any, are validated.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codeloop.config import JsonlSource
from codeloop.errors import ConfigError
from codeloop.tasks.schema import Problem, Task
from codeloop.tasks.sources.common import files_revision, read_jsonl


class JsonlTasks:
    """The `jsonl` source."""

    kind = "jsonl"

    def __init__(self, config: JsonlSource, languages: Sequence[str], where: str) -> None:
        self.config = config
        self.where = where
        self.languages = list(languages)
        self.path = Path(config.path)
        if not self.path.is_file():
            raise ConfigError(f"{where}.path: {self.path} is not a file")
        self.revision = files_revision([self.path])

    def problems(self) -> Iterator[Problem]:
        for number, record in read_jsonl(self.path, self.where):
            record = {key: value for key, value in record.items() if key != "split"}
            try:
                task = Task.model_validate(record)
            except ValidationError as error:
                problems = "; ".join(
                    f"{'.'.join(str(part) for part in item['loc']) or '(line)'}: "
                    f"{item['msg'].removeprefix('Value error, ')}"
                    for item in error.errors()
                )
                raise ConfigError(f"{self.where}: {self.path}:{number}: {problems}") from None
            if task.language not in self.languages:
                continue
            yield Problem(key=f"jsonl:{task.id}", family=task.family, tasks=[task])

    def manifest(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "config": self.config.model_dump(mode="json"),
            "file": self.path.name,
            "revision": self.revision,
            "languages": self.languages,
        }
