"""`codeloop verify --session S`: recompute every recorded sha256 and re-check every invariant.

A session is evidence: its numbers are worth what its files prove. Phases already
refuse tampered inputs when they run; this module checks a whole session after the
fact, file by file, so a user (or a reviewer, months later) can trust a finished run
or see exactly what no longer holds. Nothing here trusts a file because of where it
is: each check recomputes a hash or re-derives a fact from the files it depends on.

Nothing re-derivable is taken on trust; what cannot be re-derived is a `Finding` with
`trusted` set, named with why (never a violation, never reported as holding).

For the session:
  config      config.toml is the config its origin record rebuilds (`loop/origin.py`:
              the preset as shipped plus the recorded overrides), compared by field; a
              config from a user's own file, or without a record, is taken on trust, and
              so are the overrides (listed by field)
  tasks rebuilt   development.json's tasks are the ones their sources give (`rederive`)
Checks, per round where the phase finished:
  tasks       tasks.json is the file prepare hashed; no task twice; no family in both
              train and validation; the fixed development set is the session's
  task content    every task's content gives its id (an edit without the id recomputed
              fails here by id, and its task is left out of every re-run: verify never
              crashes on a file it was given to judge)
  tasks rebuilt   each task of tasks.json, byte for byte (hidden tests included), is the
              one its source gives for the session's seed, salt and split rule; a task
              of a source that cannot be rebuilt offline is taken on trust
  audit tasks rebuilt   audit-tasks.json is the audit's suites as their definition gives
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
With `recheck`, the sandbox runs again, in one batch for the whole session:
  recheck     every training row's program, against its task's hidden tests: it must pass
  recheck evidence   every recorded answer a decision rests on, per round where its phase
              finished: baseline-rows.json and candidate-rows.json (validation tasks),
              audit-parent/rows.json and audit-candidate/rows.json (audit-tasks.json),
              and each confirmation sample in gate-confirm/ and audit-confirm/ (its answer
              from the attempt file beside it). The re-run verdict must be the recorded
              one, so rows whose verdicts were edited and whose every sha256 along the
              chain was rewritten to match still fail: hashes prove a file unchanged since
              it was hashed, only a re-run proves a verdict is the answer's. A re-run the
              machine cannot give (an `environment_error`) fails as "could not run", never
              as a forgery and never as ok; the one exception is a task whose own test gives
              no verdict (`task_error`) where the row recorded exactly that.
  recheck likelihood   under audit.rule = "likelihood", each side's reference scores,
              scored again from the retained weights and compared within 1e-5
              (`loop/rescore.py`); a rejected candidate's deleted weights are named as
              not re-scorable
With `expect_digest`, the digest a reader saved must be a finished round's root digest
over the chain now (`loop/digest.py`): any later rewrite, coordinated or not, fails it.
With `regenerate` N, N recorded answers (a seeded pick, decisive ones likelier) are
asked again of their recorded weights, under the conditions recorded when they were
generated, and compared as text (`loop/regenerate.py`): an answer moved between sides,
or replaced by another passing program, fails there; a difference the recorded
conditions explain (another engine version, a batch effect) is named as on trust.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codeloop import config as session_config
from codeloop import recipe, store
from codeloop.engines.base import adapter_sha256
from codeloop.errors import CodeloopError
from codeloop.evaluate import scoring
from codeloop.evaluate.scoring import program_of
from codeloop.loop import digest, origin, rescore
from codeloop.loop import regenerate as regeneration
from codeloop.loop.audit import LIKELIHOOD
from codeloop.loop.common import PHASES
from codeloop.loop.prepare import check_assignment
from codeloop.loop.rederive import Rederiver, audit_tasks, canonical
from codeloop.sandbox import Check
from codeloop.tasks.schema import Task


@dataclass(frozen=True)
class Finding:
    """One check: where, what, whether it holds, and why not.

    `trusted`: what the check covers could not be re-derived, so it is taken on trust
    (named, with why, in `detail`): never a violation, and never reported as holding.
    """

    round: int | None
    check: str
    ok: bool
    detail: str = ""
    trusted: bool = False


_UNREADABLE = (CodeloopError, KeyError, TypeError, ValueError, AttributeError, OSError)
"""What a file given to judge can raise when read as the phases wrote it: verify turns
each into a failed check naming the file, never a traceback."""


class _Checks:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, number: int | None, check: str, ok: bool, detail: str = "") -> bool:
        self.findings.append(Finding(number, check, ok, "" if ok else detail))
        return ok

    def trust(self, number: int | None, check: str, detail: str) -> None:
        """What `check` covers is taken on trust, for the reason `detail` gives."""
        self.findings.append(Finding(number, check, True, detail, trusted=True))

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


@dataclass
class _Seen:
    """What the rounds checked so far establish, for the rounds after them."""

    fixed: list[str] | None
    train_tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    validation_ids: set[str] = field(default_factory=set)
    validation_families: set[str] = field(default_factory=set)
    verified: set[str] = field(default_factory=set)
    rows_to_recheck: list[tuple[int, dict[str, Any], str]] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)
    evidence: _Evidence = field(default_factory=lambda: _Evidence())
    invalid: set[str] = field(default_factory=set)
    """Ids of recorded tasks whose content does not validate (failed as `task content`)."""
    rederiver: Rederiver | None = None
    """Rebuilds tasks from the session config's sources (None: the config is unreadable)."""


def verify_session(
    root: str | Path,
    recheck: bool = False,
    expect_digest: str | None = None,
    regenerate: int = 0,
    regenerate_seed: int = 0,
) -> list[Finding]:
    """Every check of the module docstring on the session at `root`."""
    session = store.SessionPaths(root)
    if not session.config.exists():
        raise CodeloopError(f"{session.root}: not a session folder (no config.toml)")
    checks = _Checks()
    seen = _Seen(None, rederiver=_check_config(checks, session.root))
    _check_development(checks, session, seen)
    for number in session.rounds():
        try:
            _check_round(checks, session, number, seen, recheck)
        except _UNREADABLE as error:
            checks.add(number, "readable", False, f"the round cannot be checked further: {error}")
    status = _read(session.status)
    if status is not None:
        expected = f"{store.round_name(seen.accepted[-1])}/adapter" if seen.accepted else None
        checks.add(
            None,
            "retained adapter",
            status.get("retained_adapter") == expected,
            f"status.json retains {status.get('retained_adapter')}, the last accepted round "
            f"gives {expected}",
        )
    if recheck:
        try:
            _recheck(checks, session.root, seen.rows_to_recheck, seen.evidence)
        except _UNREADABLE as error:
            checks.add(None, "recheck", False, f"the recheck could not be set up: {error}")
        _rescore(checks, session)
    if expect_digest is not None:
        _check_digest(checks, session.root, expect_digest)
    if regenerate:
        try:
            _regenerate(checks, session, seen, regenerate, regenerate_seed)
        except _UNREADABLE as error:
            checks.add(None, "regenerate", False, f"could not regenerate: {error}")
    return checks.findings


def _regenerate(
    checks: _Checks, session: store.SessionPaths, seen: _Seen, n: int, seed: int
) -> None:
    """`n` recorded answers (picked with `seed`) asked again of their recorded weights
    (`loop/regenerate.py`): a different text fails, what cannot be asked again is named."""
    from codeloop.loop.phases import open_round

    rounds, answers, round_tasks = {}, [], {}
    made = regeneration.generations(session.root)
    for number in session.rounds():
        folder = session.round(number)
        if not (folder / "tasks.json").is_file():
            continue
        assigned = store.read(folder / "tasks.json")
        recorded = [*assigned["train"], *assigned["validation"]]
        if (folder / "audit-tasks.json").is_file():
            recorded += store.read(folder / "audit-tasks.json")["tasks"]
        tasks = {
            t["id"]: Task.model_validate(t) for t in recorded if t.get("id") not in seen.invalid
        }
        rounds[number], round_tasks[number] = open_round(session.root, number), tasks
        answers += regeneration.recorded_answers(rounds[number], tasks, made)
    chosen = regeneration.pick(answers, n, seed)
    for number, r in rounds.items():
        for answer, outcome, detail in regeneration.regenerate(
            r, [a for a in chosen if a.round == number], round_tasks[number]
        ):
            if outcome in ("not regenerable", "unreproducible"):
                what = "not regenerable" if outcome == "not regenerable" else "not reproducible"
                checks.trust(number, "regenerate", f"{answer.label}: {what}: {detail}")
            else:
                checks.add(number, "regenerate", outcome == "same", f"{answer.label}: {detail}")


def _rescore(checks: _Checks, session: store.SessionPaths) -> None:
    """Each audit side's likelihood scores, scored again from the retained weights
    (`loop/rescore.py`): a forged number fails by task, deleted weights are named."""
    from codeloop.loop.phases import open_round

    rescorer = rescore.Rescorer()
    for number in session.rounds():
        folder = session.round(number)
        if not any((folder / phase / LIKELIHOOD).is_file() for phase, _ in rescore.SIDES):
            continue
        try:
            judged = rescore.rescore(open_round(session.root, number), rescorer)
        except _UNREADABLE as error:
            checks.add(number, "recheck likelihood", False, f"cannot re-score: {error}")
            continue
        for item in judged:
            if item.trusted:
                checks.trust(number, "recheck likelihood", item.detail)
            else:
                checks.add(number, "recheck likelihood", item.ok, item.detail)


def _check_config(checks: _Checks, root: Path) -> Rederiver | None:
    """config.toml against the config its origin record rebuilds (`loop/origin.py`);
    returns what rebuilds the session's tasks from it (None when it cannot be read)."""
    try:
        config = session_config.load(store.SessionPaths(root).config)
    except CodeloopError as error:
        checks.add(None, "config", False, f"config.toml: {error}")
        return None
    try:
        differing, rebuilt = origin.compare(root)
    except CodeloopError as error:
        checks.add(None, "config", False, f"{origin.ORIGIN_FILE}: {error}")
        return Rederiver(config)
    if rebuilt.config is None:
        checks.trust(None, "config", f"config.toml is taken on trust: {rebuilt.why_not}")
    else:
        checks.add(
            None,
            "config",
            not differing,
            "config.toml differs from the config its origin rebuilds at "
            + "; ".join(differing[:6])
            + (f" (+{len(differing) - 6} more)" if len(differing) > 6 else ""),
        )
    if rebuilt.trusted:
        checks.trust(None, "config overrides", f"taken on trust: {rebuilt.trusted}")
    return Rederiver(config)


def _check_development(checks: _Checks, session: store.SessionPaths, seen: _Seen) -> None:
    """development.json: readable, and each of its tasks the one its source gives."""
    try:
        development = _read(session.development)
        if development is not None:
            seen.fixed = sorted(t["id"] for t in development["tasks"])
            _rederive(checks, None, "development.json", development["tasks"], seen)
    except _UNREADABLE as error:
        checks.add(None, "development set", False, f"development.json: unreadable: {error}")


def _valid_tasks(checks: _Checks, number: int, tasks: list[dict[str, Any]], seen: _Seen) -> None:
    """Each recorded task of tasks.json is a valid task whose content gives its id: one
    edited without its id recomputed fails here, by id, and is left out of every re-run
    (the recheck cannot compose a test from a task that is not one)."""
    bad = []
    for task in tasks:
        try:
            Task.model_validate(task)
        except _UNREADABLE as error:
            identity = task.get("id") if isinstance(task, dict) else None
            seen.invalid.add(str(identity))
            bad.append(f"{identity}: {_reason(error)}")
    checks.add(
        number,
        "task content",
        not bad,
        f"tasks.json: {len(bad)} task(s) not valid: " + "; ".join(bad[:3]),
    )


def _reason(error: Exception) -> str:
    """An error's message in one line (pydantic's first problem, without its URL)."""
    if isinstance(error, ValidationError) and error.errors():
        return str(error.errors()[0]["msg"]).removeprefix("Value error, ")[:300]
    return str(error).strip().splitlines()[0][:300] if str(error).strip() else repr(error)


def _rederive(
    checks: _Checks, number: int | None, name: str, tasks: list[dict[str, Any]], seen: _Seen
) -> None:
    """Each task of `name`, byte for byte against the one its source gives (`rederive`)."""
    if seen.rederiver is None:
        checks.trust(number, "tasks rebuilt", f"{name}: config.toml unreadable, no source known")
        return
    failed, trusted = [], []
    for task in tasks:
        judged = seen.rederiver.judge(task)
        if judged.outcome == "trust":
            trusted.append(f"{task.get('id')}: not re-derivable ({judged.detail})")
        elif judged.outcome != "same":
            failed.append(f"{task.get('id')} ({task.get('language')}): {judged.detail}")
    checks.add(
        number,
        "tasks rebuilt",
        not failed,
        f"{name}: {len(failed)} task(s) not as their source gives them: " + "; ".join(failed[:3]),
    )
    if trusted:
        checks.trust(
            number, "tasks rebuilt", f"{name}: {len(trusted)} task(s): " + "; ".join(trusted[:2])
        )


def _rederive_audit(checks: _Checks, number: int, folder: Path, seen: _Seen) -> None:
    """audit-tasks.json's tasks are the audit's suites as their definition gives them."""
    if seen.rederiver is None or not (folder / "audit-tasks.json").exists():
        return
    try:
        recorded = store.read(folder / "audit-tasks.json")["tasks"]
        rebuilt = audit_tasks(seen.rederiver.config)
    except _UNREADABLE as error:
        checks.trust(number, "audit tasks rebuilt", f"not re-derivable here: {error}")
        return
    differing = [
        f"{old.get('id')}: differs in "
        + ", ".join(sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k)))
        for old, new in zip(recorded, rebuilt, strict=False)
        if canonical(old) != canonical(new)
    ]
    if len(recorded) != len(rebuilt):
        differing.insert(0, f"{len(recorded)} tasks, the suites give {len(rebuilt)}")
    checks.add(
        number,
        "audit tasks rebuilt",
        not differing,
        "audit-tasks.json is not the audit's suites: " + "; ".join(differing[:3]),
    )


def _check_digest(checks: _Checks, root: Path, expected: str) -> None:
    """The digest a reader saved is one of the finished rounds' digests now."""
    found = digest.digests(root)
    matching = [number for number, value in found.items() if value == expected.strip().lower()]
    checks.add(
        matching[0] if matching else None,
        "expected digest",
        bool(matching),
        f"{expected[:16]}... is no finished round's digest now (rounds "
        f"{', '.join(f'{n}: {d[:12]}' for n, d in found.items()) or 'none finished'}): a file "
        "of the chain changed since it was published, or it is another session's",
    )


def _check_round(
    checks: _Checks, session: store.SessionPaths, number: int, seen: _Seen, recheck: bool
) -> None:
    """One round's checks, in phase order; what it establishes goes into `seen`."""
    folder = session.round(number)
    result = {p: _read(folder / f"{p}.json") for p in PHASES}
    if result["prepare"] is None:
        return
    tasks_sha = result["prepare"].get("tasks_sha256")
    if not checks.sha(number, "tasks", folder / "tasks.json", tasks_sha):
        return  # nothing below can be trusted against a changed task list
    assigned = store.read(folder / "tasks.json")
    try:
        check_assignment(assigned["train"], assigned["validation"], "tasks.json")
        checks.add(number, "splits", True)
    except CodeloopError as error:
        checks.add(number, "splits", False, str(error))
    _valid_tasks(checks, number, assigned["train"] + assigned["validation"], seen)
    _rederive(checks, number, "tasks.json", assigned["train"] + assigned["validation"], seen)
    _rederive_audit(checks, number, folder, seen)
    if seen.fixed is not None:
        checks.add(
            number,
            "development set",
            sorted(assigned.get("fixed_ids", [])) == seen.fixed,
            "the round's fixed development ids are not development.json's",
        )
    seen.train_tasks.update({t["id"]: t for t in assigned["train"]})
    seen.validation_ids.update(t["id"] for t in assigned["validation"])
    seen.validation_families.update(t["family"] for t in assigned["validation"])
    if result["collect"] is not None:
        rows_file = folder / "collect-rows.json"
        if checks.sha(number, "collect", rows_file, result["collect"].get("rows_sha256")):
            seen.verified |= _verified(rows_file)
    for phase in ("baseline", "candidate"):
        if _ran(result[phase]):  # a skipped phase (export not ready) wrote no rows
            digest = result[phase].get("rows_sha256")
            checks.sha(number, phase, folder / f"{phase}-rows.json", digest)
    if result["export"] is not None:
        rows = _check_export(checks, number, folder, result["export"])
        _check_export_rows(checks, number, rows, seen)
    finish = result["finish"]
    if result["train"] is not None and not result["train"].get("skipped"):
        _check_adapter(checks, number, folder, result["train"], finish)
    for phase in ("audit-parent", "audit-candidate"):
        if result[phase] is not None and not result[phase].get("skipped"):
            checks.sha(
                number, phase, folder / phase / "summary.json", result[phase].get("summary_sha256")
            )
    if finish is not None:
        _check_finish(checks, session.root, number, finish)
        if finish.get("accepted"):
            seen.accepted.append(number)
    if recheck:
        valid = [t for t in assigned["validation"] if t["id"] not in seen.invalid]
        _gather(seen.evidence, number, folder, result, valid)


def _check_export_rows(
    checks: _Checks, number: int, rows: list[dict[str, Any]], seen: _Seen
) -> None:
    """Each exported row is a train task's, never a validation task's or family's, and
    its program is one collect verified (queued for `--recheck`'s re-run)."""
    before = len(checks.findings)
    for row in rows:
        task = seen.train_tasks.get(row.get("task_id"))
        planted = row.get("task_id") in seen.validation_ids or (
            task is not None and task["family"] in seen.validation_families
        )
        if task is None or planted:
            what = "a validation task or family" if planted else "no train task"
            checks.add(number, "export rows", False, f"{row.get('task_id')}: {what}")
            continue
        if task["id"] in seen.invalid:
            checks.add(
                number,
                "export rows",
                False,
                f"{task['id']}: its task in tasks.json is not valid (task content), so its "
                "program cannot be re-run",
            )
            continue
        program = _program(row)
        recorded = row.get("verification", {}).get("program_sha256")
        if program is None or program not in seen.verified:
            checks.add(
                number,
                "export rows",
                False,
                f"{row['task_id']}: its program is not one that collect verified",
            )
        elif recorded != store.sha256_bytes(program.encode()):
            checks.add(number, "export rows", False, f"{row['task_id']}: program sha256 differs")
        else:
            seen.rows_to_recheck.append((number, task, program))
    if rows and len(checks.findings) == before:
        checks.add(number, "export rows", True)


def _check_finish(checks: _Checks, root: Path, number: int, finish: dict[str, Any]) -> None:
    """The files finish decided from are unchanged, and its decision is theirs."""
    changed = [
        name
        for name, digest in finish.get("inputs", {}).items()
        if not (root / name).exists() or store.sha256_file(root / name) != digest
    ]
    checks.add(
        number,
        "finish inputs",
        not changed,
        f"{len(changed)} input(s) changed since finish, e.g. {changed[:1]}",
    )
    _check_decision(checks, root, number, finish)


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


@dataclass(frozen=True)
class _Answer:
    """One recorded verdict to re-run: where it is written, the answer's program, the verdict."""

    round: int
    file: str
    """The file that records the verdict, relative to the round folder."""
    label: str
    """The task id (and the sample, for a confirmation sample)."""
    task: Task
    program: str | None
    """None: the answer has no code block (it fails without a run, as when it was scored)."""
    recorded: bool | None
    recorded_status: str | None = None


class _Evidence:
    """The recorded verdicts of a session, gathered file by file before one batched re-run.

    Every file read is remembered even when it holds no answer, so that the output names
    each file the recheck covered; what cannot even be read fails its file.
    """

    def __init__(self) -> None:
        self.answers: list[_Answer] = []
        self.failures: dict[tuple[int, str], list[str]] = {}

    def open(self, number: int, name: str) -> None:
        self.failures.setdefault((number, name), [])

    def fail(self, number: int, name: str, detail: str) -> None:
        self.failures.setdefault((number, name), []).append(f"{name}: {detail}")

    def load(self, number: int, folder: Path, name: str) -> Any:
        """The file `name` of the round (None, and a failure of the file, when unreadable)."""
        self.open(number, name)
        try:
            data = store.read(folder / name, None)
        except CodeloopError as error:
            self.fail(number, name, f"unreadable: {error}")
            return None
        if data is None:
            self.fail(number, name, "missing")
        return data


def _ran(result: dict[str, Any] | None) -> bool:
    return result is not None and not result.get("skipped")


def _gather(
    evidence: _Evidence,
    number: int,
    folder: Path,
    result: dict[str, dict[str, Any] | None],
    validation: list[dict[str, Any]],
) -> None:
    """The round's recorded verdicts whose phase finished: the validation rows the gate
    compared, the audit's rows, and the confirmation samples of both."""
    from codeloop.loop.confirm import AUDIT, GATE

    tasks = {task["id"]: Task.model_validate(task) for task in validation}
    for phase in ("baseline", "candidate"):
        if _ran(result[phase]):
            _rows(evidence, number, folder, f"{phase}-rows.json", tasks)
    if _ran(result["gate"]):
        _samples(evidence, number, folder, GATE, tasks)
        # a sequential gate's looks: each folder holds the samples from the previous look's
        # count on (their seeds and attempt keys continue: confirm-K and up)
        looks = sorted(
            (int(path.name.removeprefix(f"{GATE}-look-")), path.name)
            for path in folder.glob(f"{GATE}-look-*")
            if path.name.removeprefix(f"{GATE}-look-").isdigit()
        )
        first = 0
        for samples, name in looks:
            _samples(evidence, number, folder, name, tasks, first)
            first = samples
    audited = [phase for phase in ("audit-parent", "audit-candidate") if _ran(result[phase])]
    if not audited and not (folder / AUDIT).exists():
        return
    audit = _audit_tasks(evidence, number, folder)
    for phase in audited:
        _rows(evidence, number, folder, f"{phase}/rows.json", audit)
    if result["finish"] is not None:
        _samples(evidence, number, folder, AUDIT, audit)


def _audit_tasks(evidence: _Evidence, number: int, folder: Path) -> dict[str, Task]:
    """audit-tasks.json's tasks by id (none, and a failure, when it cannot be read: every
    audit row then fails as a row of no known task)."""
    name = "audit-tasks.json"
    try:
        saved = store.read(folder / name)
        return {task["id"]: Task.model_validate(task) for task in saved["tasks"]}
    except (CodeloopError, OSError, KeyError, TypeError, ValueError) as error:
        evidence.fail(number, name, f"cannot read the audit's tasks: {error}")
        return {}


def _rows(
    evidence: _Evidence, number: int, folder: Path, name: str, tasks: dict[str, Task]
) -> None:
    """An answering phase's rows: each row's verdict on its answer (the program the answer
    holds, as scoring extracted it, not the row's own copy of it)."""
    data = evidence.load(number, folder, name)
    for row in (data or {}).get("rows", []):
        task = tasks.get(row.get("id"))
        if task is None:
            evidence.fail(number, name, f"{row.get('id')}: not one of the round's valid tasks")
            continue
        answer = row.get("answer")
        program = program_of(task, answer) if isinstance(answer, str) else row.get("program")
        evidence.answers.append(
            _Answer(number, name, task.id, task, program, row.get("passed"), row.get("status"))
        )


def _samples(
    evidence: _Evidence,
    number: int,
    folder: Path,
    name: str,
    tasks: dict[str, Task],
    first: int = 0,
) -> None:
    """A confirmation's sample verdicts (`passes`, per task and side), each re-run from the
    answer its attempt file saved (`confirm-I`, as `confirm._Sampler` asked it; a look of a
    sequential gate holds samples `first` and up)."""
    from codeloop.loop.confirm import SIDES

    for side in SIDES:
        file = f"{name}/{side}.json"
        if not (folder / file).exists():
            continue  # not sampled: the decision check says whether it had to be
        data = evidence.load(number, folder, file)
        attempt_file = f"{name}/{name}-{side}-attempt.json"
        try:
            attempts = store.read(folder / attempt_file, {}).get("attempts", {})
        except CodeloopError as error:
            evidence.fail(number, file, f"its answers cannot be read: {error}")
            attempts = {}
        for row in (data or {}).get("rows", []):
            task = tasks.get(row.get("id"))
            if task is None:
                evidence.fail(number, file, f"{row.get('id')}: not one of the round's valid tasks")
                continue
            for index, recorded in enumerate(row.get("passes", []), first):
                label = f"{task.id} sample {index}"
                answer = attempts.get(task.id, {}).get(f"confirm-{index}")
                if not isinstance(answer, str):
                    evidence.fail(number, file, f"{label}: no saved answer in {attempt_file}")
                    continue
                program = program_of(task, answer)
                evidence.answers.append(_Answer(number, file, label, task, program, recorded))


def _word(passed: bool | None) -> str:
    return "passed" if passed else "failed"


def _mismatch(answer: _Answer, check: Check) -> str | None:
    """Why the re-run does not confirm the recorded verdict; None when it does."""
    where = f"{answer.label} ({answer.task.language})"
    if check.status == "environment_error":
        if check.task_error and not answer.recorded and answer.recorded_status == check.status:
            return None  # the task's own test gives no verdict, as the row recorded
        why = "the task's test gives no verdict" if check.task_error else "the sandbox failed"
        return (
            f"{where}: the recheck could not run ({why}), so the recorded "
            f"{_word(answer.recorded)} is not confirmed: {check.feedback.strip()[:200]}"
        )
    if check.passed == bool(answer.recorded):
        return None
    return (
        f"{where}: recorded {_word(answer.recorded)}, re-run {_word(check.passed)} "
        f"({check.status}): the recorded verdict is not its answer's"
    )


def _recheck(
    checks: _Checks,
    root: Path,
    rows: list[tuple[int, dict[str, Any], str]],
    evidence: _Evidence,
) -> None:
    """Run every training row's program (composed as collect composed it) and every
    recorded answer again, in one batch through the evaluator the phases used, so a
    verdict is re-run exactly as it was first given (environment errors re-run on fresh
    workers, then judged by the known-good probe)."""
    sandbox = session_config.load(store.SessionPaths(root).config).sandbox
    requests = [
        scoring.request(Task.model_validate(task), program, sandbox)
        for _number, task, program in rows
    ]
    requests += [
        None if answer.program is None else scoring.request(answer.task, answer.program, sandbox)
        for answer in evidence.answers
    ]
    results = scoring.check_requests(requests, sandbox) if requests else []
    for (number, task, _program), result in zip(rows, results[: len(rows)], strict=True):
        checks.add(
            number,
            "recheck",
            result.passed,
            f"{task['id']} ({task['language']}): {result.status} {result.feedback.strip()[:200]}",
        )
    for answer, result in zip(evidence.answers, results[len(rows) :], strict=True):
        problem = _mismatch(answer, result)
        if problem is not None:
            evidence.fail(answer.round, answer.file, problem)
    for (number, _name), failures in evidence.failures.items():
        if not failures:
            checks.add(number, "recheck evidence", True)
        for detail in failures:
            checks.add(number, "recheck evidence", False, detail)
