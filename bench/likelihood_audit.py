"""Design inputs of the likelihood audit: how far real candidates move it (issue 65).

The procedure is fixed in bench/preregistered/likelihood-audit.md (committed before
this ran). Per candidate of graded harm (bench/doses.py's rows: a share of the 16
training rows print the public example's output or the statement, labelled verified;
the rest are the base round's own verified rows), trained from the base model on the
base round of `--seed`, this scores the reference programs the cpu-demo preset's likelihood
audit scores (48 HumanEval-X canonical solutions, 8 problems in each of 6 languages) under the parent (the base model) and the
candidate: the mean per-token log-likelihood of the task's verified reference, through
the package's own scorer (`codeloop/evaluate/likelihood.py`) and decision
(`guard.likelihood_verdict`).

Then, per candidate and margin, P(keep) over 2,000 task sets resampled with
replacement from those (the decision's variability over which tasks the audit holds),
and the margin the preregistered rule picks. Writes bench/data/likelihood-design.json
(the per-task changes, for `codeloop guard rates`) and appends its table to
bench/RESULTS.md.

    .venv/bin/python -m bench.likelihood_audit --session DIR [--seed 3407]
        [--doses 0,50,100] [--lr 1e-3] [--own-lr 1e-4]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import decisions, doses
from bench.results import commit, record
from codeloop.config import AuditConfig, load_preset
from codeloop.evaluate import guard, likelihood
from codeloop.evaluate.suites import suite_tasks

MARGINS = (0.02, 0.05, 0.1, 0.2, 0.3)
"""The preregistered grid of margins, nats per token."""
BOOTSTRAP = 2000
DESIGN = Path(__file__).with_name("data") / "likelihood-design.json"


def audit_set() -> list:
    """The reference programs the cpu-demo preset's likelihood audit scores
    (`likelihood.select`, as the audit phase chooses them)."""
    config = load_preset("cpu-demo")
    own = [t for name in config.audit.suites for t in suite_tasks(config, name)]
    return likelihood.select(config, own)


def candidate(shared, work: Path, dose: int, lr: float) -> Path:
    """The trained adapter of one dose (trained once; kept in `work`)."""
    folder = work / f"dose{dose}-lr{lr:g}"
    if not folder.exists():
        doses.make_dose(shared, folder, dose, 16, lr, [])
    adapter = folder / "round-000001" / "adapter"
    if not (adapter / "adapter_model.safetensors").exists():
        decisions.say(f"{folder.name}: train")
        decisions.run_phase(folder, "train")
    return adapter


def keep_rates(
    changes: np.ndarray, rng: np.random.Generator, margins: tuple[float, ...] = MARGINS
) -> dict[str, float]:
    """P(keep) per margin over task sets resampled from `changes` (the decision code's
    own verdict on each resampled set)."""
    ids = [f"t{i}" for i in range(len(changes))]
    rates = {}
    for margin in margins:
        rule = AuditConfig(rule="likelihood", margin=margin, suites=["curriculum-test"])
        kept = 0
        for _ in range(BOOTSTRAP):
            pick = rng.integers(0, len(changes), len(changes))
            scores = {
                "parent": {i: 0.0 for i in ids},
                "candidate": {i: float(changes[j]) for i, j in zip(ids, pick, strict=True)},
            }
            kept += guard.likelihood_verdict(rule, scores, ids)[0]
        rates[str(margin)] = kept / BOOTSTRAP
    return rates


def chosen_margin(rows: list[dict[str, Any]]) -> float | None:
    """The preregistered rule: the smallest margin at which every dose-0 candidate is kept
    with probability >= 90% (None: no margin qualifies)."""
    neutral = [row for row in rows if row["dose"] == 0]
    for margin in MARGINS:
        if all(row["keep"][str(margin)] >= 0.9 for row in neutral):
            return margin
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--session", type=Path, required=True, help="this bench's folder")
    parser.add_argument("--seed", type=int, default=3407)
    parser.add_argument("--doses", default="0,50,100")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--own-lr", type=float, default=1e-4, help="dose 0 at the preset's lr")
    args = parser.parse_args()
    started = time.monotonic()
    work = args.session.resolve()
    work.mkdir(parents=True, exist_ok=True)
    shared = doses.base_round(work, ["javascript", "java"], args.seed)
    if not shared.path("baseline.json").exists():  # train follows baseline in a round
        decisions.run_phase(shared.session.root, "baseline")
    plan = [(int(d), args.lr) for d in args.doses.split(",")] + [(0, args.own_lr)]
    tasks = audit_set()
    config = shared.config
    base = config.train.base_model or config.engine.model
    parent = likelihood.score_tasks(base, None, config.engine.precision, tasks)
    ids = [task.id for task in tasks]
    rows = []
    rng = np.random.default_rng(args.seed)
    for dose, lr in plan:
        adapter = candidate(shared, work, dose, lr)
        scores = likelihood.score_tasks(base, str(adapter), config.engine.precision, tasks)
        changes = np.array([scores[i] - parent[i] for i in ids])
        rows.append(
            {
                "dose": dose,
                "lr": lr,
                "change": float(changes.mean()),
                "sd": float(changes.std(ddof=1)),
                "changes": changes.tolist(),
                "keep": keep_rates(changes, rng),
            }
        )
        decisions.say(f"dose {dose} lr {lr:g}: mean change {changes.mean():+.4f} nats/token")
    margin = chosen_margin(rows)
    head = "| dose | lr | mean change (nats/token) | sd over tasks | " + " | ".join(
        f"P(keep) m {m}" for m in MARGINS
    )
    lines = [head + " |", "|" + "---|" * (4 + len(MARGINS))]
    for row in rows:
        keep = " | ".join(f"{100 * row['keep'][str(m)]:.0f}%" for m in MARGINS)
        lines.append(
            f"| {row['dose']}% | {row['lr']:g} | {row['change']:+.4f} | {row['sd']:.4f} | {keep} |"
        )
    lines.append("")
    lines.append(
        f"{len(ids)} audit tasks, parent = base model, base round seed {args.seed}; "
        f"P(keep) over {BOOTSTRAP} resampled task sets. Margin by the preregistered rule: "
        f"{margin if margin is not None else 'none qualifies'}."
    )
    DESIGN.write_text(
        json.dumps(
            {"commit": commit(), "seed": args.seed, "margin": margin, "tasks": ids, "rows": rows},
            indent=1,
        )
        + "\n"
    )
    lines.append(f"Took {(time.monotonic() - started) / 60:.1f} minutes.")
    record("Likelihood audit: design candidates (bench/likelihood_audit.py)", lines)


if __name__ == "__main__":
    main()
