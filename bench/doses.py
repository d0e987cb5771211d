"""Graded real candidates through the preset's guard, beside the simulator's prediction.

docs/GUARD.md fixed the rule before any real candidate met it; this bench is that
validation. Per base round (a cpu-demo session of its own seed: prepare, collect,
export, run for real once), candidates train on a mix of `--rows` rows of which a
share, the dose, is harmful by construction (programs that print the public example's
output or the statement, labelled verified: bench/decisions.py's `label_rows`) and the
rest the model's own verified rows (the round's export, plus `--helpful-rows` when the
round verified too few). Every dose trains at each learning rate of `--lrs` (1e-3 by
default; at the preset's 1e-4, 16 steps of labels left the held-out set unchanged) with
the round's seed, so the parent's answers and samples are shared between doses (names
end -lr3e-04 off 1e-3).

Each candidate then meets the preset's real guard: the phases baseline, train,
candidate, gate, audit-parent and audit-candidate as `codeloop phase` processes (the
audit forced with round.audit_every = 1), then `finish.confirm_flips` and
`finish.decide` (the real finish phase would delete a rejected candidate's weights).

Truth, on the clean held-out set (bench/holdout.py, refused on a failed hash), read as
a scale factor f = candidate / parent pass rate (the cpu-demo effects are
multiplicative: a candidate keeps, halves or loses what the parent could do):
  - sampled (`--truth-samples` k, 2 by default): k seeded samples per task and side at
    the audit's temperature, the guard's own measure, with the paired standard error
    over tasks; f and its 95% interval come from it;
  - greedy pass@1 and its paired bootstrap interval, reported beside it (and used for f
    with `--truth-samples 0`). The two can differ: training that sharpens the model's
    answers raises its sampled pass rate without changing its greedy one;
  - the audit's own truth (`--family-variants` V, 3 by default): the same k samples on
    variants 1..V of every family whose variant 0 the audit holds (fresh tasks of the
    audit's families), judged against the audit's margin, with the audit's band at the
    f measured there.

Prediction: bench/decision_sim.py's `oc_point` through the same decision code, on a
profile of this base round: per task, the parent's pass probability is the posterior
mean of its own confirmation samples (gate: validation, audit: audit tasks) under the
beta-binomial fit of those samples (bench/guard_inputs.py's `beta_fit`), with the
candidate's q = f p at f's estimate and at both ends of its interval. P(accept) =
P(gate promising) x P(audit keeps) (disjoint task sets). A real decision agrees with
the band when the outcome it gave had, somewhere in the band, a chance of at least
2.5%; per dose, the observed accepts are set beside the expected count.

    .venv/bin/python -m bench.doses --session DIR [--seeds 11,12] [--doses 100,0,50,25,75]
        [--lrs 1e-3,3e-4] [--family-variants 3] [--languages javascript,java] [--rows 16]
        [--helpful-rows FILE] [--reps 400] [--report-only]

Resumable: every finished phase, decision and held-out evaluation is kept in DIR; the
report lists every candidate DIR holds. Candidates run dose by dose across the base
rounds (the first dose in every round, then the next), so a cut run still spans them.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import decisions
from bench.decision_sim import Profile, oc_point, scale, wilson
from bench.guard_inputs import beta_fit, measure_set
from bench.results import record
from codeloop import store
from codeloop.config import load, load_preset, validate
from codeloop.evaluate import guard
from codeloop.evaluate.suites import suite_tasks
from codeloop.loop import confirm, finish, origin
from codeloop.loop import gate as gate_phase
from codeloop.loop.audit import audit_tasks
from codeloop.loop.common import Round
from codeloop.loop.launcher import open_session
from codeloop.tasks import curriculum
from codeloop.tasks.schema import Task

TRUTH = "truth-confirm"
"""The candidate round's folder of seeded held-out samples (the sampled truth)."""
FAMILY = "truth-family"
"""Its folder of seeded samples on fresh variants of the audit's families (the audit's
own distribution, on tasks the audit does not hold)."""
REFERENCE_LR = 1e-3
"""The learning rate whose candidates keep their first names (s11-dose000)."""
SHARED_PHASES = (
    "baseline",
    "audit-parent",
    "audit-confirm-parent",
    "gate-confirm-parent",
    f"{TRUTH}-parent",
    f"{FAMILY}-parent",
)
"""Phases that ask the parent only: their answers are shared between the doses."""
BAND_CHANCE = 0.025
"""A decision disagrees with its band when every point of the band gave it less than this."""


def base_config(languages: list[str], seed: int):
    """The cpu-demo preset at `languages` (round sizes scaled as bench/decisions.py
    does), `seed`, with the audit forced; the guard itself is the preset's."""
    data = load_preset("cpu-demo").model_dump(mode="json", by_alias=True, exclude_none=True)
    data["tasks"]["languages"] = languages
    for key, per_language in decisions.PER_LANGUAGE.items():
        data["round"][key] = per_language * len(languages)
    data["seed"] = seed
    data["round"]["audit_every"] = 1
    return validate(data, "bench/doses.py base round")


def base_round(work: Path, languages: list[str], seed: int) -> Round:
    """The base round of `seed`, collected once (prepare, collect, export)."""
    session = work / f"base-s{seed}"
    wanted = base_config(languages, seed)
    if (session / "config.toml").exists() and load(session / "config.toml") != wanted:
        raise SystemExit(f"{session}: collected with other --languages; use another --session")
    if (session / "config.toml").exists():
        open_session(session, None)
    else:
        open_session(session, wanted, origin.from_preset("cpu-demo", wanted))
    for phase in decisions.SHARED_PHASES:
        if not (session / "round-000001" / f"{phase}.json").exists():
            decisions.say(f"base s{seed}: phase {phase}")
            decisions.run_phase(session, phase)
    shared = decisions.round_of(session)
    audit_tasks(shared)  # fixed once, so every dose faces the same audit
    return shared


def mixed_rows(
    shared: Round, dose: int, rows: int, extra: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], int]:
    """`rows` training rows, `dose`% of them harmful, the rest helpful (cycled), in an
    order fixed by the round's seed; and how many helpful rows there were to cycle."""
    languages = set(shared.config.tasks.languages)
    helpful = decisions.verified_rows(shared) + [r for r in extra if r["language"] in languages]
    harmful = decisions.label_rows(shared)
    bad = round(rows * dose / 100)
    if bad < rows and not helpful:
        raise SystemExit("no verified rows to mix in: pass --helpful-rows")
    chosen = [harmful[i % len(harmful)] for i in range(bad)]
    chosen += [helpful[i % len(helpful)] for i in range(rows - bad)]
    random.Random(shared.config.seed).shuffle(chosen)
    return chosen, len(helpful)


def make_dose(shared: Round, folder: Path, dose: int, rows: int, lr: float, extra) -> None:
    """Copy the base round to `folder` with the dose's rows and learning rate (through a
    temporary folder: a crash never leaves half a candidate)."""
    chosen, helpful = mixed_rows(shared, dose, rows, extra)
    data = shared.config.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["train"]["learning_rate"] = lr
    data["export"]["min_examples"] = min(shared.config.export.min_examples, len(chosen))
    config = validate(data, f"bench/doses.py {folder.name}")
    harmful = round(rows * dose / 100)
    what = f"dose {dose}%: {len(chosen)} rows, {harmful} harmful, helpful from {helpful}"
    decisions.copy_with_rows(shared, folder, config, chosen, what)


def sample_counts(r: Round, name: str, ids: list[str]) -> dict[str, list[int]]:
    """Per side, passes of the saved confirmation samples per task (in `ids` order)."""
    sides = confirm.saved_passes(r, name, ids)
    return {side: [sum(sides[side][i]) for i in ids] for side in sides}


def inputs(folder: Path) -> dict[str, Any]:
    """bench/guard_inputs.py's measurements of this candidate against its parent: how
    alike their answers are (greedy and same-seed samples), per set."""
    found = {}
    for name in ("validation", "audit"):
        m = measure_set(folder, name)
        found[name] = {
            key: m[key]
            for key in ("greedy_same_text", "sample_same_text", "outcome_correlation",
                        "sample_pass_rate", "discordant_pairs")
        }  # fmt: skip
    return found


def family_tasks(config, variants: int) -> list[Task]:
    """Variants 1..`variants` of every family the audit (curriculum-test) holds variant
    0 of, in the session's languages: fresh tasks of the audit's families."""
    held = audit_families(config)
    tasks = []
    for variant in range(1, variants + 1):
        for family in curriculum.families():
            if family.name not in held:
                continue
            problem = curriculum.render_problem(
                family, variant, config.seed, config.tasks.languages
            )
            tasks += [task.with_split("test") for task in problem.tasks]
    return tasks


def audit_families(config) -> set[str]:
    """The curriculum families whose variant 0 the audit holds."""
    return {
        task.family.removeprefix("curriculum/") for task in suite_tasks(config, "curriculum-test")
    }


def sampled_truth(folder: Path, tasks: list, k: int, name: str = TRUTH) -> dict[str, Any]:
    """(`folder`: the candidate's session.) The truth in the guard's own measure: k
    seeded samples per task of `tasks` (the held-out set; or, `name` FAMILY, fresh
    variants of the audit's families) of parent and candidate at the audit's
    temperature (confirm.sample, bound like the audit's), and their paired estimate
    over the tasks."""
    r = decisions.round_of(folder)
    data = r.config.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["audit"]["confirm_samples"] = k
    ruled = decisions.round_of(folder, validate(data, "bench/doses.py truth samples"))
    adapters = {"parent": ruled.parent_path, "candidate": str(ruled.candidate_adapter)}
    confirm.sample(ruled, tasks, adapters, name=name)
    ids = [task.id for task in tasks]
    sides = confirm.saved_passes(ruled, name, ids)
    found = guard.paired_estimate(sides["parent"], sides["candidate"], ids)
    return {
        "samples": k,
        "temperature": ruled.config.audit.confirm_temperature,
        "tasks": len(ids),
        "parent_rate": found.parent_rate,
        "candidate_rate": found.candidate_rate,
        "change": found.change,
        "standard_error": found.standard_error,
    }


def candidate_name(seed: int, dose: int, lr: float) -> str:
    """s11-dose000, with -lr3e-4 after it at a learning rate other than REFERENCE_LR."""
    name = f"s{seed}-dose{dose:03d}"
    return name if lr == REFERENCE_LR else f"{name}-lr{lr:.0e}"


def backfill(saved: dict[str, Any], folder: Path, held, family: list[Task], args) -> bool:
    """Add the truths a saved result lacks (asked for after it was judged); whether any."""
    added = False
    k = args.truth_samples
    if k and (saved.get("truth") or {}).get("samples") != k:
        decisions.say(f"{saved['name']}: sampled truth, {k} per held-out task")
        saved["truth"] = sampled_truth(folder, held.tasks, k)
        added = True
    wanted = {"samples": k, "tasks": len(family)}
    have = saved.get("family_truth") or {}
    if k and family and {key: have.get(key) for key in wanted} != wanted:
        decisions.say(f"{saved['name']}: audit-family truth, {k} per task of {len(family)}")
        saved["family_truth"] = sampled_truth(folder, family, k, name=FAMILY)
        added = True
    return added


def run_dose(
    work: Path, shared: Round, held, family: list[Task], dose: int, lr: float, args, extra
) -> dict[str, Any]:
    """One candidate through the real guard, its decision and truths saved in DIR/results."""
    name = candidate_name(shared.config.seed, dose, lr)
    result_file = work / "results" / f"{name}.json"
    folder = work / "candidates" / name
    if (saved := store.read(result_file, None)) is not None:
        if backfill(saved, folder, held, family, args):
            store.write_json(result_file, saved)
            decisions.share_answers(shared.session.root, folder, SHARED_PHASES)
        return saved
    started = time.time()
    if not folder.exists():
        decisions.say(f"{name}: writing its training data")
        make_dose(shared, folder, dose, args.rows, lr, extra)
    r = decisions.round_of(folder)
    for phase in decisions.CANDIDATE_PHASES:
        if not r.phase_done(phase):
            decisions.say(f"{name}: phase {phase}")
            decisions.run_phase(folder, phase)
    finish.confirm_flips(r)
    verdict = finish.decide(r)
    base = held.verdicts(None)
    after = held.verdicts(r.candidate_adapter)
    gate = r.result("gate")
    audit = verdict["comparisons"].get("audit", {})
    audit_ids = guard.audit_sample_ids(r.config.audit, audit, finish._audit_ids(r))
    validation_ids = guard.gate_sample_ids(
        r.config.gate, gate_phase.comparison(r), gate_phase.validation_ids(r)
    )
    training = store.read(r.candidate_adapter / "training.json", None) or {}
    result = {
        "name": name,
        "seed": r.config.seed,
        "dose": dose,
        "data": r.result("export")["reason"],
        "learning_rate": r.config.train.learning_rate,
        "loss": [training.get("first_loss"), training.get("last_loss")],
        "accepted": verdict["accepted"],
        "decision": verdict["decision"],
        "gate": {"promising": gate["promising"], "evidence": gate.get("confirmation")},
        "audit": {
            "evidence": audit.get("confirmation"),
            "greedy": [audit.get("before"), audit.get("after"), audit.get("total")],
        },
        "audit_counts": sample_counts(r, confirm.AUDIT, audit_ids),
        "gate_counts": sample_counts(r, confirm.GATE, validation_ids) if validation_ids else None,
        "samples": {"gate": r.config.gate.confirm_samples, "audit": r.config.audit.confirm_samples},
        "heldout": held.score(base, after),
        "inputs": inputs(r.folder),
        "truth": sampled_truth(folder, held.tasks, args.truth_samples)
        if args.truth_samples
        else None,
        "seconds": time.time() - started,
    }
    backfill(result, folder, held, family, args)
    store.write_json(result_file, result)
    decisions.share_answers(shared.session.root, folder, SHARED_PHASES)
    return result


# -- the simulator's prediction ----------------------------------------------------------------


def posterior(counts: list[int], k: int) -> np.ndarray:
    """Per-task pass probabilities: the posterior means of `counts` (passes of k samples)
    under the beta-binomial fit of all of them; zeros when nothing passed."""
    fit = beta_fit(counts, k)
    if fit is None:
        return np.zeros(len(counts))
    return (fit["a"] + np.asarray(counts)) / (fit["a"] + fit["b"] + k)


def factors(result: dict[str, Any], key: str = "truth") -> tuple[float, float, float]:
    """(low, estimate, high) of f = candidate / parent pass rate on the held-out set: from
    the sampled truth (the guard's own measure) when there is one, its 95% interval
    normal over tasks; else from greedy pass@1 and its paired bootstrap interval.
    `key` "family_truth": on the fresh variants of the audit's families instead."""
    truth = result.get(key)
    if truth:
        rate, change, se = truth["parent_rate"], truth["change"], truth["standard_error"]
        if rate == 0:
            return 1.0, 1.0, 1.0
        ends = (change - 1.96 * se, change, change + 1.96 * se)
        return tuple(max(0.0, 1 + d / rate) for d in ends)  # type: ignore[return-value]
    held = result["heldout"]
    rate = held["before"] / held["total"]
    if rate == 0:
        return 1.0, 1.0, 1.0
    low, high = held["interval"]
    gain = held["gain"]
    return tuple(max(0.0, 1 + points / 100 / rate) for points in (low, gain, high))  # type: ignore[return-value]


def shared_draws(result: dict[str, Any]) -> tuple[float, float]:
    """(samples, greedy) shares of same-text answers of this candidate and its parent,
    over both sets: the simulator's rho for this candidate, measured."""
    found = result["inputs"]
    sets = [found[name] for name in ("validation", "audit")]
    samples = [s["sample_same_text"] for s in sets if s["sample_same_text"] is not None]
    return (
        sum(samples) / len(samples) if samples else 0.0,
        sum(s["greedy_same_text"] for s in sets) / len(sets),
    )


def predict(result: dict[str, Any], base: dict[str, Any], reps: int) -> dict[str, Any]:
    """P(gate promising), P(audit keeps) and P(accept) at f's estimate and interval ends,
    at this candidate's measured rho."""
    rho, rho_greedy = shared_draws(result)
    config = load_preset("cpu-demo")
    gate_rule = config.gate.model_copy(update={"confirm_samples": result["samples"]["gate"]})
    audit_rule = config.audit.model_copy(update={"confirm_samples": result["samples"]["audit"]})
    profile = Profile(
        "dose base",
        posterior(base["audit"], result["samples"]["audit"]),
        posterior(base["gate"], result["samples"]["gate"]),
        rho,
        rho_greedy,
    )
    points = []
    for f in factors(result):
        gate = oc_point("gate", gate_rule, profile, rho, scale(f), reps, 2026)
        audit = oc_point("audit", audit_rule, profile, rho, scale(f), reps, 2027)
        points.append({"f": f, "gate": gate["keep"], "audit": audit["keep"],
                       "accept": gate["keep"] * audit["keep"],
                       "audit_wilson": [audit["low"], audit["high"]]})  # fmt: skip
    # The effect shaped as measured (circular: the decision's own samples), which shows
    # what a uniform f leaves out where a change sits on a few tasks.
    shaped = {}
    for kind, rule, key in (
        ("gate", gate_rule, "gate_counts"),
        ("audit", audit_rule, "audit_counts"),
    ):
        counts = result[key]
        if not counts:
            shaped[kind] = None
            continue
        k = result["samples"][kind]
        q = posterior(counts["candidate"], k)
        shaped[kind] = oc_point(kind, rule, profile, rho, lambda _p, _rng, q=q: q, reps, 2028)[
            "keep"
        ]
    family = []  # the audit's band with f measured on its own families' fresh variants
    if result.get("family_truth"):
        for f in factors(result, "family_truth"):
            audit = oc_point("audit", audit_rule, profile, rho, scale(f), reps, 2027)
            family.append({"f": f, "audit": audit["keep"]})
    return {
        "points": points,
        "shaped": shaped,
        "family": family,
        "rho": rho,
        "rho_greedy": rho_greedy,
    }


def agrees(happened: bool, points: list[dict[str, Any]], key: str = "accept") -> bool:
    """Whether some point of the band gave the observed outcome (of the decision, or of
    its `key` part: "gate" promising, "audit" keeping) a chance >= BAND_CHANCE."""
    return any((p[key] if happened else 1 - p[key]) >= BAND_CHANCE for p in points)


def audit_kept(result: dict[str, Any]) -> bool:
    evidence = result["audit"]["evidence"]
    return evidence is not None and not evidence.get("worse")


# -- the report ----------------------------------------------------------------------------------


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%".replace(".0%", "%")


def _yes(value: bool) -> str:
    return "yes" if value else "NO"


def report(results: list[dict[str, Any]], args, minutes: float) -> list[str]:
    bases = {}
    for res in results:
        bases.setdefault(res["seed"], {"audit": res["audit_counts"]["parent"],
                                       "gate": (res["gate_counts"] or {}).get("parent", [])})  # fmt: skip
    ordered = sorted(results, key=lambda r: (r["dose"], r["seed"]))
    predicted = {res["name"]: predict(res, bases[res["seed"]], args.reps) for res in ordered}
    lines = [
        "| candidate | rows (harmful) | loss first -> last | held-out greedy before -> after "
        "[95%] | held-out sampled parent -> candidate (change ± se) | f [95%] | gate: change "
        "[lower bound] | audit: change [lower bound] | decision | predicted P(promising), "
        "P(audit keeps), P(accept) at f low / est / high | agrees: gate, audit, decision "
        "| P(promising), P(audit keeps) with the effect shaped as measured |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_dose: dict[tuple[int, float], list[tuple[bool, float]]] = {}
    agreeing = {"gate": 0, "audit": 0, "accept": 0}
    for res in ordered:
        points = predicted[res["name"]]["points"]
        happened = {
            "gate": bool(res["gate"]["promising"]),
            "audit": audit_kept(res),
            "accept": res["accepted"],
        }
        ok = {key: agrees(value, points, key) for key, value in happened.items()}
        for key, value in ok.items():
            agreeing[key] += value
        by_dose.setdefault((res["dose"], res["learning_rate"]), []).append(
            (res["accepted"], points[1]["accept"])
        )
        lines.append(_candidate_row(res, args.rows, predicted[res["name"]], ok))
    lines += ["", "| dose | lr | candidates | accepted | expected accepts (sum of P at f's "
              "estimate) |", "|---|---|---|---|---|"]  # fmt: skip
    for (dose, lr), seen in sorted(by_dose.items()):
        kept = sum(a for a, _ in seen)
        low, high = wilson(kept, len(seen))
        lines.append(
            f"| {dose}% | {lr:g} | {len(seen)} | {kept} [{_pct(low)}, {_pct(high)}] | "
            f"{sum(p for _, p in seen):.2f} |"
        )
    lines += family_table(ordered, predicted)
    lines += _inputs_lines(results, ordered)
    n = len(results)
    lines += [
        "",
        f"Inside the simulator's band (the outcome had a chance of at least "
        f"{_pct(BAND_CHANCE)} somewhere in f's interval): gate {agreeing['gate']} of {n}, "
        f"audit {agreeing['audit']} of {n}, decision {agreeing['accept']} of {n}. f comes "
        "from the sampled truth where there is one (the guard's own measure), else from "
        f"greedy pass@1. rho: each candidate's own share of same-text answers (table "
        f"below), {args.reps} simulated decisions per point. Wall time of this invocation "
        f"{minutes:.1f} min; per candidate (minutes, first run): "
        + ", ".join(f"{r['name']} {r['seconds'] / 60:.1f}" for r in ordered)
        + ".",
    ]
    return lines


def _candidate_row(res: dict[str, Any], rows: int, predicted: dict, ok: dict[str, bool]) -> str:
    """A candidate's row of the first table: what was trained, measured and decided, and
    what the simulator predicted at f's interval."""
    points = predicted["points"]
    held, truth = res["heldout"], res.get("truth")
    low, est, high = factors(res)
    first, last = res["loss"]
    cells = []
    for side in ("gate", "audit"):
        e = res[side]["evidence"]
        cells.append(
            f"{100 * e['change']:+.1f} [{100 * e['lower_bound']:+.1f}]" if e else "not sampled"
        )
    sampled = (
        f"{_pct(truth['parent_rate'])} -> {_pct(truth['candidate_rate'])} "
        f"({100 * truth['change']:+.1f} ± {100 * truth['standard_error']:.1f}), "
        f"k {truth['samples']}"
        if truth
        else "-"
    )
    bands = " / ".join(
        f"{_pct(p['gate'])}, {_pct(p['audit'])}, {_pct(p['accept'])}" for p in points
    )
    return (
        f"| {res['name']} | {rows} ({round(rows * res['dose'] / 100)}) | "
        f"{first:.3f} -> {last:.3f} | {held['before']} -> {held['after']}/{held['total']} "
        f"[{held['interval'][0]:+.1f}, {held['interval'][1]:+.1f}] | {sampled} | "
        f"{est:.2f} [{low:.2f}, {high:.2f}] | {cells[0]} | {cells[1]} | "
        f"{'accept' if res['accepted'] else 'reject'} | {bands} | "
        f"{_yes(ok['gate'])}, {_yes(ok['audit'])}, {_yes(ok['accept'])} | "
        + ", ".join("-" if value is None else _pct(value) for value in predicted["shaped"].values())
        + " |"
    )


def _inputs_lines(results: list[dict[str, Any]], ordered: list[dict[str, Any]]) -> list[str]:
    """The table of the simulator's inputs measured on each candidate."""
    lines = [
        "",
        "Measured per candidate against its parent (bench/guard_inputs.py's measure_set): "
        f"the simulator's inputs on real candidates of {len({r['seed'] for r in results})} "
        f"base rounds and {len({r['dose'] for r in results})} doses.",
        "",
        "| candidate | set | greedy same text | sample same text | outcome correlation | "
        "sample pass parent / candidate | discordant pairs |",
        "|---|---|---|---|---|---|---|",
    ]
    for res in ordered:
        for name, m in res["inputs"].items():
            rates = m["sample_pass_rate"] or [0.0, 0.0]
            corr = m["outcome_correlation"]
            lines.append(
                f"| {res['name']} | {name} | {_pct(m['greedy_same_text'])} | "
                f"{_pct(m['sample_same_text'] or 0.0)} | "
                f"{'-' if corr is None else f'{corr:.2f}'} | "
                f"{100 * rates[0]:.1f}% / {100 * rates[1]:.1f}% | {m['discordant_pairs']} |"
            )
    return lines


def family_table(ordered: list[dict[str, Any]], predicted: dict[str, Any]) -> list[str]:
    """The audit against its own distribution: each candidate's sampled change on fresh
    variants of the audit's families, whether that truth says worse than the margin,
    and the audit's band at the f measured there."""
    rows = [res for res in ordered if res.get("family_truth")]
    if not rows:
        return []
    margin = load_preset("cpu-demo").audit.margin
    truth = rows[0]["family_truth"]
    lines = [
        "",
        f"The audit against fresh variants of its own families ({truth['tasks']} tasks the "
        f"audit does not hold, {truth['samples']} samples per task and side at T "
        f"{truth['temperature']:g}): the truth says worse when the change's 95% upper end "
        f"is below -{100 * margin:g} points, not worse when its lower end is above, else "
        "undecided.",
        "",
        "| candidate | audit: change [lower bound] | audit kept | fresh variants: parent -> "
        "candidate (change ± se) | truth | f [95%] | predicted P(audit keeps) at f low / "
        "est / high | agrees |",
        "|---|---|---|---|---|---|---|---|",
    ]
    inside = 0
    for res in rows:
        t = res["family_truth"]
        low_end = t["change"] - 1.96 * t["standard_error"]
        high_end = t["change"] + 1.96 * t["standard_error"]
        verdict = (
            "worse" if high_end < -margin else "not worse" if low_end > -margin else "undecided"
        )
        band = predicted[res["name"]]["family"]
        kept = audit_kept(res)
        ok = agrees(kept, band, "audit")
        inside += ok
        low, est, high = (p["f"] for p in band)
        e = res["audit"]["evidence"]
        lines.append(
            f"| {res['name']} | "
            + (f"{100 * e['change']:+.1f} [{100 * e['lower_bound']:+.1f}]" if e else "not sampled")
            + f" | {_yes(kept).lower()} | {_pct(t['parent_rate'])} -> "
            f"{_pct(t['candidate_rate'])} ({100 * t['change']:+.1f} ± "
            f"{100 * t['standard_error']:.1f}) | {verdict} | {est:.2f} [{low:.2f}, {high:.2f}] "
            f"| {' / '.join(_pct(p['audit']) for p in band)} | {_yes(ok)} |"
        )
    lines += ["", f"Audit inside its band at the fresh variants' f: {inside} of {len(rows)}."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session", type=Path, required=True, help="this bench's folder")
    parser.add_argument("--seeds", default="11,12", help="base rounds, one per seed")
    parser.add_argument("--doses", default="100,0,50,25,75", help="harmful shares, percent")
    parser.add_argument("--languages", default="javascript,java")
    parser.add_argument("--rows", type=int, default=16, help="training rows per candidate")
    parser.add_argument(
        "--lrs", default=f"{REFERENCE_LR:g}", help="learning rates, each run at every dose"
    )
    parser.add_argument(
        "--family-variants",
        type=int,
        default=3,
        help="fresh variants per audit family for the audit-family truth (0: none)",
    )
    parser.add_argument("--helpful-rows", type=Path, default=None, help="extra verified rows")
    parser.add_argument("--reps", type=int, default=400, help="simulated decisions per point")
    parser.add_argument(
        "--truth-samples",
        type=int,
        default=2,
        help="seeded samples per held-out task and side for the sampled truth (0: greedy only)",
    )
    parser.add_argument("--report-only", action="store_true", help="no new candidate")
    args = parser.parse_args()
    started = time.time()
    work = args.session.resolve()
    extra = []
    if args.helpful_rows:
        text = args.helpful_rows.read_text(encoding="utf-8")
        extra = [json.loads(line) for line in text.splitlines() if line]
    languages = args.languages.split(",")
    doses = [int(d) for d in args.doses.split(",")]
    learning_rates = [float(lr) for lr in args.lrs.split(",")]
    if not args.report_only:
        shared = {seed: base_round(work, languages, int(seed)) for seed in args.seeds.split(",")}
        first = next(iter(shared.values())).config
        held = decisions.Heldout(work / "heldout", first)
        families = {
            seed: family_tasks(r.config, args.family_variants) for seed, r in shared.items()
        }
        for lr in learning_rates:
            for dose in doses:
                for seed, r in shared.items():
                    decisions.say(f"candidate s{seed} dose {dose}% lr {lr:g}")
                    run_dose(work, r, held, families[seed], dose, lr, args, extra)
    results = [store.read(path) for path in sorted((work / "results").glob("*.json"))]
    for res in results:  # judged before the inputs were recorded
        res.setdefault("inputs", inputs(work / "candidates" / res["name"] / "round-000001"))
        res.setdefault("learning_rate", REFERENCE_LR)
    if not results:
        raise SystemExit(f"{work}: no finished candidate yet")
    lines = [
        f"bench folder {work.name}; preset cpu-demo's guard (gate paired k "
        f"{results[0]['samples']['gate']}, audit paired k {results[0]['samples']['audit']}, "
        f"margin {load_preset('cpu-demo').audit.margin:g}), languages {args.languages}, "
        f"{args.rows} rows per candidate at lr "
        + ", ".join(sorted({f"{r['learning_rate']:g}" for r in results}))
        + "; harmful rows print the public "
        "example's output or the statement. Truth on bench/holdout.py: sampled (the "
        "guard's measure) and greedy.",
        "",
        *report(results, args, (time.time() - started) / 60),
    ]
    print("\n".join(lines))
    record(f"Graded real candidates through the guard, {len(results)} (bench/doses.py)", lines)


if __name__ == "__main__":
    main()
