"""Pool batches: validated tasks on disk, bound to the sources that made them.

`SESSION/pool/batch-NNNNNN/` holds `sources.json` (the source manifest: sources,
revisions, seeds, salt, fractions), `tasks.json` (`{"tasks": [...]}`) and
`manifest.json`, written last, which binds the sha256 of the other two and
records every dropped problem with its reason. A batch without `manifest.json`
was interrupted and is rebuilt; a batch whose files no longer match their
manifest is refused, because tasks that changed after validation are unproven.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codeloop import store
from codeloop.config import SessionConfig
from codeloop.errors import ConfigError, IntegrityError
from codeloop.tasks.schema import Problem, Task
from codeloop.tasks.sources import TaskSource, open_sources
from codeloop.tasks.splits import assign_split, check_pool
from codeloop.tasks.validate import validate_problems

TASKS_FILE = "tasks.json"
MANIFEST_FILE = "manifest.json"
SOURCES_FILE = "sources.json"
_BATCH = re.compile(r"^batch-\d{6}$")


@dataclass
class Batch:
    """One verified pool batch."""

    number: int
    folder: Path
    tasks: list[Task]
    manifest: dict[str, Any]


def _pool_folder(root: str | Path) -> Path:
    """Accept a session folder (with `pool/`) or the pool folder itself."""
    root = Path(root)
    if (root / "pool").is_dir() or not any(root.glob("batch-*")):
        return root / "pool"
    return root


def batch_folders(root: str | Path) -> list[Path]:
    """Finished batch folders (with a manifest) of a session, pool or single batch folder."""
    root = Path(root)
    if (root / MANIFEST_FILE).is_file() and _BATCH.match(root.name):
        return [root]
    pool = _pool_folder(root)
    if not pool.is_dir():
        return []
    found = [p for p in pool.iterdir() if p.is_dir() and _BATCH.match(p.name)]
    return sorted(p for p in found if (p / MANIFEST_FILE).exists())


def read_batch(folder: str | Path) -> Batch:
    """Read a batch and re-check both hashes of its manifest; refuse it if either differs."""
    folder = Path(folder)
    manifest = store.read(folder / MANIFEST_FILE)
    if not isinstance(manifest, dict):
        raise IntegrityError(f"{folder / MANIFEST_FILE}: expected a JSON object")
    for name, field in ((TASKS_FILE, "tasks_sha256"), (SOURCES_FILE, "source_manifest_sha256")):
        path = folder / name
        if not path.is_file():
            raise IntegrityError(f"{path}: missing from a finished pool batch; delete {folder}")
        actual = store.sha256_file(path)
        if actual != manifest.get(field):
            raise IntegrityError(
                f"{path}: changed after the batch was built (sha256 {actual[:12]}..., "
                f"{MANIFEST_FILE} {field} says {str(manifest.get(field))[:12]}...). Its tasks "
                f"are no longer proven; delete {folder} and build the batch again."
            )
    document = store.read(folder / TASKS_FILE)
    try:
        tasks = [Task.model_validate(value) for value in document["tasks"]]
    except (KeyError, TypeError, ValidationError) as error:
        raise IntegrityError(f"{folder / TASKS_FILE}: not a list of valid tasks: {error}") from None
    if len(tasks) != manifest.get("tasks"):
        raise IntegrityError(f"{folder}: {len(tasks)} tasks, manifest says {manifest.get('tasks')}")
    number = int(folder.name.removeprefix("batch-"))
    check_pool(tasks, str(folder))
    return Batch(number=number, folder=folder, tasks=tasks, manifest=manifest)


def load_pool(root: str | Path) -> list[Batch]:
    """Every finished batch of a session (or pool folder), verified, with the pool rules."""
    batches = [read_batch(folder) for folder in batch_folders(root)]
    check_pool((task for batch in batches for task in batch.tasks), str(_pool_folder(root)))
    return batches


def pool_tasks(root: str | Path) -> list[Task]:
    """All tasks of a verified pool, batch by batch."""
    return [task for batch in load_pool(root) for task in batch.tasks]


def source_manifest(config: SessionConfig, sources: Sequence[TaskSource]) -> dict[str, Any]:
    """What every task of a batch derives from: the sources, the seed, the split rule."""
    return {
        "seed": config.seed,
        "salt": config.tasks.salt,
        "splits": config.tasks.splits.model_dump(mode="json"),
        "languages": list(config.tasks.languages),
        "sources": [source.manifest() for source in sources],
    }


def _interleave(sources: Sequence[TaskSource]) -> Iterator[Problem]:
    """One problem from each source in turn, so that no source starves the others."""
    iterators = [iter(source.problems()) for source in sources]
    while iterators:
        for iterator in list(iterators):
            problem = next(iterator, None)
            if problem is None:
                iterators.remove(iterator)
            else:
                yield problem


def draw(
    config: SessionConfig,
    sources: Sequence[TaskSource],
    n: int,
    *,
    used_ids: set[str],
    closed_keys: set[str],
) -> list[Problem]:
    """The next candidate problems: fresh tasks only, with their split, about `n` tasks.

    Tasks already pooled are skipped, and so are problems an earlier batch dropped.
    Unusable rows (with a skip reason) are drawn too, once, so that their reason is
    recorded; they do not count toward `n`. The last problem is cut so that exactly
    `n` tasks are drawn; its other languages stay fresh for the next batch.
    """
    drawn: list[Problem] = []
    total = 0
    seen = set(used_ids)
    for problem in _interleave(sources):
        if total >= n:
            break
        if problem.key in closed_keys:
            continue
        if problem.skip_reason:
            closed_keys.add(problem.key)
            drawn.append(problem)
            continue
        fresh = [task for task in problem.tasks if task.id not in seen]
        if not fresh:
            continue
        split = problem.fixed_split or assign_split(
            problem.family, config.tasks.salt, config.tasks.splits
        )
        fresh = [task.with_split(split) for task in fresh[: n - total]]
        seen.update(task.id for task in fresh)
        total += len(fresh)
        drawn.append(
            Problem(key=problem.key, family=problem.family, tasks=fresh, fixed_split=split)
        )
    return drawn


def _next_number(paths: store.SessionPaths) -> int:
    """The first batch without a manifest (an interrupted build), else the next number."""
    for number in paths.batches():
        if not (paths.batch(number) / MANIFEST_FILE).exists():
            return number
    return max(paths.batches(), default=0) + 1


def _differences(old: Any, new: Any, where: str = "") -> list[str]:
    """Where two JSON values differ, as `path: old -> new` lines."""
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key in sorted(set(old) | set(new)):
            found += _differences(old.get(key), new.get(key), f"{where}.{key}" if where else key)
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        found = []
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            found += _differences(a, b, f"{where}[{index}]")
        return found
    return [] if old == new else [f"{where}: {json.dumps(old)} -> {json.dumps(new)}"]


def check_sources(existing: Sequence[Batch], current: dict[str, Any]) -> None:
    """Refuse to extend a pool whose batches came from other sources than the config's.

    A batch is bound to its source manifest (config, code revision of the curriculum,
    seed, split rule, languages): new tasks drawn from a changed source would mix two
    task sets in one pool. ConfigError names every field that changed.
    """
    for batch in existing:
        recorded = store.read(batch.folder / SOURCES_FILE)
        recorded.pop("schema_version", None)  # store's envelope, not a source field
        changed = _differences(recorded, current)
        if changed:
            raise ConfigError(
                f"{batch.folder}: the pool was built from other sources than the config now "
                "gives ("
                + "; ".join(changed[:6])
                + (" ..." if len(changed) > 6 else "")
                + "); restore them or start a new session"
            )


def prepare_batch(
    session: str | Path,
    config: SessionConfig,
    *,
    n: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> Batch:
    """Draw up to `n` fresh tasks (default `tasks.batch_size`), validate, write the next batch.

    A batch is written whole or not at all: when `stop` asks to stop during its
    validation, the sandbox's `Interrupted` propagates and nothing is written, so
    the next call draws the same tasks again.

    Raises `ConfigError` when the sources have no fresh task left, and
    `IntegrityError` when the existing pool is tampered with or the new tasks would
    put a family in two splits (e.g. the salt changed between batches).
    """
    paths = store.SessionPaths(session)
    existing = load_pool(paths.root)
    used_ids = {task.id for batch in existing for task in batch.tasks}
    closed_keys = {
        entry["key"] for batch in existing for entry in batch.manifest.get("dropped", [])
    }
    sources = open_sources(config.tasks, config.seed)
    manifest = source_manifest(config, sources)
    check_sources(existing, manifest)
    wanted = n if n is not None else config.tasks.batch_size
    candidates = draw(config, sources, wanted, used_ids=used_ids, closed_keys=closed_keys)
    if not any(problem.tasks for problem in candidates):
        raise ConfigError(
            f"{paths.pool}: the configured sources have no fresh task left "
            f"({len(used_ids)} already pooled); raise tasks.sources[].variants, add a "
            "source, or start a new session"
        )
    pooled = [task for batch in existing for task in batch.tasks]
    drawn = [task for problem in candidates for task in problem.tasks]
    check_pool([*pooled, *drawn], str(paths.pool))  # before any sandbox time is spent
    started = time.monotonic()
    verdicts = validate_problems(candidates, config.sandbox, on_done=on_progress, stop=stop)
    seconds = time.monotonic() - started

    accepted: list[Task] = []
    dropped: list[dict[str, Any]] = []
    unverified: list[dict[str, Any]] = []
    for problem, verdict in zip(candidates, verdicts, strict=True):
        entry = {"key": problem.key, "family": problem.family, "reason": verdict.reason}
        if not verdict.accepted:
            dropped.append({**entry, "tasks": len(problem.tasks)})
            continue
        accepted.extend(problem.tasks)
        if not verdict.verified:
            unverified.append(entry)
    return write_batch(
        paths.batch(_next_number(paths)),
        accepted,
        manifest,
        {
            "problems": {
                "drawn": len(candidates),
                "accepted": len(candidates) - len(dropped),
                "dropped": len(dropped),
                "unverified": len(unverified),
            },
            "validation": {
                "sandbox_checks": sum(verdict.checks for verdict in verdicts),
                "verified_problems": sum(1 for v in verdicts if v.verified),
                "seconds": round(seconds, 3),
                "sandbox_backend": config.sandbox.backend,
            },
            "dropped": dropped,
            "unverified": unverified,
        },
    )


def write_batch(
    folder: str | Path,
    tasks: Sequence[Task],
    sources: dict[str, Any],
    report: dict[str, Any] | None = None,
) -> Batch:
    """Write a batch: source manifest and tasks first, the binding manifest last."""
    folder = Path(folder)
    for task in tasks:
        if task.split is None:
            raise IntegrityError(f"task {task.id} has no split; the pool assigns it before writing")
    store.write_json(folder / SOURCES_FILE, sources)
    store.write_json(folder / TASKS_FILE, {"tasks": [task.to_json() for task in tasks]})
    manifest = {
        "batch": int(folder.name.removeprefix("batch-")),
        "tasks_sha256": store.sha256_file(folder / TASKS_FILE),
        "source_manifest_sha256": store.sha256_file(folder / SOURCES_FILE),
        "tasks": len(tasks),
        "families": len({task.family for task in tasks}),
        "languages": dict(Counter(task.language for task in tasks)),
        "splits": dict(Counter(task.split for task in tasks)),
        **(report or {}),
    }
    store.write_json(folder / MANIFEST_FILE, manifest)
    return read_batch(folder)
