"""export: the verified training rows of this and earlier rounds, re-verified, balanced.

Only passed answers to TRAIN tasks are replayed (never validation or test): up to
`export.per_task` distinct verified programs per task and (where set)
`export.per_family` per problem family and language, the oldest kept; then the newest
`export.replay_per_language` per language. Each program is checked again now, and
the row trains on exactly the program that was re-checked: a program that passed
once and fails today means the sandbox or the task changed, which is an error, not
a row to drop quietly. With `export.balance = "equal"` every language contributes
the same number of rows, so easy languages cannot dominate the update; with
"capped" each language contributes what it has up to the cap, and languages with
no verified row are named in export.json.

A round's `collect-rows.json` is used only if its sha256 is the one collect.json
recorded, so answers edited after collect never reach training.
"""

from __future__ import annotations

import json
from typing import Any

from codeloop import __version__, recipe, store
from codeloop.errors import ConfigError, IntegrityError
from codeloop.loop.collect import check_answers
from codeloop.loop.common import Round
from codeloop.tasks.schema import Task

SCOPE = (
    "Complete programs written by the model and checked in the sandbox against the "
    "task's hidden tests; public source overlap is possible."
)


def _token_counter(r: Round):
    """Counts chat-template tokens with the training model's tokenizer, when it is local."""
    from codeloop.models import hf_folder, resolve

    model = r.config.train.base_model or r.config.engine.model
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(hf_folder(resolve(model)), local_files_only=True)
    except Exception:  # no local tokenizer (a hub model offline): no length filter
        return None

    def count(messages: list[dict[str, str]]) -> int:
        ids = tokenizer.apply_chat_template(messages, tokenize=True)
        return len(ids["input_ids"] if hasattr(ids, "keys") else ids)

    return count


Candidate = tuple[Task, str, int]
"""A verified train program: its task, the program text, the round that verified it."""


def _verified_programs(row: dict[str, Any]) -> list[str]:
    if "verified" in row:
        return [item["program"] for item in row["verified"]]
    return [row["program"]] if row["passed"] and row.get("program") else []


def candidates(r: Round) -> dict[str, list[Candidate]]:
    """Verified train programs per language, oldest first, at most `per_task` per task
    and `per_family` per (language, family)."""
    found: dict[str, list[Candidate]] = {}
    taken: dict[str, int] = {}
    per_family: dict[tuple[str, str], int] = {}
    family_cap = r.config.export.per_family
    for number in r.session.rounds():
        if number > r.number:
            continue
        other = Round(r.session, r.config, number)
        rows_file = other.path("collect-rows.json")
        if not other.phase_done("collect"):
            continue
        recorded = other.result("collect").get("rows_sha256")
        if recorded is not None and store.sha256_file(rows_file) != recorded:
            raise IntegrityError(
                f"{rows_file}: the collected answers changed after collect (sha256 differs "
                "from collect.json); restore the file, or start a new session"
            )
        train = {task.id: task for task in other.tasks("train")}
        for row in store.read(rows_file)["rows"]:
            task = train.get(row["id"])
            if task is None or task.split != "train":
                continue
            family = (task.language, task.family)
            for program in _verified_programs(row):
                if taken.get(task.id, 0) >= r.config.export.per_task:
                    break
                if family_cap is not None and per_family.get(family, 0) >= family_cap:
                    break
                taken[task.id] = taken.get(task.id, 0) + 1
                per_family[family] = per_family.get(family, 0) + 1
                found.setdefault(task.language, []).append((task, program, number))
    return found


REVERIFY_CHUNK = 16
"""Programs re-verified between two saves of export-verified.json (and stop checks)."""


def _key(task: Task, program: str) -> str:
    return store.sha256_json([task.id, program])


def reverify(r: Round, flat: list[Candidate]) -> None:
    """Check every chosen program again, in chunks, resumably.

    Passed programs are recorded in export-verified.json after each chunk, so a
    pause (the session's PAUSE file or SIGTERM, honoured before each chunk and
    inside a chunk's sandbox batch) or a kill loses at most one chunk of checks. The
    ledger counts only under the codeloop version and sandbox config that wrote it.
    """
    ledger = r.path("export-verified.json")
    binding = {
        "codeloop": __version__,
        "sandbox_sha256": store.sha256_json(r.config.sandbox.model_dump(mode="json")),
    }
    saved = store.read(ledger, {"binding": binding, "passed": []})
    passed: set[str] = set(saved["passed"]) if saved.get("binding") == binding else set()
    todo = [item for item in flat if _key(item[0], item[1]) not in passed]
    for start in range(0, len(todo), REVERIFY_CHUNK):
        r.check_stop()
        r.progress(
            "export",
            len(flat) - len(todo) + start,
            len(flat),
            task="re-verifying replayed answers",
        )
        chunk = todo[start : start + REVERIFY_CHUNK]
        checks = check_answers(
            r, [(task, recipe.fenced(program, task.language)) for task, program, _n in chunk]
        )
        for (task, program, number), check in zip(chunk, checks, strict=True):
            if not check.passed:
                raise IntegrityError(
                    f"task {task.id} ({task.language}, round {number}): a previously verified "
                    f"training answer no longer passes ({check.status}); the sandbox or the "
                    "task changed, so earlier verification cannot be trusted"
                )
            passed.add(_key(task, program))
        store.write_json(ledger, {"binding": binding, "passed": sorted(passed)})


def run(r: Round, resume: bool) -> dict[str, Any]:
    cfg = r.config
    if cfg.engine.kind == "replay" and not cfg.export.allow_replay_answers:
        # Self-training means training on what the model wrote; saved answers are for
        # re-verification and tests.
        raise ConfigError(
            "export: engine.kind is 'replay', whose answers no model of this session wrote; "
            "codeloop trains only on its model's own verified answers (tests may set "
            "export.allow_replay_answers = true)"
        )
    found = candidates(r)
    chosen = {
        lang: found.get(lang, [])[-cfg.export.replay_per_language :] for lang in cfg.tasks.languages
    }
    flat = [item for lang in cfg.tasks.languages for item in chosen[lang]]
    reverify(r, flat)
    count = _token_counter(r)
    grouped: dict[str, list[dict[str, Any]]] = {lang: [] for lang in cfg.tasks.languages}
    too_long = 0
    for task, program, _number in flat:
        answer = recipe.fenced(program, task.language)
        turns = (
            recipe.contract_messages(task)
            if cfg.export.conversation == "contract"
            else recipe.messages(task)
        )
        messages = [*turns, {"role": "assistant", "content": answer}]
        if count is not None and count(messages) > cfg.export.max_length:
            too_long += 1
            continue
        grouped[task.language].append(
            {
                "task_id": task.id,
                "language": task.language,
                "split": "train",
                "messages": messages,
                "verification": {
                    "kind": "local_execution",
                    "passed": True,
                    "status": "passed",
                    "program_sha256": store.sha256_bytes(program.encode()),
                },
                "provenance": {
                    **task.provenance.model_dump(mode="json"),
                    "task_sha256": store.sha256_json(task.to_json()),
                },
            }
        )
    present = [
        rows for rows in grouped.values() if len(rows) >= max(1, cfg.export.min_per_language)
    ]
    if cfg.export.balance == "equal":
        per_language = min((len(rows) for rows in present), default=0)
    else:
        per_language = max((len(rows) for rows in present), default=0)
    # Interleave the languages, so that an early stop of training still saw every one.
    rows = [rows[i] for i in range(per_language) for rows in present if i < len(rows)]
    languages, data_sha = write_dataset(r, rows, per_language, too_long, SCOPE)
    short = [lang for lang, n in languages.items() if n < cfg.export.min_per_language]
    ready = len(rows) >= cfg.export.min_examples and not short
    reason = (
        "enough verified rows"
        if ready
        else f"{len(rows)} rows (need {cfg.export.min_examples})"
        if not short
        else f"too few rows in {', '.join(short)}"
    )
    r.progress("export", len(flat), len(flat))
    return {
        "completed": True,
        "ready": ready,
        "reason": reason,
        "rows": len(rows),
        "languages": languages,
        "without_rows": [lang for lang, n in languages.items() if n == 0],
        "balance": cfg.export.balance,
        "data_sha256": data_sha,
        "dropped_too_long": too_long,
    }


def write_dataset(
    r: Round, rows: list[dict[str, Any]], per_language: int, too_long: int, scope: str
) -> tuple[dict[str, int], str]:
    """Write train.jsonl and its manifest (what the trainer checks before it trains);
    return the rows per language and the data's sha256."""
    data = r.path("train.jsonl")
    store.write_text(data, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    languages = {
        lang: sum(row["language"] == lang for row in rows) for lang in r.config.tasks.languages
    }
    data_sha = store.sha256_file(data)
    store.write_json(
        r.path("train.jsonl.manifest.json"),
        {
            "split": "train",
            "verification": "local_execution",
            "rows": len(rows),
            "languages": languages,
            "dataset_sha256": data_sha,
            "per_language": per_language,
            "dropped_too_long": too_long,
            "scope": scope,
        },
    )
    return languages, data_sha
