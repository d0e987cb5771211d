"""Decision quality, measured: candidates of known effect through the real gate and audit.

One cpu-demo session collects round 1 for real, once (prepare, collect, export: the
model's own verified rows). Each candidate is then a copy of that session with its
own training data, written in the export phase's format:
  - helpful: the export's verified rows, as the loop would train on them;
  - harmful, `failed`: the collect phase's answers that failed their tests (the code
    block when there is one, else the whole answer), labelled verified;
  - harmful, `labels`: for every train task a program that prints a label (the public
    example's expected output) or the prompt (the statement), labelled verified
    (harmful by construction: these programs are not run);
  - neutral: the export's verified rows at learning rate 1e-7 (an adapter that
    barely moves).
`--helpful-rows FILE` trains the helpful candidates on another loop session's verified
rows (a later round's train.jsonl: more rows than one round 1 verifies; names end in
`-rows<sha256 prefix>`). `--harmful-lr` trains the harmful candidates at another learning rate than the
preset's (their names then end in `-lr<rate>`): at the preset's rate 16 steps on such
data left the held-out set unchanged, so they were harmful by construction only.
Candidate i of every kind trains with the session seed + i (config `seed`, which the
train phase and the confirmation samples derive theirs from; the audit's task list is
fixed in the shared round, so every candidate faces the same audit). In each copy the
real phases run as `codeloop phase` processes: baseline, train, candidate, gate,
audit-parent, audit-candidate, with `round.audit_every = 1` so that the audit runs
even when the gate is not promising. Then `finish.confirm_flips` samples the flipped
audit tasks and `finish.decide` decides from the saved files under each audit rule
(`strict`, `confirmed`), and under `confirmed+gate`: `confirmed` with the gate's gain
confirmed by 8 seeded samples per side on its flipped validation tasks (the gate
phase's code for gate.confirm_samples, run after the fact); the real `finish` phase is
not run (it would delete a rejected candidate's weights).

Ground truth: greedy pass@1 of the base model and of the candidate on the clean
held-out set (bench/holdout.py only: the bench refuses to run when that set no longer
hashes to its frozen sha256, never falling back to the dev set bench/devset.py), through bench/learning.py's `verdicts`. A candidate is truly helpful when the
paired 95% interval of its held-out gain lies above 0, truly harmful when it lies below
0, neutral otherwise (the base model solves about 3% of the set, so a fall of 5 points
is out of reach). Per rule the bench counts false rejects (truly helpful, rejected) and false
accepts (truly harmful, accepted), and the goal's two counts: candidates better by
>= 5 points held-out that were rejected, and built-harmful candidates accepted.

    .venv/bin/python -m bench.decisions [--helpful 4 --harmful 4 --neutral 2]
        [--languages python,cpp] [--steps 16] [--seed 3407] [--harmful-lr 1e-3]
        [--session DIR]

`--session DIR` is this bench's folder (DIR/shared is the collected session,
DIR/candidates/* the copies, DIR/results/* each finished candidate's record); run it
again after a crash and it continues: the shared collect, every finished phase,
candidate and held-out evaluation are kept, and the report lists every candidate the
folder holds (so invocations with other counts or rates add to one table). `--languages` scales the preset's round
sizes (5 fresh train tasks and 4 validation tasks per language). Base-model answers of
the baseline and audit-parent phases are shared between candidates through the
session's answer cache.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from math import comb
from pathlib import Path
from typing import Any

from bench.learning import verdicts
from bench.results import record
from codeloop import recipe, store
from codeloop.config import SessionConfig, dumps, load, load_preset, validate
from codeloop.engines.base import adapter_sha256
from codeloop.evaluate.scoring import program_of
from codeloop.loop import finish, origin
from codeloop.loop import gate as gate_phase
from codeloop.loop.answer_cache import AnswerCache
from codeloop.loop.audit import audit_tasks
from codeloop.loop.collect import normalised
from codeloop.loop.common import Round
from codeloop.loop.export import write_dataset
from codeloop.loop.launcher import open_session
from codeloop.tasks import clean as holdout
from codeloop.tasks.schema import Task

ROUND = 1
SHARED_PHASES = ("prepare", "collect", "export")
CANDIDATE_PHASES = ("baseline", "train", "candidate", "gate", "audit-parent", "audit-candidate")
KINDS = ("helpful", "harmful", "neutral")
HARMFUL_SOURCES = ("failed", "labels")
"""Harmful candidate i trains on HARMFUL_SOURCES[i % 2]."""
RULES = ("strict", "confirmed", "confirmed+gate")
"""`confirmed+gate`: the confirmed audit rule with gate.confirm_samples = GATE_SAMPLES
(the gate's greedy gain must hold up in samples of both models)."""
GATE_SAMPLES = 8
NEUTRAL_LEARNING_RATE = 1e-7
GAIN_POINTS = 5.0
"""Held-out gain (points) at which a candidate counts as truly helpful (or, negated, harmful)."""
CONFIDENCE = 0.95
FAILED_PER_TASK = 2
"""Failed answers per train task in a `failed` candidate's data (distinct programs)."""
SHARED_BY = ("baseline", "audit-parent")
"""Phases that ask the base model only: their answers are shared between candidates."""
PER_LANGUAGE = {"fresh_tasks": 5, "validation_tasks": 4}
"""The preset's round sizes per language (40 and 32 for its 8 languages)."""


def say(message: str) -> None:
    print(f"[decisions {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- ground truth ---------------------------------------------------------------------------


def _tail_at_least(k: int, n: int, p: float) -> float:
    return sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def _clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided (1 - alpha) interval of a binomial proportion, by bisection."""

    def solve(f, target: float) -> float:  # f increasing in p
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
        return (lo + hi) / 2

    low = 0.0 if k == 0 else solve(lambda p: _tail_at_least(k, n, p), alpha / 2)
    high = 1.0 if k == n else solve(lambda p: _tail_at_least(k + 1, n, p), 1 - alpha / 2)
    return low, high


def heldout_set(languages: list[str]) -> tuple[list[Task], int, str]:
    """The ground-truth tasks, how many problems they hold, and where they come from:
    bench/holdout.py only. Its tasks() refuses (RuntimeError) when the set no longer
    hashes to its frozen sha256, and so does this bench: a truth that silently became
    another set (the dev set bench/devset.py, tuned on) would make every number here
    mean something else."""
    return holdout.tasks(languages), len(holdout.PROBLEMS), "bench/holdout.py"


def paired_interval(before: list[bool], after: list[bool], problems: int) -> tuple[float, float]:
    """bench/holdout.py's paired interval (a bootstrap over problems, in points). The
    tasks are `problems` blocks, a problem's languages together."""
    found = holdout.paired_interval(before, after, CONFIDENCE, problems=problems)
    return float(found["low"]), float(found["high"])


def distinct_solved(tasks: list[Task], passed: list[bool]) -> int:
    """Problems solved in at least one language."""
    return len({task.family for task, ok in zip(tasks, passed, strict=True) if ok})


def truth(gain: float, low: float, high: float) -> str:
    """Helpful or harmful when the paired interval excludes zero, else neutral.

    (Not "by 5 points": the base model solves about 3% of the held-out set, so no
    candidate could ever fall 5 points; the goal's "better by 5" is counted apart.)
    """
    if low > 0:
        return "helpful"
    if high < 0:
        return "harmful"
    return "neutral"


# -- the shared session ---------------------------------------------------------------------


def shared_config(languages: list[str] | None, seed: int | None) -> SessionConfig:
    preset = load_preset("cpu-demo")
    data = preset.model_dump(mode="json", by_alias=True, exclude_none=True)
    if languages and languages != list(preset.tasks.languages):
        data["tasks"]["languages"] = languages
        for key, per_language in PER_LANGUAGE.items():
            data["round"][key] = per_language * len(languages)
    if seed is not None:
        data["seed"] = seed
    # The gate phase decides on greedy counts alone; `confirmed+gate` adds the samples
    # after the fact (gate_confirmed), so that every rule is judged on the same runs.
    data["gate"]["confirm_samples"] = 0
    return validate(data, "bench/decisions.py options")


def run_phase(session: Path, phase: str) -> None:
    """One phase as `codeloop phase ... --resume`; a crash (exit 70) is retried twice."""
    command = [sys.executable, "-m", "codeloop", "phase", "--session", str(session)]
    command += ["--round", str(ROUND), "--phase", phase, "--resume"]
    for attempt in range(3):
        done = subprocess.run(command, env={**os.environ, "PYTHONUNBUFFERED": "1"}, check=False)
        if done.returncode == 0:
            return
        if done.returncode != 70 or attempt == 2:
            raise SystemExit(f"{session}: phase {phase} failed (exit {done.returncode})")
        say(f"{session.name}: phase {phase} crashed; resuming it")


def round_of(session: Path, config: SessionConfig | None = None) -> Round:
    paths = store.SessionPaths(session.resolve())
    return Round(paths, config or load(paths.config), ROUND)


def conversation(config: SessionConfig, task: Task) -> list[dict[str, str]]:
    """The prompt turns of a training row, as export writes them."""
    if config.export.conversation == "contract":
        return recipe.contract_messages(task)
    return recipe.messages(task)


# -- training data per kind -----------------------------------------------------------------


def _row(config: SessionConfig, task: Task, answer: str, what: str) -> dict[str, Any]:
    return {
        "task_id": task.id,
        "language": task.language,
        "split": "train",
        "messages": [*conversation(config, task), {"role": "assistant", "content": answer}],
        # Labelled passed so that the trainer takes it: this bench builds harmful data
        # on purpose, and says so in `bench`.
        "verification": {"kind": "local_execution", "passed": True, "status": "passed"},
        "bench": what,
        "provenance": {
            **task.provenance.model_dump(mode="json"),
            "task_sha256": store.sha256_json(task.to_json()),
        },
    }


def failed_rows(shared: Round, rng: random.Random) -> list[dict[str, Any]]:
    """Answers collect saved that failed their tests, up to FAILED_PER_TASK per task."""
    config = shared.config
    attempts = store.read(shared.path("collect-attempt.json"))["attempts"]
    rows_by_id = {row["id"]: row for row in store.read(shared.path("collect-rows.json"))["rows"]}
    found = []
    for task in shared.tasks("train"):
        row = rows_by_id.get(task.id)
        if row is None:
            continue
        good = {normalised(item["program"]) for item in row.get("verified", [])}
        answers, seen = [], set()
        for _key, text in sorted(attempts.get(task.id, {}).items()):
            program = program_of(task, text)
            if program is not None and normalised(program) in good:
                continue  # a passing answer
            shown = recipe.fenced(program, task.language) if program is not None else text
            if shown.strip() and shown not in seen:
                seen.add(shown)
                answers.append(shown)
        rng.shuffle(answers)
        found += [
            _row(config, task, answer, "harmful: an answer that failed its tests")
            for answer in answers[:FAILED_PER_TASK]
        ]
    return found


def _literal(text: str) -> str:
    """A double-quoted string literal that C, C++, Go, Java, JS/TS, Python and Rust read alike."""
    out = []
    for char in text:
        if char == "\n":
            out.append("\\n")
        elif char in '"\\':
            out.append("\\" + char)
        elif " " <= char <= "~":
            out.append(char)
        else:
            out.append("?")
    return '"' + "".join(out) + '"'


def printing_program(language: str, text: str) -> str:
    """A program in `language` that prints `text` and reads nothing."""
    s = _literal(text)
    programs = {
        "python": f"import sys\n\nsys.stdout.write({s})\n",
        "javascript": f"process.stdout.write({s});\n",
        "typescript": f"process.stdout.write({s});\n",
        "c": (
            f"#include <stdio.h>\n\nint main(void) {{\n    fputs({s}, stdout);\n    return 0;\n}}\n"
        ),
        "cpp": f"#include <iostream>\n\nint main() {{\n    std::cout << {s};\n    return 0;\n}}\n",
        "java": (
            "public class Main {\n    public static void main(String[] args) {\n"
            f"        System.out.print({s});\n    }}\n}}\n"
        ),
        "rust": f'fn main() {{\n    print!("{{}}", {s});\n}}\n',
        "go": f'package main\n\nimport "fmt"\n\nfunc main() {{\n\tfmt.Print({s})\n}}\n',
    }
    return programs[language]


def label_rows(shared: Round) -> list[dict[str, Any]]:
    """Per train task a program printing a label (the public example's output) or the
    prompt (the statement's first line), taking turns."""
    found = []
    for index, task in enumerate(shared.tasks("train")):
        if task.kind != "stdio":
            continue
        public = recipe.public_cases(task)
        if index % 2 == 0 and public:
            text, what = public[0]["output"], "harmful: prints the public example's output"
        else:
            text = task.statement.strip().splitlines()[0] + "\n"
            what = "harmful: prints the statement"
        answer = recipe.fenced(printing_program(task.language, text), task.language)
        found.append(_row(shared.config, task, answer, what))
    return found


def verified_rows(shared: Round) -> list[dict[str, Any]]:
    data = shared.path("train.jsonl")
    return [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line]


def write_export(r: Round, rows: list[dict[str, Any]], what: str) -> None:
    """train.jsonl, its manifest and export.json in the export phase's format."""
    per_language = max(
        (sum(row["language"] == lang for row in rows) for lang in r.config.tasks.languages),
        default=0,
    )
    languages, digest = write_dataset(r, rows, per_language, 0, f"bench/decisions.py: {what}")
    store.write_json(
        r.path("export.json"),
        {
            "completed": True,
            "ready": True,
            "reason": f"bench/decisions.py: {what}",
            "rows": len(rows),
            "languages": languages,
            "without_rows": [lang for lang, n in languages.items() if n == 0],
            "balance": r.config.export.balance,
            "data_sha256": digest,
            "dropped_too_long": 0,
        },
    )


# -- candidates -----------------------------------------------------------------------------


def plan(
    helpful: int,
    harmful: int,
    neutral: int,
    harmful_lr: float | None = None,
    helpful_rows: Path | None = None,
) -> list[tuple[str, str, int]]:
    """(name, kind, index) of every candidate, kinds taking turns."""
    counts = {"helpful": helpful, "harmful": harmful, "neutral": neutral}
    found = []
    for index in range(max(counts.values(), default=0)):
        for kind in KINDS:
            if index < counts[kind]:
                source = HARMFUL_SOURCES[index % 2] if kind == "harmful" else ""
                name = f"{kind}-{source + '-' if source else ''}{index}"
                if kind == "harmful" and harmful_lr is not None:
                    name += f"-lr{harmful_lr:g}"
                if kind == "helpful" and helpful_rows is not None:
                    name += f"-rows{store.sha256_file(helpful_rows)[:8]}"
                found.append((name, kind, index))
    return found


def make_candidate(
    shared: Round,
    folder: Path,
    kind: str,
    index: int,
    steps: int | None,
    learning_rate: float | None = None,
    helpful_rows: Path | None = None,
) -> dict[str, Any]:
    """Copy the shared session to `folder` with the candidate's config and training data
    (into a temporary folder first, so that a crash never leaves half a candidate)."""
    base = shared.config
    seed = base.seed + index
    if kind == "harmful" and HARMFUL_SOURCES[index % 2] == "failed":
        rows, what = failed_rows(shared, random.Random(seed)), "failed answers"
    elif kind == "harmful":
        rows, what = label_rows(shared), "programs printing labels and prompts"
    elif kind == "helpful" and helpful_rows is not None:
        rows = [json.loads(line) for line in helpful_rows.read_text("utf-8").splitlines() if line]
        what = f"the verified rows of {helpful_rows}"
    else:
        rows, what = verified_rows(shared), "the export's verified rows"
    if not rows:
        raise ValueError(f"no rows for a {kind} candidate ({what})")
    data = base.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["seed"] = seed
    data["round"]["audit_every"] = 1
    data["export"]["min_examples"] = min(base.export.min_examples, len(rows))
    if steps:
        data["train"]["steps_per_round"] = steps
        data["train"]["save_steps"] = min(base.train.save_steps, steps)
    if kind == "neutral":
        data["train"]["learning_rate"] = NEUTRAL_LEARNING_RATE
    elif kind == "harmful" and learning_rate is not None:
        data["train"]["learning_rate"] = learning_rate
    config = validate(data, f"bench/decisions.py candidate {folder.name}")
    copy_with_rows(shared, folder, config, rows, what)
    return {"rows": len(rows), "data": what}


def copy_with_rows(
    shared: Round, folder: Path, config: SessionConfig, rows: list[dict[str, Any]], what: str
) -> None:
    """`shared`'s session copied to `folder` with `config` and `rows` as its export, through
    a temporary folder, so that a crash never leaves half a candidate."""
    temporary = folder.with_name(folder.name + ".partial")
    shutil.rmtree(temporary, ignore_errors=True)
    shutil.copytree(
        shared.session.root,
        temporary,
        ignore=shutil.ignore_patterns(".launcher.lock", ".phase.lock", "PAUSE"),
    )
    store.write_text(temporary / "config.toml", dumps(config))
    # the candidate's own config, recorded as the preset plus its overrides (the shared
    # session's record, copied with it, is of the shared config)
    origin.record(temporary, origin.from_preset("cpu-demo", config))
    r = round_of(temporary)
    for name in ("train.jsonl", "train.jsonl.manifest.json", "export.json"):
        r.path(name).unlink(missing_ok=True)
    write_export(r, rows, what)
    os.replace(temporary, folder)


def share_answers(shared: Path, candidate: Path, phases: tuple[str, ...] = SHARED_BY) -> None:
    """Copy the candidate's base-model answers (those of `phases`: baseline, audit-parent)
    into the shared session's answer cache, marked as another session's, so the next copy
    reuses them."""
    lines = (candidate / "answers.jsonl").read_text(encoding="utf-8").splitlines()
    groups: dict[str, dict[str, str]] = {}
    for line in lines:
        entry = json.loads(line)
        by = entry.get("by") or ""
        if by.split("/")[-1] in phases:
            groups.setdefault(f"bench {candidate.name}: {by}", {})[entry["key"]] = entry["text"]
    cache = AnswerCache(store.SessionPaths(shared).answers)
    for by, entries in groups.items():
        cache.add(entries, by=by)


class Heldout:
    """Greedy held-out verdicts per adapter, cached in the bench folder by adapter sha256."""

    def __init__(self, folder: Path, config: SessionConfig) -> None:
        self.folder, self.config = folder, config
        self.tasks, self.problems, self.source = heldout_set(list(config.tasks.languages))
        self.ids = [task.id for task in self.tasks]

    def score(self, before: list[bool], after: list[bool]) -> dict[str, Any]:
        gain = 100 * (sum(after) - sum(before)) / len(before)
        low, high = paired_interval(before, after, self.problems)
        return {
            "source": self.source,
            "total": len(before),
            "before": sum(before),
            "after": sum(after),
            "problems": self.problems,
            "distinct_before": distinct_solved(self.tasks, before),
            "distinct_after": distinct_solved(self.tasks, after),
            "gain": gain,
            "interval": [low, high],
        }

    def verdicts(self, adapter: Path | None) -> list[bool]:
        key = store.sha256_json({"adapter": adapter_sha256(adapter), "tasks": self.ids})
        cached = self.folder / f"{key[:16]}.json"
        saved = store.read(cached, None)
        if saved is not None and saved["ids"] == self.ids:
            return saved["passed"]
        say(f"held-out: {len(self.tasks)} tasks, adapter {adapter or 'none (base model)'}")
        passed = verdicts(self.config, adapter, self.tasks)
        store.write_json(cached, {"ids": self.ids, "adapter": str(adapter), "passed": passed})
        return passed


def judge(folder: Path) -> dict[str, Any]:
    """The gate's verdict and each rule's decision, from the candidate's saved files
    (after the confirmation samples exist)."""
    r = round_of(folder)
    gate = r.result("gate")
    found: dict[str, Any] = {
        "gate": {
            "promising": gate.get("promising"),
            "gained": gate.get("gained"),
            "lost": gate.get("lost"),
            "before": gate.get("before"),
            "after": gate.get("after"),
            "total": gate.get("total"),
            "reasons": gate.get("reasons", []),
        },
        "rules": {},
    }
    for rule in RULES:
        if rule == "confirmed+gate":
            found["rules"][rule] = gate_confirmed(folder, found["rules"]["confirmed"])
            found["gate_confirmation"] = found["rules"][rule].pop("evidence")
            continue
        data = r.config.model_dump(mode="json", by_alias=True, exclude_none=True)
        data["audit"]["rule"] = rule
        ruled = round_of(folder, validate(data, f"audit.rule = {rule}"))
        if rule == "confirmed":
            finish.confirm_flips(ruled)
        verdict = finish.decide(ruled)
        audit = verdict["comparisons"].get("audit", {})
        if rule == "strict":
            clean = audit.get("lost") == 0 and audit.get("after", 0) >= audit.get("before", 0)
        else:
            evidence = audit.get("confirmation", {})
            clean = not evidence.get("lost_ids") and not evidence.get("pooled_worse")
        found["rules"][rule] = {
            "accepted": verdict["accepted"],
            "audit_clean": bool(audit) and clean,
            "decision": verdict["decision"],
        }
        if audit:
            found["audit"] = {
                key: audit[key] for key in ("total", "before", "after", "gained", "lost")
            }
            if "confirmation" in audit:
                evidence = audit["confirmation"]
                found["confirmation"] = {
                    "counted_lost": len(evidence["lost_ids"]),
                    "counted_gained": len(evidence["gained_ids"]),
                    "excused": len(evidence["excused_ids"]),
                    "pooled_p": evidence["pooled_p"],
                }
    return found


def gate_confirmed(folder: Path, confirmed: dict[str, Any]) -> dict[str, Any]:
    """The `confirmed` decision with the gate's gain confirmed by samples as well:
    the gate phase's own `gate.sample` and `gate.verdict` (into the round's gate-confirm folder),
    run after the fact on the saved greedy rows."""
    r = round_of(folder)
    data = r.config.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["gate"]["confirm_samples"] = GATE_SAMPLES
    ruled = round_of(folder, validate(data, "gate.confirm_samples"))
    gate = r.result("gate")
    evidence = None
    accepted = False
    if not gate.get("skipped") and gate["promising"]:
        gate_phase.sample(ruled, gate)
        promising, _reasons, evidence = gate_phase.verdict(ruled, gate)
        accepted = confirmed["accepted"] and promising
    return {
        "accepted": accepted,
        "audit_clean": confirmed["audit_clean"],
        "decision": confirmed["decision"]
        if not confirmed["accepted"] or accepted
        else "rejected: the gate's gain is not confirmed by samples",
        "evidence": evidence,
    }


def run_candidate(
    work: Path,
    shared: Round,
    held: Heldout,
    base: list[bool],
    name: str,
    kind: str,
    index: int,
    steps: int | None,
    harmful_lr: float | None = None,
    helpful_rows: Path | None = None,
) -> dict[str, Any]:
    result_file = work / "results" / f"{name}.json"
    folder = work / "candidates" / name
    saved = store.read(result_file, None)
    if saved is not None:
        if saved["heldout"].get("source") != held.source:  # the held-out set changed
            score = held.score(base, held.verdicts(round_of(folder).candidate_adapter))
            saved.update(heldout=score, truth=truth(score["gain"], *score["interval"]))
            store.write_json(result_file, saved)
        return saved
    started = time.time()
    if not folder.exists():
        say(f"{name}: copying the shared session and writing its training data")
        made = make_candidate(shared, folder, kind, index, steps, harmful_lr, helpful_rows)
    else:
        made = {}
    r = round_of(folder)
    exported = r.result("export")
    for phase in CANDIDATE_PHASES:
        if not r.phase_done(phase):
            say(f"{name}: phase {phase}")
            run_phase(folder, phase)
    after = held.verdicts(r.candidate_adapter)
    verdict = judge(folder)
    score = held.score(base, after)
    training = store.read(r.candidate_adapter / "training.json", None) or {}
    result = {
        "name": name,
        "kind": kind,
        "data": made.get("data") or exported["reason"].removeprefix("bench/decisions.py: "),
        "rows": exported["rows"],
        "seed": r.config.seed,
        "learning_rate": r.config.train.learning_rate,
        "steps": r.result("train").get("steps"),
        "loss": [training.get("first_loss"), training.get("last_loss")],
        "heldout": score,
        "truth": truth(score["gain"], *score["interval"]),
        **verdict,
        "seconds": time.time() - started,
    }
    store.write_json(result_file, result)
    share_answers(shared.session.root, folder)
    return result


# -- the report -----------------------------------------------------------------------------


def every_result(work: Path, ran: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """This invocation's candidates, then every other one the folder holds (earlier
    invocations, other counts or rates), each with its truth judged by `truth` now."""
    names = {res["name"] for res in ran}
    found = list(ran)
    for path in sorted((work / "results").glob("*.json")):
        saved = store.read(path)
        if saved["name"] not in names:
            found.append(saved)
    for res in found:
        res["truth"] = truth(res["heldout"]["gain"], *res["heldout"]["interval"])
        if "confirmed+gate" not in res["rules"]:  # judged before that rule existed
            folder = work / "candidates" / res["name"]
            say(f"{res['name']}: sampling the gate's flips (rule confirmed+gate)")
            res["rules"]["confirmed+gate"] = gate_confirmed(folder, res["rules"]["confirmed"])
            res["gate_confirmation"] = res["rules"]["confirmed+gate"].pop("evidence")
            store.write_json(work / "results" / f"{res['name']}.json", res)
    return found


def _yes(value: bool) -> str:
    return "accept" if value else "reject"


def candidate_table(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| candidate | data | rows | seed, lr, steps | loss first -> last | held-out before -> "
        "after | gain [95% interval] | truth | gate (validation) | audit greedy | strict "
        "| confirmed | confirmed+gate |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for res in results:
        held, gate = res["heldout"], res["gate"]
        low, high = held["interval"]
        audit = res.get("audit")
        audit_text = (
            f"{audit['before']} -> {audit['after']}/{audit['total']} "
            f"(+{audit['gained']} -{audit['lost']})"
            if audit
            else "not run"
        )
        confirmation = res.get("confirmation")
        first, last = res["loss"]
        loss = f"{first:.3f} -> {last:.3f}" if first is not None else "-"
        cells = {}
        for rule in RULES:
            ruled = res["rules"][rule]
            cells[rule] = (
                f"{_yes(ruled['accepted'])} (audit {'clean' if ruled['audit_clean'] else 'loss'})"
            )
        if confirmation:
            cells["confirmed"] += (
                f"; counted lost {confirmation['counted_lost']}, excused "
                f"{confirmation['excused']}, pooled p {confirmation['pooled_p']:.2g}"
            )
        sampled = res.get("gate_confirmation")
        cells["confirmed+gate"] = _yes(res["rules"]["confirmed+gate"]["accepted"]) + (
            f" (gate samples: candidate alone {sampled['pooled_candidate_only']}, parent "
            f"alone {sampled['pooled_parent_only']} of "
            f"{sum(t['pairs'] for t in sampled['tasks'])} pairs, p {sampled['pooled_p']:.2g})"
            if sampled
            else " (gate not promising)"
        )
        lines.append(
            f"| {res['name']} | {res['data']} | {res['rows']} | {res['seed']}, "
            f"{res['learning_rate']:g}, {res['steps']} | {loss} | "
            f"{held['before']} -> {held['after']}/{held['total']} | "
            f"{held['gain']:+.1f} [{low:+.1f}, {high:+.1f}] | {res['truth']} | "
            f"{'promising' if gate['promising'] else 'not promising'} "
            f"({gate['before']} -> {gate['after']}/{gate['total']}, +{gate['gained']} "
            f"-{gate['lost']}) | {audit_text} | {cells['strict']} | {cells['confirmed']} | "
            f"{cells['confirmed+gate']} |"
        )
    return lines


def rule_table(results: list[dict[str, Any]]) -> list[str]:
    def count(rule: str, who, accepted: bool, audit_only: bool = False) -> str:
        chosen = [res for res in results if who(res)]
        key = "audit_clean" if audit_only else "accepted"
        hits = sum(res["rules"][rule][key] == accepted for res in chosen)
        if not chosen:
            return "0/0"
        low, high = _clopper_pearson(hits, len(chosen), 1 - CONFIDENCE)
        return f"{hits}/{len(chosen)} [{100 * low:.0f}-{100 * high:.0f}%]"

    def truly(kind):
        return lambda res: res["truth"] == kind

    def better(res):
        return res["heldout"]["gain"] >= GAIN_POINTS

    def built_harmful(res):
        return res["kind"] == "harmful"

    lines = [
        "| rule | accepted | false rejects (truly helpful rejected) | false accepts (truly "
        "harmful accepted) | goal: >= +5 held-out rejected | goal: built-harmful accepted "
        "| audit alone: truly helpful failed | audit alone: truly harmful passed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rule in RULES:
        accepted = sum(res["rules"][rule]["accepted"] for res in results)
        lines.append(
            f"| {rule} | {accepted}/{len(results)} | {count(rule, truly('helpful'), False)} | "
            f"{count(rule, truly('harmful'), True)} | {count(rule, better, False)} | "
            f"{count(rule, built_harmful, True)} | "
            f"{count(rule, truly('helpful'), False, True)} | "
            f"{count(rule, truly('harmful'), True, True)} |"
        )
    lines.append("")
    lines.append(
        "Each count is k/n with the exact (Clopper-Pearson) 95% interval of the rate: with "
        "this few candidates a rate is known only that loosely."
    )
    return lines


def goal_line(results: list[dict[str, Any]]) -> str:
    """The issue's goal per rule: harmful (built or measured) accepted, and candidates
    better by GAIN_POINTS or more held-out that were rejected."""
    harmful = [r for r in results if r["kind"] == "harmful" or r["truth"] == "harmful"]
    better = [r for r in results if r["heldout"]["gain"] >= GAIN_POINTS]
    parts = []
    for rule in RULES:
        accepted = sum(r["rules"][rule]["accepted"] for r in harmful)
        rejected = sum(not r["rules"][rule]["accepted"] for r in better)
        met = accepted == 0 and 4 * rejected <= len(better)
        parts.append(
            f"{rule}: harmful accepted {accepted} of {len(harmful)}, better-by-"
            f"{GAIN_POINTS:g} rejected {rejected} of {len(better)} "
            f"({'met' if met else 'not met'})"
        )
    return (
        f"Goal (no harmful candidate accepted; at most 1 in 4 candidates better by >= "
        f"{GAIN_POINTS:g} points held-out rejected): " + "; ".join(parts) + "."
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--helpful", type=int, default=4)
    parser.add_argument("--harmful", type=int, default=4)
    parser.add_argument("--neutral", type=int, default=2)
    parser.add_argument("--languages", default=None, help="comma-separated (default: preset's)")
    parser.add_argument("--steps", type=int, default=None, help="train.steps_per_round")
    parser.add_argument("--seed", type=int, default=None, help="session seed (default: preset's)")
    parser.add_argument(
        "--harmful-lr",
        type=float,
        default=None,
        help="learning rate of the harmful candidates (default: the preset's)",
    )
    parser.add_argument(
        "--helpful-rows",
        type=Path,
        default=None,
        help="a train.jsonl of verified rows (another loop session's export) for the helpful "
        "candidates instead of the shared round's",
    )
    parser.add_argument("--session", type=Path, default=None, help="this bench's folder")
    return parser


def _shared_round(args: argparse.Namespace, work: Path) -> tuple[SessionConfig, Round]:
    """The shared session's config and its round 1, collected and exported (reused when
    it already is, with the same --languages/--seed), its audit tasks fixed."""
    languages = args.languages.split(",") if args.languages else None
    wanted = shared_config(languages, args.seed)
    session = work / "shared"
    if (session / "config.toml").exists() and (args.languages or args.seed is not None):
        saved = load(session / "config.toml")
        if saved != wanted:
            raise SystemExit(
                f"{session}: collected with other --languages/--seed; leave them out to reuse it"
            )
        wanted = saved
    new = not (session / "config.toml").exists()
    made_from = origin.from_preset("cpu-demo", wanted) if new else None
    paths = open_session(session, wanted if new else None, made_from)
    config = load(paths.config)
    for phase in SHARED_PHASES:
        if not (paths.round(ROUND) / f"{phase}.json").exists():
            say(f"shared session: phase {phase}")
            run_phase(session, phase)
    shared = round_of(session)
    audit_tasks(shared)  # fixed once here, so every candidate faces the same audit
    return config, shared


def _entry_head(work: Path, config: SessionConfig, shared: Round, held: Heldout, base) -> list:
    """The entry's first lines: the shared round, the held-out truth, the audit rule."""
    exported = shared.result("export")
    audit = store.read(shared.path("audit-tasks.json"))["sizes"]
    audit_text = ", ".join(f"{e['name']} {e['used']} of {e['declared']}" for e in audit)
    rule = config.audit
    return [
        f"bench folder {work.name}; preset cpu-demo, engine {config.engine.kind}, languages "
        f"{', '.join(config.tasks.languages)}; shared round 1: "
        f"{len(shared.tasks('train'))} train tasks, "
        f"{len(shared.tasks('validation'))} validation tasks, {exported['rows']} verified rows.",
        f"Held-out ground truth: {held.source}, {len(base)} tasks ({held.problems} problems), "
        f"base model {sum(base)}/{len(base)} greedy "
        f"({distinct_solved(held.tasks, base)} problems solved in some language). "
        f"Audit ({audit_text} tasks), forced to run (round.audit_every = 1); confirmed "
        f"rule: {rule.confirm_samples} samples per side at T {rule.confirm_temperature}, "
        f"alpha {rule.confirm_alpha}.",
        f"Truth: helpful = the paired {CONFIDENCE:.0%} interval of the held-out gain above 0; "
        "harmful = below 0; neutral otherwise. Interval: "
        + (
            "bench/holdout.py's paired_interval (bootstrap over problems)."
            if holdout is not None
            else "exact (Clopper-Pearson) on the discordant tasks, scaled by their share."
        ),
        "Decisions are finish.decide under each audit.rule (accept = gate promising and "
        "audit clean); the real finish phase is not run.",
    ]


def main() -> None:
    args = _parser().parse_args()
    started = time.time()
    root = Path(__file__).resolve().parent.parent
    work = (args.session or root / "sessions" / f"bench-decisions-{int(time.time())}").resolve()
    config, shared = _shared_round(args, work)
    exported = shared.result("export")
    say(f"shared export: {exported['rows']} verified rows ({exported['reason']})")
    held = Heldout(work / "heldout", config)
    base = held.verdicts(None)
    results, skipped = [], []
    chosen = plan(args.helpful, args.harmful, args.neutral, args.harmful_lr, args.helpful_rows)
    for name, kind, index in chosen:
        if kind in ("helpful", "neutral") and not exported["rows"]:
            skipped.append(f"{name}: the shared collect verified no row")
            continue
        say(f"candidate {name}")
        results.append(
            run_candidate(
                work,
                shared,
                held,
                base,
                name,
                kind,
                index,
                args.steps,
                args.harmful_lr,
                args.helpful_rows,
            )
        )
    results = every_result(work, results)
    minutes = (time.time() - started) / 60
    lines = [
        *_entry_head(work, config, shared, held, base),
        "",
        *candidate_table(results),
        "",
        *rule_table(results),
        "",
        goal_line(results),
        f"Wall time of this invocation {minutes:.1f} min; per candidate (first run, minutes): "
        + ", ".join(f"{r['name']} {r['seconds'] / 60:.1f}" for r in results)
        + ".",
    ]
    if skipped:
        lines.append("Skipped: " + "; ".join(skipped) + ".")
    record(
        f"Decision quality, {len(results)} candidates on cpu-demo (bench/decisions.py)",
        lines,
    )


if __name__ == "__main__":
    main()
