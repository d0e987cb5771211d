"""Does the loop learn? N rounds of cpu-demo in a fresh session, held-out gain measured.

Runs the rounds of a new cpu-demo session one at a time: each round's phases up to
`candidate` as `codeloop phase` processes, then `codeloop run` for the gate, the
audit and the decision. It evaluates, greedy, the base model before round 1, each
round's candidate (before finish deletes a rejected candidate's weights, so a
round that trained but was rejected still shows what its training did), and the
model the session retains after the round, on:
  - the fixed development set (development.json: dev families, never trained on);
  - held-out problems that are no curriculum family (bench/devset.py), in every
    language of the preset, so a gain cannot come from the curriculum's wording;
  - the clean held-out test (bench/holdout.py: 64 frozen problems, in every language
    of the preset), never used for tuning or selection: bench/devset.py was used
    for tuning and is a dev set now. It is measured on the base and the retained
    models only (never on a candidate): pass@1, the number of distinct problems
    solved (in at least one language), and the retained model's gain over the base
    model with its paired bootstrap interval over problems, on all 64 problems and on
    the non-kin ones (bench/holdout.py's KIN: problems that are a curriculum family,
    a bench/devset.py problem or the worked example up to one edit are left out).
Scores are cached by adapter sha256 (an accepted candidate is not measured twice).
Per round it appends to bench/RESULTS.md: held-out pass@1 of candidate and retained
model (the clean held-out test: retained model only), audit pass@1 when the audit
ran, rows exported per language, train loss first -> last, the decision, and wall
time per phase; each entry states the retained model's gain over the base model in
points, pooled and per language.

    .venv/bin/python -m bench.learning [--rounds 4] [--session DIR] [--preset cpu-demo]
                                       [--engine llamacpp] [--seed N] [--tiers 1,2]
                                       [--resume] [--engine-set KEY=VALUE ...]
                                       [--phases-only] [--stop-after PHASE]

`--resume` continues a session this script started (with its saved config) from its
first unfinished round, up to `--rounds`; the scores it measured are kept in the
session's bench-learning-scores.json, keyed by adapter sha256 and the held-out sets'
hashes, so a resumed run measures only what it has not measured yet.

`--engine-set weights=q8_0 --engine-set merge_adapter=true` changes engine settings
of the preset (the entry states the weights and how adapters are applied), and
`--phases-only` runs the loop's phases without this script's held-out evaluations:
together they compare how long a round's phases take under two engine settings.

`--stop-after collect` (with `--phases-only --rounds 1`) runs round 1 up to that phase
and writes its phase times: each phase's seconds come with what its process waited on
(loading the model, generating, checking in the sandbox; codeloop/clock.py), so where a
phase's time goes can be seen without running the hour-long rest of the round.

`--engine` runs the preset with another engine kind (its other engine settings kept),
for the loop and for this script's own evaluations alike. `--tiers 1,2` makes every
curriculum source of the preset draw from those tiers: broader train families (and,
as the suites follow the session's tiers, a broader development set and audit).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import devset
from bench.results import record
from codeloop import recipe, store
from codeloop.config import SessionConfig, load, load_preset, validate, with_values
from codeloop.engines import create
from codeloop.engines.base import adapter_sha256
from codeloop.loop import origin
from codeloop.loop.common import PHASES
from codeloop.loop.launcher import open_session
from codeloop.sandbox import check_many
from codeloop.store import SessionPaths, sha256_json
from codeloop.tasks import clean as holdout
from codeloop.tasks.checks import request as check_request
from codeloop.tasks.schema import Task

Score = dict[str, list[int]]
"""language -> [passed, total]."""


def verdicts(config: SessionConfig, adapter: Path | None, tasks: list[Task]) -> list[bool]:
    """Whether the model with `adapter` passes each of `tasks`, greedy, checked in the sandbox."""
    engine = create(config.engine)
    try:
        engine.load_adapter(adapter)
        answers = engine.generate(
            [recipe.messages(task) for task in tasks], max_tokens=config.engine.max_tokens
        )
    finally:
        engine.close()
    requests, where = [], []
    passed = [False] * len(tasks)
    for index, (task, [completion]) in enumerate(zip(tasks, answers, strict=True)):
        try:
            program = recipe.source(completion.text, task.language)
        except ValueError:
            continue
        requests.append(check_request(task, program, config.sandbox))
        where.append(index)
    checks = check_many(requests, workers=config.sandbox.workers, backend=config.sandbox.backend)
    for index, check in zip(where, checks, strict=True):
        if check.status == "environment_error":
            raise SystemExit(f"sandbox environment error: {check.feedback}")
        passed[index] = check.passed
    return passed


class ScoreCache:
    """Scores measured in a session, on disk, so that `--resume` does not measure again.

    Keyed by what was measured ("held-out" or "clean"), the adapter's sha256 ("base"
    for none) and the sha256 of the task sets: a changed task set misses the cache.
    """

    def __init__(self, path: Path, *task_sets: list[Task]) -> None:
        self.path = path
        self.tasks = sha256_json([[t.model_dump(mode="json") for t in ts] for ts in task_sets])
        saved = store.read(path, None) or {}
        self.scores: dict[str, Any] = (
            saved.get("scores", {}) if saved.get("tasks") == self.tasks else {}
        )

    def get(self, kind: str, key: str) -> Any:
        return self.scores.get(f"{kind}/{key}")

    def put(self, kind: str, key: str, value: Any) -> None:
        self.scores[f"{kind}/{key}"] = value
        store.write_json(self.path, {"tasks": self.tasks, "scores": self.scores})


def evaluate(config: SessionConfig, adapter: Path | None, tasks: list[Task]) -> Score:
    """Greedy pass@1 of the model with `adapter` on `tasks`, per language."""
    return tally(tasks, verdicts(config, adapter, tasks))


def tally(tasks: list[Task], passed_each: list[bool]) -> Score:
    """Tasks passed and tasks, per language."""
    score: Score = {}
    for task, passed in zip(tasks, passed_each, strict=True):
        cell = score.setdefault(task.language, [0, 0])
        cell[0] += int(passed)
        cell[1] += 1
    return score


def pooled(score: Score) -> float:
    passed = sum(cell[0] for cell in score.values())
    total = sum(cell[1] for cell in score.values())
    return 100.0 * passed / total if total else 0.0


def cells(score: Score, languages: list[str]) -> str:
    return " ".join(
        f"{lang}={score.get(lang, [0, 0])[0]}/{score.get(lang, [0, 0])[1]}" for lang in languages
    )


def non_kin_gain(tasks: list[Task], before: list[bool], after: list[bool]) -> str:
    """The clean held-out test's gain on its non-kin problems, with its paired interval."""
    gain = holdout.non_kin_interval(tasks, before, after)
    return (
        f"{gain['difference']:+.1f} points on its {gain['problems']} non-kin problems "
        f"({gain['level']:.0%} paired bootstrap interval [{gain['low']:+.1f}, "
        f"{gain['high']:+.1f}])"
    )


def waited_on(clock_file: Path) -> str:
    """' (load L, generate G, check C)': what the phase's process waited on, from the
    PHASE.clock.json the phase runner writes (codeloop/clock.py); '' where there is none
    (a phase run before the clock existed) or it spent nothing on any of them."""
    if not clock_file.exists():
        return ""
    seconds = store.read(clock_file)["seconds"]
    shown = [f"{kind} {value:.0f}" for kind, value in seconds.items() if value >= 0.5]
    return f" ({', '.join(shown)})" if shown else ""


def phase_times(folder: Path, started: float, bench: list[tuple[float, float]]) -> str:
    """Seconds per phase, from the modification times of the PHASE.json files, each
    with what its process waited on (`waited_on`): the rest of a phase is starting
    Python, reading files and bookkeeping.

    `bench` holds the (start, end) of this script's own evaluations between two
    phases (the base model's, after round 1's prepare; a candidate's, before the
    gate); they are reported on their own, not counted in the phase after them.
    """
    parts, previous = [], started
    for phase in PHASES:
        done = folder / f"{phase}.json"
        if done.exists():
            stamp = done.stat().st_mtime
            if stamp < started:  # a resumed round: finished by an earlier run
                parts.append(f"{phase} (an earlier run)")
                continue
            spent = stamp - previous
            for start, end in bench:
                if previous <= start and stamp >= end:
                    spent -= end - start
            parts.append(f"{phase} {spent:.0f}{waited_on(folder / f'{phase}.clock.json')}")
            previous = stamp
    apart = sum(end - start for start, end in bench)
    return ", ".join(parts) + f" (bench held-out evaluation {apart:.0f} s apart)"


def engine_values(pairs: list[str]) -> dict[str, Any]:
    """`--engine-set KEY=VALUE` pairs as engine settings: each value JSON where it
    parses (true, 4, "x"), else the word itself (q8_0)."""
    values: dict[str, Any] = {}
    for pair in pairs:
        key, equals, text = pair.partition("=")
        if not equals or not key:
            raise SystemExit(f"--engine-set {pair!r}: write KEY=VALUE, e.g. weights=q8_0")
        try:
            values[key] = json.loads(text)
        except json.JSONDecodeError:
            values[key] = text
    return values


def engine_stated(config: SessionConfig) -> str:
    """The engine settings a round's speed depends on, as the entry states them."""
    engine = config.engine
    if engine.kind != "llamacpp":
        return f"engine {engine.kind}"
    weights = engine.weights or ("q8_0" if engine.merge_adapter else "as the file")
    adapters = "merged" if engine.merge_adapter else "at run time"
    return f"engine llamacpp (weights {weights}, adapters {adapters})"


def curriculum_tiers(config: SessionConfig) -> str:
    """The tiers the session's curriculum sources draw from, as the entry states them."""
    tiers = sorted(
        {tier for s in config.tasks.sources if s.kind == "curriculum" for tier in s.tiers}
    )
    return ",".join(map(str, tiers)) or "none"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--preset", default="cpu-demo")
    parser.add_argument("--session", type=Path, default=None)
    parser.add_argument("--engine", choices=["hf", "llamacpp"], help="override engine.kind")
    parser.add_argument("--seed", type=int, default=None, help="override the preset's root seed")
    parser.add_argument(
        "--tiers",
        type=lambda text: sorted({int(tier) for tier in text.split(",")}),
        default=None,
        help="override the tiers of the preset's curriculum sources, e.g. 1,2",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue --session from its first unfinished round"
    )
    parser.add_argument(
        "--engine-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one engine setting of the preset (a JSON value or a word), e.g. "
        "weights=q8_0 or merge_adapter=true; repeatable",
    )
    parser.add_argument(
        "--stop-after",
        choices=PHASES[: PHASES.index("candidate") + 1],
        default=None,
        help="with --phases-only and --rounds 1: run round 1 up to this phase, then write "
        "its phase times and stop (e.g. collect: where collect's time goes, in minutes "
        "instead of an hour)",
    )
    parser.add_argument(
        "--phases-only",
        action="store_true",
        help="the loop's own phases, outcome and phase times only: none of this script's "
        "held-out evaluations (for comparing how long a round takes under two settings)",
    )
    return parser


def _open(args: argparse.Namespace, session: Path) -> SessionPaths:
    """`--resume`'s session, or a fresh one from the preset and the overrides."""
    if args.resume:
        if not (session / "config.toml").exists():
            raise SystemExit(f"{session}: no session to resume (no config.toml)")
        return open_session(session, None)
    if session.exists():
        raise SystemExit(
            f"{session}: exists; bench/learning.py starts a fresh session (or --resume it)"
        )
    preset = load_preset(args.preset)
    if args.engine:
        preset = with_values(preset, {"engine": {"kind": args.engine}}, "--engine")
    if args.engine_set:
        preset = with_values(preset, {"engine": engine_values(args.engine_set)}, "--engine-set")
    data = preset.model_dump(mode="json", by_alias=True, exclude_none=True)
    if args.seed is not None:
        data["seed"] = args.seed
    if args.tiers is not None:
        if not any(source["kind"] == "curriculum" for source in data["tasks"]["sources"]):
            raise SystemExit(f"--tiers: preset {args.preset} has no curriculum source")
        data["tasks"]["sources"] = [
            {**source, "tiers": args.tiers} if source["kind"] == "curriculum" else source
            for source in data["tasks"]["sources"]
        ]
    config = validate(data, "--seed/--tiers")
    return open_session(session, config, origin.from_preset(args.preset, config))


class Measures:
    """The held-out measurements of a session's models, cached in the session: the fixed
    development set, the non-curriculum problems and the clean held-out test."""

    def __init__(self, session: Path, config: SessionConfig, fixed: list[Task]) -> None:
        self.config = config
        self.languages = list(config.tasks.languages)
        self.clean_tasks = holdout.tasks(self.languages)  # raises if the frozen set was edited
        self.fixed = fixed
        self.held = devset.tasks(self.languages)
        self.cache = ScoreCache(
            session / "bench-learning-scores.json", fixed, self.held, self.clean_tasks
        )

    def measure(self, adapter: Path | None) -> tuple[Score, Score]:
        key = adapter_sha256(adapter) if adapter else "base"
        found = self.cache.get("held-out", key)
        if found is None:
            found = [
                evaluate(self.config, adapter, self.fixed),
                evaluate(self.config, adapter, self.held),
            ]
            self.cache.put("held-out", key, found)
        return found[0], found[1]

    def measure_clean(self, adapter: Path | None) -> list[bool]:
        """Clean held-out verdicts: of the base and the retained models only, never of a
        candidate, so that no decision can lean on them."""
        key = adapter_sha256(adapter) if adapter else "base"
        found = self.cache.get("clean", key)
        if found is None:
            found = verdicts(self.config, adapter, self.clean_tasks)
            self.cache.put("clean", key, found)
        return found

    def clean(self, passed: list[bool]) -> str:
        """Clean held-out pass@1 and distinct problems solved."""
        score = tally(self.clean_tasks, passed)
        solved = holdout.distinct_solved(self.clean_tasks, passed)
        return f"{pooled(score):.1f}%, {solved} of {len(holdout.PROBLEMS)} problems solved"


def _phases(session: Path, number: int, names: list[str], resume: bool, env: dict) -> None:
    """Round `number`'s phases in `names` that have not finished, one process each."""
    folder = SessionPaths(session).round(number)
    for name in names:
        if not (folder / f"{name}.json").exists():
            phase = ["phase", "--session", str(session), "--round", str(number)]
            if resume:  # a phase killed mid-way (a train checkpoint) continues
                phase.append("--resume")
            subprocess.run(
                [sys.executable, "-m", "codeloop", *phase, "--phase", name], check=True, env=env
            )


def _outcome(folder: Path, started: float, windows: list[tuple[float, float]]) -> list[str]:
    """The round's audit, exported rows, loss and phase times, as the entry states them."""
    exported = store.read(folder / "export.json")
    training = store.read(folder / "adapter" / "training.json", None)
    loss = (
        f"{training['first_loss']:.3f} -> {training['last_loss']:.3f}"
        if training
        else "not trained"
    )
    audit = store.read(folder / "audit-candidate" / "summary.json", None)
    return [
        "- audit pass@1 (candidate): "
        + (
            f"{audit['passed']}/{audit['total']} (macro {audit['macro_pass_at_1']:.3f})"
            if audit and audit.get("total")
            else "no greedy answers (audit.suites empty)"
            if audit
            else "audit not run this round"
        ),
        f"- rows exported: {exported['rows']} "
        + " ".join(f"{lang}={n}" for lang, n in exported["languages"].items()),
        f"- train loss first -> last: {loss}",
        f"- wall seconds per phase: {phase_times(folder, started, windows)}",
    ]


def _held_out(
    measures: Measures,
    retained: Path | None,
    base: tuple[tuple[Score, Score], list[bool]],
    candidate: tuple[Score, Score] | None,
    number: int,
) -> tuple[list[str], list[str]]:
    """(the retained model's and the candidate's held-out lines, the gain so far)."""
    languages, clean_tasks = measures.languages, measures.clean_tasks
    (base_dev, base_held), base_clean = base
    dev_score, held_score = measures.measure(retained)
    clean_passed = measures.measure_clean(retained)
    gain = holdout.paired_interval(base_clean, clean_passed)
    unlike = non_kin_gain(clean_tasks, base_clean, clean_passed)
    interval = (
        f"{gain['level']:.0%} paired bootstrap interval over problems "
        f"[{gain['low']:+.1f}, {gain['high']:+.1f}]"
    )
    lines = [
        f"- retained model, held-out pass@1, fixed development set "
        f"({sum(c[1] for c in dev_score.values())} tasks, never trained on): "
        f"{pooled(dev_score):.1f}% (base {pooled(base_dev):.1f}%); "
        f"{cells(dev_score, languages)}",
        f"- retained model, held-out pass@1, non-curriculum problems "
        f"({len(measures.held)} tasks): {pooled(held_score):.1f}% "
        f"(base {pooled(base_held):.1f}%); {cells(held_score, languages)}",
        f"- retained model, clean held-out test pass@1 (bench/holdout.py, "
        f"{len(clean_tasks)} tasks, never used for tuning or selection): "
        f"{measures.clean(clean_passed)} (base {measures.clean(base_clean)}); gain "
        f"{gain['difference']:+.1f} points, {interval}; {unlike}; "
        f"{cells(tally(clean_tasks, clean_passed), languages)}",
        "- this round's candidate, held-out pass@1: "
        + (
            f"fixed development set {pooled(candidate[0]):.1f}% "
            f"({cells(candidate[0], languages)}); non-curriculum "
            f"{pooled(candidate[1]):.1f}% ({cells(candidate[1], languages)})"
            if candidate
            else "no candidate (not trained)"
        ),
    ]
    # every round, so that a run stopped early still states its gain so far
    gain_dev = pooled(dev_score) - pooled(base_dev)
    gain_held = pooled(held_score) - pooled(base_held)
    per_language = " ".join(
        f"{lang}={100 * (held_score[lang][0] - base_held[lang][0]) / held_score[lang][1]:+.0f}"
        for lang in languages
    )
    summary = [
        "",
        f"Held-out gain over the base model after {number} rounds: "
        f"{gain_dev:+.1f} points on the fixed development set, "
        f"{gain_held:+.1f} points on the non-curriculum problems "
        f"(per language, points: {per_language}), "
        f"{gain['difference']:+.1f} points on the clean held-out test ({interval}), "
        f"{unlike}.",
    ]
    return lines, summary


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    if args.stop_after and not (args.phases_only and args.rounds == 1 and not args.resume):
        parser.error("--stop-after needs --phases-only and --rounds 1 (a fresh session)")
    root = Path(__file__).resolve().parent.parent
    session = args.session or root / "sessions" / f"bench-learning-{int(time.time())}"
    paths = _open(args, session)
    config = load(paths.config)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    finished = len(store.read(paths.status).get("history", []))
    run_started = time.time()
    if not paths.development.exists():
        # The fixed development set is written by round 1's prepare: run that phase
        # now, so that the base model is measured before any round's phases are timed.
        prepare = ["phase", "--session", str(session), "--round", "1", "--phase", "prepare"]
        subprocess.run([sys.executable, "-m", "codeloop", *prepare], check=True, env=env)
    fixed = [Task.model_validate(t) for t in store.read(paths.development)["tasks"]]
    measures = Measures(session, config, fixed)
    base_measuring = time.time()
    if not args.phases_only:
        base = (measures.measure(None), measures.measure_clean(None))
    base_window = (base_measuring, time.time())
    stated = (
        f"session {session.name}, preset {args.preset}, {engine_stated(config)}, "
        f"seed {config.seed}, curriculum tiers {curriculum_tiers(config)}"
    )
    names = PHASES[: PHASES.index(args.stop_after or "candidate") + 1]
    for number in range(finished + 1, args.rounds + 1):
        first = number == finished + 1
        started = run_started if first else time.time()
        folder = paths.round(number)
        _phases(session, number, names, args.resume, env)
        if args.stop_after:
            record(
                f"Learning on {args.preset}, round 1 up to {args.stop_after} (bench/learning.py)",
                [
                    f"{stated}: stopped after {args.stop_after} (`--stop-after`), no decision",
                    "",
                    f"- wall seconds per phase: {phase_times(folder, started, [base_window])}",
                ],
            )
            return
        measuring = time.time()
        weights = folder / "adapter" / "adapter_model.safetensors"
        candidate = (
            measures.measure(folder / "adapter")
            if weights.exists() and not args.phases_only
            else None
        )
        evaluated = time.time()
        windows = [base_window, (measuring, evaluated)] if first else [(measuring, evaluated)]
        rest = ["run", "--session", str(session), "--rounds", str(number)]
        subprocess.run([sys.executable, "-m", "codeloop", *rest], check=True, env=env)
        finish = store.read(folder / "finish.json")
        lines = [f"{stated}, round {number}: **{finish['decision']}**", ""]
        outcome = _outcome(folder, started, windows)
        if args.phases_only:
            lines += outcome
            lines.append("\n(`--phases-only`: no held-out evaluation by this script.)")
        else:
            retained = store.read(paths.status).get("retained_adapter")
            adapter = session / retained if retained else None
            held, summary = _held_out(measures, adapter, base, candidate, number)
            lines += [*held, *outcome, *summary]
        record(
            f"Learning on {args.preset}, round {number} of {args.rounds} (bench/learning.py)", lines
        )


if __name__ == "__main__":
    main()
