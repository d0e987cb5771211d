"""`codeloop verify --session S`: recompute every recorded sha256 and re-check every invariant.

A session is evidence: its numbers are worth what its files prove. Phases already
refuse tampered inputs when they run; this module checks a whole session after the
fact, file by file, so a user (or a reviewer, months later) can trust a finished run
or see exactly what no longer holds. Nothing here trusts a file because of where it
is: each check recomputes a hash or re-derives a fact from the files it depends on.

Checks, per round where the phase finished:
  tasks       tasks.json is the file prepare hashed; no task twice; no family in both
              train and validation; the fixed development set is the session's
  collect     collect-rows.json is what collect hashed (answers not edited since)
  baseline, candidate   their rows files are what the phase hashed
  export      train.jsonl and its manifest match export.json; every row is a train
              task of this or an earlier round (never a validation task or family of
              any round); the row's program is one that collect verified, and its
              sha256 is the one the row records
  train       the adapter's sha256 is train.json's (weights kept exactly when accepted)
  audit-*     summary.json is what the audit hashed
  finish      every input finish.json lists still has its recorded sha256
  decision    the decision recomputed from the round's saved rows (`finish.decide`:
              gate, audits, confirmation samples) is finish.json's: accepted or not,
              its text and its comparisons
and for the session: status.json's retained adapter is the last accepted round's.
With `recheck`, every training row's program runs again in the sandbox against its
task's hidden tests and must pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop import recipe, store
from codeloop.engines.base import adapter_sha256
from codeloop.errors import CodeloopError
from codeloop.loop.common import PHASES
from codeloop.loop.prepare import check_assignment
from codeloop.tasks.schema import Task


@dataclass(frozen=True)
class Finding:
    """One check: where, what, whether it holds, and why not."""

    round: int | None
    check: str
    ok: bool
    detail: str = ""


class _Checks:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, number: int | None, check: str, ok: bool, detail: str = "") -> bool:
        self.findings.append(Finding(number, check, ok, "" if ok else detail))
        return ok

    def sha(self, number: int | None, check: str, path: Path, expected: str | None) -> bool:
        if expected is None:
            return self.add(number, check, False, f"{path.name}: no sha256 recorded")
        if not path.exists():
            return self.add(number, check, False, f"{path.name}: missing")
        actual = store.sha256_file(path)
        return self.add(
            number,
            check,
            actual == expected,
            f"{path.name}: sha256 {actual[:12]} differs from the recorded {expected[:12]}",
        )


def _read(path: Path) -> Any:
    return store.read(path) if path.exists() else None


def _program(row: dict[str, Any]) -> str | None:
    """The program a training row's answer holds (the fenced block the trainer sees)."""
    answer = row["messages"][-1]["content"]
    try:
        return recipe.source(answer, row["language"])
    except ValueError:
        return None


def _verified(rows_file: Path) -> set[str]:
    """Programs collect verified in one round (every distinct passing answer)."""
    found: set[str] = set()
    for row in (_read(rows_file) or {}).get("rows", []):
        if "verified" in row:
            found.update(item["program"] for item in row["verified"])
        elif row.get("passed") and row.get("program"):
            found.add(row["program"])
    return found


def verify_session(root: str | Path, recheck: bool = False) -> list[Finding]:
    """Every check of the module docstring on the session at `root`."""
    session = store.SessionPaths(root)
    if not session.config.exists():
        raise CodeloopError(f"{session.root}: not a session folder (no config.toml)")
    checks = _Checks()
    development = _read(session.development)
    fixed = sorted(t["id"] for t in development["tasks"]) if development else None
    train_tasks: dict[str, dict[str, Any]] = {}
    validation_ids: set[str] = set()
    validation_families: set[str] = set()
    verified: set[str] = set()
    rows_to_recheck: list[tuple[int, dict[str, Any], str]] = []
    accepted: list[int] = []
    for number in session.rounds():
        folder = session.round(number)
        result = {p: _read(folder / f"{p}.json") for p in PHASES}
        if result["prepare"] is None:
            continue
        if not checks.sha(
            number, "tasks", folder / "tasks.json", result["prepare"].get("tasks_sha256")
        ):
            continue  # nothing below can be trusted against a changed task list
        assigned = store.read(folder / "tasks.json")
        try:
            check_assignment(assigned["train"], assigned["validation"], "tasks.json")
            checks.add(number, "splits", True)
        except CodeloopError as error:
            checks.add(number, "splits", False, str(error))
        if fixed is not None:
            checks.add(
                number,
                "development set",
                sorted(assigned.get("fixed_ids", [])) == fixed,
                "the round's fixed development ids are not development.json's",
            )
        train_tasks.update({t["id"]: t for t in assigned["train"]})
        validation_ids.update(t["id"] for t in assigned["validation"])
        validation_families.update(t["family"] for t in assigned["validation"])
        if result["collect"] is not None:
            rows_file = folder / "collect-rows.json"
            if checks.sha(number, "collect", rows_file, result["collect"].get("rows_sha256")):
                verified |= _verified(rows_file)
        for phase in ("baseline", "candidate"):
            if result[phase] is not None:
                checks.sha(
                    number, phase, folder / f"{phase}-rows.json", result[phase].get("rows_sha256")
                )
        if result["export"] is not None:
            rows = _check_export(checks, number, folder, result["export"])
            before = len(checks.findings)
            for row in rows:
                task = train_tasks.get(row.get("task_id"))
                planted = row.get("task_id") in validation_ids or (
                    task is not None and task["family"] in validation_families
                )
                if task is None or planted:
                    what = "a validation task or family" if planted else "no train task"
                    checks.add(number, "export rows", False, f"{row.get('task_id')}: {what}")
                    continue
                program = _program(row)
                recorded = row.get("verification", {}).get("program_sha256")
                if program is None or program not in verified:
                    checks.add(
                        number,
                        "export rows",
                        False,
                        f"{row['task_id']}: its program is not one that collect verified",
                    )
                elif recorded != store.sha256_bytes(program.encode()):
                    checks.add(
                        number, "export rows", False, f"{row['task_id']}: program sha256 differs"
                    )
                else:
                    rows_to_recheck.append((number, task, program))
            if rows and len(checks.findings) == before:
                checks.add(number, "export rows", True)
        finish = result["finish"]
        if result["train"] is not None and not result["train"].get("skipped"):
            _check_adapter(checks, number, folder, result["train"], finish)
        for phase in ("audit-parent", "audit-candidate"):
            if result[phase] is not None and not result[phase].get("skipped"):
                checks.sha(
                    number,
                    phase,
                    folder / phase / "summary.json",
                    result[phase].get("summary_sha256"),
                )
        if finish is not None:
            changed = [
                name
                for name, digest in finish.get("inputs", {}).items()
                if not (session.root / name).exists()
                or store.sha256_file(session.root / name) != digest
            ]
            checks.add(
                number,
                "finish inputs",
                not changed,
                f"{len(changed)} input(s) changed since finish, e.g. {changed[:1]}",
            )
            _check_decision(checks, session.root, number, finish)
            if finish.get("accepted"):
                accepted.append(number)
    status = _read(session.status)
    if status is not None:
        expected = f"{store.round_name(accepted[-1])}/adapter" if accepted else None
        checks.add(
            None,
            "retained adapter",
            status.get("retained_adapter") == expected,
            f"status.json retains {status.get('retained_adapter')}, the last accepted round "
            f"gives {expected}",
        )
    if recheck and rows_to_recheck:
        _recheck(checks, session.root, rows_to_recheck)
    return checks.findings


def _check_decision(checks: _Checks, root: Path, number: int, finish: dict[str, Any]) -> None:
    """finish.json's decision is the one its round's files give now."""
    from codeloop.loop.finish import decide
    from codeloop.loop.phases import open_round

    try:
        recomputed = decide(open_round(root, number))
    except (CodeloopError, KeyError, OSError, ValueError) as error:
        checks.add(number, "decision", False, f"cannot recompute the decision: {error}")
        return
    differing = [key for key, value in recomputed.items() if finish.get(key) != value]
    checks.add(
        number,
        "decision",
        not differing,
        f"finish.json's {', '.join(differing)} differ(s) from the decision its files give "
        f"({recomputed['decision']!r})",
    )


def _check_export(
    checks: _Checks, number: int, folder: Path, export: dict[str, Any]
) -> list[dict[str, Any]]:
    data = folder / "train.jsonl"
    if not data.exists() and not export.get("rows"):
        return []
    if not checks.sha(number, "export", data, export.get("data_sha256")):
        return []
    manifest = _read(Path(f"{data}.manifest.json"))
    checks.add(
        number,
        "export manifest",
        manifest is not None and manifest.get("dataset_sha256") == export.get("data_sha256"),
        "train.jsonl.manifest.json does not bind train.jsonl",
    )
    return [json.loads(line) for line in data.read_text().splitlines() if line.strip()]


def _check_adapter(
    checks: _Checks,
    number: int,
    folder: Path,
    train: dict[str, Any],
    finish: dict[str, Any] | None,
) -> None:
    adapter = folder / "adapter"
    weights = adapter / "adapter_model.safetensors"
    if finish is not None and not finish.get("accepted"):
        checks.add(number, "adapter", not weights.exists(), "a rejected candidate's weights remain")
        return
    if not weights.exists():
        checks.add(number, "adapter", False, "the adapter's weights are missing")
        return
    actual = adapter_sha256(adapter)
    checks.add(
        number,
        "adapter",
        actual == train.get("adapter_sha256"),
        f"adapter sha256 {actual[:12]} differs from train.json's "
        f"{str(train.get('adapter_sha256'))[:12]}",
    )


def _recheck(checks: _Checks, root: Path, rows: list[tuple[int, dict[str, Any], str]]) -> None:
    """Run every training row's program again, composed as collect composed it."""
    from codeloop.loop.collect import request
    from codeloop.loop.phases import open_round
    from codeloop.sandbox import check_many

    rounds = {number: open_round(root, number) for number in {n for n, _t, _p in rows}}
    requests = [
        request(Task.model_validate(task), program, rounds[number])
        for number, task, program in rows
    ]
    sandbox = next(iter(rounds.values())).config.sandbox
    results = check_many(requests, workers=sandbox.workers, backend=sandbox.backend)
    for (number, task, _program), result in zip(rows, results, strict=True):
        checks.add(
            number,
            "recheck",
            result.passed,
            f"{task['id']} ({task['language']}): {result.status} {result.feedback.strip()[:200]}",
        )
