"""Task suites: the lists of codeloop tasks that a round's audit and `codeloop eval` score.

- `curriculum-test`: variant 0 of every curriculum family in the test split, in
  every language, from the tiers the session's curriculum sources draw from (all
  four where none does): fixed by the seed, the split salt and fractions, the tiers
  and the languages, never by how much of a session's pool has been built. So the
  audit holds problems at the level the session trains at (cpu-demo: tier 1).
- `humaneval`, `humaneval-x`: the benchmarks as function tasks (the model writes
  the whole function; the sandbox checks it against the hidden test).
- `validation`: a session's fixed development set (development.json).
- `jsonl:PATH`: stdio problems, one JSON object per line,
  `{"problem", "statement", "public", "cases"}` with cases as
  `{"input", "output"}`, rendered as a task in every language asked for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codeloop import store
from codeloop.config import CurriculumSource, HumanEvalSource, HumanEvalXSource, SessionConfig
from codeloop.errors import ConfigError
from codeloop.tasks import curriculum
from codeloop.tasks.render import stdio_statement
from codeloop.tasks.schema import Case, Provenance, Task, make_task
from codeloop.tasks.sources import open_source
from codeloop.tasks.splits import assign_split

NAMED = ("curriculum-test", "humaneval", "humaneval-x", "validation")


def suite_tasks(config: SessionConfig, name: str, session: Path | None = None) -> list[Task]:
    """Every task of suite `name` under `config` (its seed, splits and languages)."""
    languages = config.tasks.languages
    if name == "curriculum-test":
        salt, fractions = config.tasks.salt, config.tasks.splits
        tiers = {
            tier
            for source in config.tasks.sources
            if isinstance(source, CurriculumSource)
            for tier in source.tiers
        } or {1, 2, 3, 4}
        return [
            task.with_split("test")
            for family in curriculum.families()
            if family.tier in tiers
            and assign_split(f"curriculum/{family.name}", salt, fractions) == "test"
            for task in curriculum.render_problem(family, 0, config.seed, languages).tasks
        ]
    if name in ("humaneval", "humaneval-x"):
        source = (
            HumanEvalSource(kind="humaneval")
            if name == "humaneval"
            else HumanEvalXSource(kind="humaneval-x", path=config.audit.humaneval_x_path)
        )
        opened = open_source(source, seed=config.seed, languages=languages, where=f"suite {name}")
        return [task.with_split("test") for p in opened.problems() for task in p.tasks]
    if name == "validation":
        if session is None:
            raise ConfigError("--suite validation: name the session with --session DIR")
        development = store.SessionPaths(session).development
        if not development.is_file():
            raise ConfigError(
                f"{session}: no development.json; the suite 'validation' is the fixed "
                "development set a session's first prepare chooses"
            )
        return [Task.model_validate(task) for task in store.read(development)["tasks"]]
    if name.startswith("jsonl:"):
        return stdio_problems(Path(name.removeprefix("jsonl:")), languages)
    raise ConfigError(f"--suite {name}: unknown; choose one of {', '.join(NAMED)} or jsonl:PATH")


def _problem(path: Path, number: int, row: Any) -> tuple[str, str, list[Case], list[Case]]:
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
    if not path.is_file():
        raise ConfigError(f"--suite jsonl:{path}: file not found")
    found: list[Task] = []
    seen: set[str] = set()
    revision = store.sha256_file(path)[:12]
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as error:
            raise ConfigError(f"{path}:{number}: not JSON ({error})") from None
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
