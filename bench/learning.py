"""Does the loop learn? N rounds of cpu-demo in a fresh session, held-out gain measured.

Runs `codeloop run --preset cpu-demo` one round at a time in a new session. Before
round 1 and after every round it evaluates the model the session retains (base
model, or the accepted adapter), greedy, on:
  - the fixed development set (development.json: dev families, never trained on);
  - held-out problems that are no curriculum family (bench/heldout.py), in every
    language of the preset, so a gain cannot come from the curriculum's wording.
A rejected round leaves the retained model unchanged, so its numbers are reused.
Per round it appends to bench/RESULTS.md: held-out pass@1 (both sets), audit pass@1
when the audit ran, rows exported per language, train loss first -> last, the
decision, and wall time per phase; the last entry states the gain over the base
model in points, pooled and per language.

    .venv/bin/python bench/learning.py [--rounds 4] [--session DIR] [--preset cpu-demo]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout
from results import record

from codeloop import recipe, store
from codeloop.config import SessionConfig, load
from codeloop.engines import create
from codeloop.engines.base import adapter_sha256
from codeloop.loop.common import PHASES
from codeloop.sandbox import CheckRequest, check_many
from codeloop.tasks.schema import Task

Score = dict[str, list[int]]
"""language -> [passed, total]."""


def evaluate(config: SessionConfig, adapter: Path | None, tasks: list[Task]) -> Score:
    """Greedy pass@1 of the model with `adapter` on `tasks`, checked in the sandbox."""
    engine = create(config.engine)
    try:
        engine.load_adapter(adapter)
        answers = engine.generate(
            [recipe.messages(task) for task in tasks], max_tokens=config.engine.max_tokens
        )
    finally:
        engine.close()
    requests, where = [], []
    score: Score = {}
    for index, (task, [completion]) in enumerate(zip(tasks, answers, strict=True)):
        score.setdefault(task.language, [0, 0])[1] += 1
        try:
            program = recipe.source(completion.text, task.language)
        except ValueError:
            continue
        requests.append(
            CheckRequest(
                language=task.language,
                program=program,
                cases=[case.model_dump() for case in task.cases],
                checker=task.checker,
                limits=config.sandbox.limits,
            )
        )
        where.append(index)
    checks = check_many(requests, workers=config.sandbox.workers, backend=config.sandbox.backend)
    for index, check in zip(where, checks, strict=True):
        if check.status == "environment_error":
            raise SystemExit(f"sandbox environment error: {check.feedback}")
        score[tasks[index].language][0] += int(check.passed)
    return score


def pooled(score: Score) -> float:
    passed = sum(cell[0] for cell in score.values())
    total = sum(cell[1] for cell in score.values())
    return 100.0 * passed / total if total else 0.0


def cells(score: Score, languages: list[str]) -> str:
    return " ".join(f"{lang}={score[lang][0]}/{score[lang][1]}" for lang in languages)


def phase_times(folder: Path, started: float) -> str:
    """Seconds per phase, from the modification times of the PHASE.json files."""
    parts, previous = [], started
    for phase in PHASES:
        done = folder / f"{phase}.json"
        if done.exists():
            stamp = done.stat().st_mtime
            parts.append(f"{phase} {stamp - previous:.0f}")
            previous = stamp
    return ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--preset", default="cpu-demo")
    parser.add_argument("--session", type=Path, default=None)
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    session = args.session or root / "sessions" / f"bench-learning-{int(time.time())}"
    if session.exists():
        raise SystemExit(f"{session}: exists; bench/learning.py starts a fresh session")
    codeloop = [sys.executable, "-m", "codeloop", "run", "--session", str(session)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    measured: dict[str | None, tuple[Score, Score]] = {}
    base: tuple[Score, Score] | None = None
    languages: list[str] = []
    config: SessionConfig | None = None
    for number in range(1, args.rounds + 1):
        started = time.time()
        command = [*codeloop, "--rounds", str(number)]
        if number == 1:
            command += ["--preset", args.preset]
        subprocess.run(command, check=True, env=env)
        paths = store.SessionPaths(session)
        config = config or load(paths.config)
        languages = list(config.tasks.languages)
        fixed = [Task.model_validate(t) for t in store.read(paths.development)["tasks"]]
        held = heldout.tasks(languages)
        folder = paths.round(number)
        if base is None:
            base = (evaluate(config, None, fixed), evaluate(config, None, held))
            measured[None] = base
        retained = store.read(paths.status).get("retained_adapter")
        adapter = session / retained if retained else None
        key = adapter_sha256(adapter) if adapter else None
        if key not in measured:
            measured[key] = (evaluate(config, adapter, fixed), evaluate(config, adapter, held))
        dev_score, held_score = measured[key]
        exported = store.read(folder / "export.json")
        finish = store.read(folder / "finish.json")
        training = store.read(folder / "adapter" / "training.json", None)
        loss = (
            f"{training['first_loss']:.3f} -> {training['last_loss']:.3f}"
            if training
            else "not trained"
        )
        audit = store.read(folder / "audit-candidate" / "summary.json", None)
        lines = [
            f"session {session.name}, preset {args.preset}, round {number}: "
            f"**{finish['decision']}**",
            "",
            f"- held-out pass@1, fixed development set ({sum(c[1] for c in dev_score.values())} "
            f"tasks, never trained on): {pooled(dev_score):.1f}% "
            f"(base {pooled(base[0]):.1f}%); {cells(dev_score, languages)}",
            f"- held-out pass@1, non-curriculum problems ({len(held)} tasks): "
            f"{pooled(held_score):.1f}% (base {pooled(base[1]):.1f}%); "
            f"{cells(held_score, languages)}",
            "- audit pass@1 (candidate): "
            + (
                f"{audit['passed']}/{audit['total']} (macro {audit['macro_pass_at_1']:.3f})"
                if audit
                else "audit not run this round"
            ),
            f"- rows exported: {exported['rows']} "
            + " ".join(f"{lang}={n}" for lang, n in exported["languages"].items()),
            f"- train loss first -> last: {loss}",
            f"- wall seconds per phase: {phase_times(folder, started)}",
        ]
        if number == args.rounds:
            gain_dev = pooled(dev_score) - pooled(base[0])
            gain_held = pooled(held_score) - pooled(base[1])
            per_language = " ".join(
                f"{lang}={100 * (held_score[lang][0] - base[1][lang][0]) / held_score[lang][1]:+.0f}"
                for lang in languages
            )
            lines += [
                "",
                f"Held-out gain over the base model after {number} rounds: "
                f"{gain_dev:+.1f} points on the fixed development set, "
                f"{gain_held:+.1f} points on the non-curriculum problems "
                f"(per language, points: {per_language}).",
            ]
        record(
            f"Learning on {args.preset}, round {number} of {args.rounds} (bench/learning.py)", lines
        )


if __name__ == "__main__":
    main()
