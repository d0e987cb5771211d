"""The likelihood audit's preregistered validation, on new candidates (issue 65).

bench/preregistered/likelihood-audit.md fixed it before the margin was chosen: base
rounds of seeds 11 and 12 (javascript and java, as bench/doses.py), candidates at
harmful doses 0, 50 and 100% at learning rate 1e-3, each trained from the base model on
16 rows of its round. Its revision 1 (after that failed) runs seeds 13 and 14 with
`--plan 0@0.001,100@0.001,0@0.0001`, against the margin bench/likelihood_margin.py picked. Each is scored on the cpu-demo preset's 48 reference programs
against the parent (the base model) and judged by the preset's own rule
(`guard.likelihood_verdict`, margin 0.02).

- Statistic 1 (calibration): each candidate's predicted P(keep) is the task bootstrap
  of the design measurement of its dose (`codeloop/presets/cpu-demo.likelihood-design.json`,
  `operating.likelihood_rate`); the observed number kept is set against its
  Poisson-binomial distribution, and a two-sided tail probability below 0.05 fails.
- Statistic 2 (sees a loss): every dose-100 candidate must be rejected.
- For each, the table says whether the other outcome would also have passed.
- Truth beside it: greedy held-out pass@1 on the clean set (bench/decisions.py's
  Heldout, both languages), parent and candidate. The preregistration named the sampled
  rate (2 per task); the greedy one is what fitted the session (`--truth none` skips it).

    .venv/bin/python -m bench.likelihood_validation --session DIR [--seeds 11,12] [--plan ...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import decisions, doses
from bench.likelihood_audit import audit_set, candidate
from bench.results import record
from codeloop import store
from codeloop.config import SessionConfig, load_preset
from codeloop.evaluate import guard, likelihood, operating

LANGUAGES = ["javascript", "java"]
REPS = 2000


def poisson_binomial(probabilities: list[float]) -> np.ndarray:
    """P(X = k) for k = 0..n, X the number of successes of independent trials."""
    pmf = np.array([1.0])
    for p in probabilities:
        pmf = np.convolve(pmf, [1 - p, p])
    return pmf


def two_sided(pmf: np.ndarray, observed: int) -> float:
    """Twice the smaller tail at `observed`, at most 1."""
    return float(min(1.0, 2 * min(pmf[: observed + 1].sum(), pmf[observed:].sum())))


def predicted_keep(config: SessionConfig, dose: int, lr: float, seed: int) -> float:
    """P(keep) of a candidate of this dose and lr: the mean over the design runs of that
    dose and lr of their keep rates, each run's task set resampled (revision 1: the
    spread between training runs enters through the several runs)."""
    design = operating._inputs("cpu-demo", "cpu-demo.likelihood-design.json")
    rows = [r for r in design["rows"] if r["dose"] == dose and r["lr"] == lr]
    if not rows:
        raise SystemExit(f"no design run of dose {dose}% at lr {lr:g} to predict from")
    rates = [operating.likelihood_rate(config, r["changes"], REPS, seed) / REPS for r in rows]
    return float(np.mean(rates))


def judge(
    config: SessionConfig, parent: dict[str, float], adapter: Path, tasks: list
) -> dict[str, Any]:
    """The preset's audit rule on one candidate's scores against the parent's."""
    base = config.train.base_model or config.engine.model
    scores = likelihood.score_tasks(base, str(adapter), config.engine.precision, tasks)
    ids = [task.id for task in tasks]
    kept, evidence = guard.likelihood_verdict(
        config.audit, {"parent": parent, "candidate": scores}, ids
    )
    changes = np.array([scores[i] - parent[i] for i in ids])
    return {
        "kept": bool(kept),
        "change": float(changes.mean()),
        "changes": changes.tolist(),
        "evidence": evidence,
    }


def run_seed(
    work: Path, seed: int, plan: list[tuple[int, float]], parent: dict[str, float], truth
) -> list[dict[str, Any]]:
    """Every dose of one base round, each result kept in `work` (resumable)."""
    config = load_preset("cpu-demo")
    tasks = audit_set()
    folder = work / f"s{seed}"
    shared = doses.base_round(folder, LANGUAGES, seed)
    if not shared.path("baseline.json").exists():  # train follows baseline in a round
        decisions.run_phase(shared.session.root, "baseline")
    rows = []
    for dose, lr in plan:
        path = work / "results" / f"s{seed}-dose{dose}-lr{lr:g}.json"
        saved = store.read(path, None)
        if saved is None:
            adapter = candidate(shared, folder, dose, lr)
            saved = {"seed": seed, "dose": dose, "lr": lr, **judge(config, parent, adapter, tasks)}
            saved["predicted"] = predicted_keep(config, dose, lr, seed)
            if truth is not None:
                saved["heldout"] = truth.score(truth.verdicts(None), truth.verdicts(adapter))
            store.write_json(path, saved)
        decisions.say(
            f"s{seed} dose {dose}% lr {lr:g}: kept {saved['kept']}, {saved['change']:+.4f}"
        )
        rows.append(saved)
    return rows


def statistics(rows: list[dict[str, Any]]) -> list[str]:
    """Both preregistered statistics, and whether the other outcome would have passed."""
    pmf = poisson_binomial([row["predicted"] for row in rows])
    observed = sum(row["kept"] for row in rows)
    p = two_sided(pmf, observed)
    passing = [k for k in range(len(pmf)) if two_sided(pmf, k) >= 0.05]
    lines = [
        f"- Statistic 1 (calibration): {observed} of {len(rows)} kept, expected "
        f"{sum(r['predicted'] for r in rows):.2f}; two-sided Poisson-binomial P = {p:.3f}: "
        f"**{'pass' if p >= 0.05 else 'FAIL'}**. Counts that would have passed: "
        f"{passing} (of 0..{len(rows)}): the check "
        f"{'could' if len(passing) < len(pmf) else 'could not'} have failed.",
    ]
    collapses = [row for row in rows if row["dose"] == 100]
    kept = [row for row in collapses if row["kept"]]
    lines.append(
        f"- Statistic 2 (sees a loss): {len(collapses) - len(kept)} of {len(collapses)} "
        f"dose-100 candidates rejected: **{'pass' if not kept else 'FAIL'}**. Had one "
        "been kept, it would have failed."
    )
    return lines


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| seed | dose | lr | mean change (nats/token) | lower bound | kept | predicted P(keep) "
        "| held-out greedy pass@1, parent -> candidate |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        held = row.get("heldout")
        truth = f"{held['before']} -> {held['after']} of {held['total']}" if held else "-"
        bound = (row.get("evidence") or {}).get("lower_bound")
        lines.append(
            f"| {row['seed']} | {row['dose']}% | {row['lr']:g} | {row['change']:+.4f} | "
            f"{'-' if bound is None else f'{bound:+.4f}'} | {'yes' if row['kept'] else 'no'} "
            f"| {100 * row['predicted']:.1f}% | {truth} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--session", type=Path, required=True, help="this bench's folder")
    parser.add_argument("--seeds", default="11,12")
    parser.add_argument(
        "--plan", default="0@0.001,50@0.001,100@0.001",
        help="the candidates of each seed, DOSE@LR (revision 1: 0@0.001,100@0.001,0@0.0001)",
    )  # fmt: skip
    parser.add_argument("--truth", choices=("greedy", "none"), default="greedy")
    args = parser.parse_args()
    started = time.monotonic()
    work = args.session.resolve()
    work.mkdir(parents=True, exist_ok=True)
    config = load_preset("cpu-demo")
    tasks = audit_set()
    parent_file = work / "parent-scores.json"
    parent = store.read(parent_file, None)
    if parent is None:
        base = config.train.base_model or config.engine.model
        parent = likelihood.score_tasks(base, None, config.engine.precision, tasks)
        store.write_json(parent_file, parent)
    seeds = [int(s) for s in args.seeds.split(",")]
    truth = None
    if args.truth == "greedy":
        truth = decisions.Heldout(work / "heldout", doses.base_config(LANGUAGES, seeds[0]))
    plan = [(int(d), float(lr)) for d, lr in (part.split("@") for part in args.plan.split(","))]
    rows = [row for seed in seeds for row in run_seed(work, seed, plan, parent, truth)]
    lines = [
        f"Preset cpu-demo's likelihood audit (margin {config.audit.margin:g}, "
        f"{len(tasks)} reference programs), parent = base model; candidates trained on 16 "
        f"rows of each base round ({', '.join(LANGUAGES)}), plan {args.plan} (dose@lr), "
        f"seeds {args.seeds}. Procedure: bench/preregistered/likelihood-audit.md.",
        "",
        *table(rows),
        "",
        *statistics(rows),
        f"- Took {(time.monotonic() - started) / 60:.1f} minutes.",
    ]
    record("Likelihood audit: preregistered validation (bench/likelihood_validation.py)", lines)


if __name__ == "__main__":
    main()
