"""`jsonl:PATH` suites: stdio problems from a file, rendered as a task in every language.

One JSON object per line, `{"problem", "statement", "public", "cases"}` with cases
as `{"input", "output"}` strings (`public` optional, shown to the model; `cases`
hidden, at least one), and an optional `license`. A user brings their own problems
this way without writing a task source, so every bad line is refused with its line
number and what it lacks, before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codeloop import store
from codeloop.errors import ConfigError
from codeloop.evaluate import jsonl
from codeloop.tasks.render import stdio_statement
from codeloop.tasks.schema import Case, Provenance, Task, make_task


def _problem(path: Path, number: int, row: Any) -> tuple[str, str, list[Case], list[Case]]:
    """One line's name, statement, hidden and public cases; a bad line says what it lacks."""
    where = f"{path}:{number}"
    if not isinstance(row, dict):
        raise ConfigError(f"{where}: a problem is a JSON object")
    missing = [key for key in ("problem", "statement", "cases") if key not in row]
    if missing:
        raise ConfigError(
            f"{where}: missing {', '.join(missing)} (a problem is "
            '{"problem", "statement", "public", "cases"})'
        )
    if not isinstance(row["problem"], str) or not row["problem"].strip():
        raise ConfigError(f"{where}: problem must be a non-empty name")
    if not isinstance(row["statement"], str) or not row["statement"].strip():
        raise ConfigError(f"{where}: statement must be non-empty text")

    def cases(key: str) -> list[Case]:
        value = row.get(key, [])
        if not isinstance(value, list) or not all(
            isinstance(c, dict)
            and isinstance(c.get("input"), str)
            and isinstance(c.get("output"), str)
            for c in value
        ):
            raise ConfigError(f'{where}: {key} must be a list of {{"input", "output"}} strings')
        return [Case(input=c["input"], output=c["output"]) for c in value]

    hidden = cases("cases")
    if not hidden:
        raise ConfigError(f"{where}: a problem needs at least one hidden case")
    return row["problem"], row["statement"], hidden, cases("public")


def stdio_problems(path: Path, languages: list[str]) -> list[Task]:
    """The stdio problems of a JSONL file as tasks, one per problem and language."""
    rows = jsonl.read(path, f"--suite jsonl:{path}")
    found: list[Task] = []
    seen: set[str] = set()
    revision = store.sha256_file(path)[:12]
    for number, row in rows:
        name, statement, hidden, public = _problem(path, number, row)
        if name in seen:
            raise ConfigError(f"{path}:{number}: problem {name!r} appears twice")
        seen.add(name)
        provenance = Provenance(
            dataset=f"jsonl:{path.name}",
            revision=revision,
            source_row_sha256=store.sha256_json(row),
            license=str(row.get("license", "unknown")),
        )
        for language in languages:
            found.append(
                make_task(
                    family=f"jsonl/{name}",
                    language=language,
                    kind="stdio",
                    statement=stdio_statement(statement),
                    cases=hidden,
                    public_cases=public,
                    split="test",
                    provenance=provenance,
                )
            )
    if not found:
        raise ConfigError(f"--suite jsonl:{path}: no problems in the file")
    return found
