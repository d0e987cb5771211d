"""`codeloop export-dataset --session S --out DIR`: a session's verified training rows as a dataset.

What a session learnt from is worth sharing or reusing (another model, another
trainer): the rows every round trained on, each a program the model wrote that
passed the task's hidden tests and was re-verified at export. The folder is what
Hugging Face `datasets` loads (`load_dataset(DIR)`): `data/train.parquet` and a
dataset card (README.md) stating where the tasks came from, how each row was
verified, counts per language and the licences of the sources.

The session is checked first (`codeloop verify`'s checks, without the sandbox
re-run): a session with a violated hash or invariant is refused, so a dataset never
launders tampered rows. The card publishes the session's root digest (the last finished
round's, `loop/digest.py`), so a reader who later gets the session can check with
`codeloop verify --expect-digest D` that it is the one the dataset came from, unchanged.
Rows are deduplicated by (task, program) across rounds; the first round that trained on
a row is recorded.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from codeloop import __version__, recipe, store
from codeloop.errors import CodeloopError, ConfigError
from codeloop.loop.digest import digests
from codeloop.loop.verify import verify_session

CARD = """---
license: {licence}
task_categories:
- text-generation
tags:
- code
- codeloop
- self-training
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train.parquet
---

# Verified training rows of codeloop session `{session}`

Each row is a program that the model of this session wrote and that passed the
task's hidden tests in codeloop's sandbox (bubblewrap, no network, resource limits),
then passed again when the round exported it. No reference solution is in any row.
`messages` is the conversation as the model was trained on it; `program` is the
verified program, `program_sha256` its hash.

- rows: {rows} (deduplicated by task and program over {rounds} round(s))
- per language: {languages}
- sources (dataset, revision, licence): {sources}
- verification: {verification}
- exported by codeloop {version}; `data/train.parquet` sha256 `{parquet_sha256}`
- session digest: {digest}

Scope: the tests are the tasks' own checks, not proof of general correctness;
public source overlap with the tasks is possible.
"""


def collect_rows(root: Path) -> list[dict[str, Any]]:
    """Every round's train.jsonl rows, first occurrence of each (task, program) kept."""
    session = store.SessionPaths(root)
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for number in session.rounds():
        data = session.round(number) / "train.jsonl"
        if not data.exists():
            continue
        tasks = store.read(session.round(number) / "tasks.json")
        families = {task["id"]: task["family"] for task in tasks["train"]}
        for line in data.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            program = recipe.source(row["messages"][-1]["content"], row["language"])
            key = (row["task_id"], row["verification"]["program_sha256"])
            if key in seen:
                continue
            seen.add(key)
            provenance = row.get("provenance", {})
            rows.append(
                {
                    "task_id": row["task_id"],
                    "language": row["language"],
                    "family": families.get(row["task_id"], ""),
                    "messages": row["messages"],
                    "program": program,
                    "program_sha256": row["verification"]["program_sha256"],
                    "verification": row["verification"].get("kind", ""),
                    "round": number,
                    "source_dataset": provenance.get("dataset", ""),
                    "source_revision": provenance.get("revision", ""),
                    "source_row_sha256": provenance.get("source_row_sha256", ""),
                    "license": provenance.get("license", ""),
                }
            )
    return rows


def chain_digest(root: Path, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The session's root digest the card publishes (`loop/digest.py`): the last finished
    round's, which covers every file of that round and of the rounds before it, with the
    rounds whose rows it does not cover (exported before their round finished)."""
    found = digests(root)
    last = max(found, default=None)
    later = sorted({row["round"] for row in rows if last is None or row["round"] > last})
    return {"digest": found.get(last) if last else None, "round": last, "not_covered": later}


def _digest_line(root: Path, published: dict[str, Any]) -> str:
    """The card's line on the digest: what it covers, and how a reader checks it."""
    value, number, later = published["digest"], published["round"], published["not_covered"]
    if value is None:
        return (
            "none: no round of the session had finished when this dataset was exported, so "
            "no digest covers its rows"
        )
    line = (
        f"`{value}`, round {number}'s root digest over the session's chain (config, origin "
        f"record, development set and every file of rounds 1-{number}); whoever holds the "
        f"session checks it is unchanged with `codeloop verify --session {root.name} "
        f"--expect-digest {value}`"
    )
    if later:
        rounds = ", ".join(str(n) for n in later)
        line += f". Rows of round(s) {rounds} (not finished at export) are not covered by it"
    return line


def export_dataset(root: str | Path, out: str | Path) -> dict[str, Any]:
    """Write the dataset folder; returns its summary (rows, languages, parquet sha256)."""
    try:
        from datasets import Dataset
    except ImportError:
        raise ConfigError(
            "export-dataset needs the `datasets` package: pip install 'codeloop[cpu]' "
            "(or pip install datasets)"
        ) from None

    root, out = Path(root), Path(out)
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"{out}: exists and is not empty; choose a new folder")
    violations = [f for f in verify_session(root) if not f.ok]
    if violations:
        first = violations[0]
        raise CodeloopError(
            f"{root}: {len(violations)} violation(s) of the session's hashes or invariants "
            f"(round {first.round}, {first.check}: {first.detail}); run `codeloop verify "
            f"--session {root}` to see them all. Refusing to export."
        )
    rows = collect_rows(root)
    if not rows:
        raise CodeloopError(f"{root}: no round has exported training rows yet")
    (out / "data").mkdir(parents=True, exist_ok=True)
    parquet = out / "data" / "train.parquet"
    Dataset.from_list(rows).to_parquet(str(parquet))
    languages = Counter(row["language"] for row in rows)
    sources = sorted({(r["source_dataset"], r["source_revision"], r["license"]) for r in rows})
    licences = sorted({licence for _d, _r, licence in sources if licence})
    summary = {
        "rows": len(rows),
        "languages": dict(sorted(languages.items())),
        "parquet_sha256": store.sha256_file(parquet),
        "sources": [list(source) for source in sources],
        "session_digest": chain_digest(root, rows),
    }
    card = CARD.format(
        licence=licences[0].lower() if len(licences) == 1 else "other",
        session=root.resolve().name,
        rows=len(rows),
        rounds=len({row["round"] for row in rows}),
        languages=", ".join(f"{lang} {n}" for lang, n in sorted(languages.items())),
        sources="; ".join(f"{d} ({r}, {lic})" for d, r, lic in sources),
        verification=", ".join(sorted({row["verification"] for row in rows})),
        version=__version__,
        parquet_sha256=summary["parquet_sha256"],
        digest=_digest_line(root.resolve(), summary["session_digest"]),
    )
    store.write_text(out / "README.md", card)
    store.write_json(out / "codeloop-export.json", {"session": str(root.resolve()), **summary})
    return summary
