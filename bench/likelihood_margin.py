"""The likelihood audit's margin, chosen again over every design run (issue 65).

bench/preregistered/likelihood-audit.md, revision 1 (committed before this ran): the
first validation failed because how far a collapse moves the likelihood varies from one
training run to the next, and the margin had been chosen on one run. So the design data
are now all ten measured candidates: the four of `bench/likelihood_audit.py`
(bench/data/likelihood-design.json, seed 3407) and the six of the first validation
(`bench/likelihood_validation.py`, seeds 11 and 12), whose per-task changes this
rescores from their retained adapters with the same scorer
(`codeloop/evaluate/likelihood.py`), checking each mean against the one the validation
recorded.

Per candidate and margin in {0, 0.005, 0.01, 0.015, 0.02}: P(keep) over 2,000 task sets
resampled with replacement (the preset's decision code on each). The rule: the largest
margin at which every dose-100 run is rejected with probability >= 95% and every dose-0
run is kept with probability >= 90%. Writes the rows (per-task changes, keep rates) to
the preset's design file, codeloop/presets/cpu-demo.likelihood-design.json, which
`codeloop guard rates` and the validation's predictions read, and appends its table to
bench/RESULTS.md.

    .venv/bin/python -m bench.likelihood_margin --validation DIR
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.likelihood_audit import BOOTSTRAP, audit_set, keep_rates
from bench.likelihood_audit import DESIGN as FIRST_DESIGN
from bench.results import commit, record
from codeloop import store
from codeloop.config import load_preset
from codeloop.evaluate import likelihood

MARGINS = (0.0, 0.005, 0.01, 0.015, 0.02)
"""Revision 1's grid of margins, nats per token."""
REJECT_COLLAPSE = 0.95
KEEP_NEUTRAL = 0.90
PRESET_DESIGN = (
    Path(__file__).resolve().parent.parent
    / "codeloop"
    / "presets"
    / "cpu-demo.likelihood-design.json"
)
RESCORE_TOLERANCE = 1e-4
"""How far a rescored mean change may sit from the one the validation recorded (nats
per token): the same weights, scorer and programs give the same numbers up to float
summation order."""


def chosen_margin(rows: list[dict[str, Any]]) -> float | None:
    """Revision 1's rule: the largest margin that rejects every collapse run with
    probability >= 95% and keeps every dose-0 run with probability >= 90%."""
    for margin in sorted(MARGINS, reverse=True):
        key = str(margin)
        collapses = all(1 - r["keep"][key] >= REJECT_COLLAPSE for r in rows if r["dose"] == 100)
        neutral = all(r["keep"][key] >= KEEP_NEUTRAL for r in rows if r["dose"] == 0)
        if collapses and neutral:
            return margin
    return None


def design_rows(ids: list[str]) -> list[dict[str, Any]]:
    """The first design's four candidates (seed 3407), on the same tasks."""
    first = json.loads(FIRST_DESIGN.read_text())
    if first["tasks"] != ids:
        raise SystemExit(f"{FIRST_DESIGN}: its tasks are not the audit's 48 reference programs")
    return [
        {
            "run": f"seed {first['seed']}, design",
            "seed": first["seed"],
            "name": f"dose {row['dose']}% lr {row['lr']:g}",
            **{key: row[key] for key in ("dose", "lr", "change", "sd", "changes")},
        }
        for row in first["rows"]
    ]


def validation_rows(folder: Path, ids: list[str], tasks: list) -> list[dict[str, Any]]:
    """The first validation's candidates, rescored from their adapters against the parent
    scores that run saved."""
    parent = store.read(folder / "parent-scores.json")
    config = load_preset("cpu-demo")
    base = config.train.base_model or config.engine.model
    rows = []
    for path in sorted((folder / "results").glob("s*-dose*-lr*.json")):
        saved = store.read(path)
        seed, dose, lr = saved["seed"], saved["dose"], saved["lr"]
        adapter = folder / f"s{seed}" / f"dose{dose}-lr{lr:g}" / "round-000001" / "adapter"
        scores = likelihood.score_tasks(base, str(adapter), config.engine.precision, tasks)
        changes = np.array([scores[i] - parent[i] for i in ids])
        if abs(changes.mean() - saved["change"]) > RESCORE_TOLERANCE:
            raise SystemExit(
                f"{adapter}: rescored mean {changes.mean():+.6f} is not the recorded "
                f"{saved['change']:+.6f}: the scorer or the weights changed"
            )
        print(f"seed {seed} dose {dose} lr {lr:g}: {changes.mean():+.4f} (recorded "
              f"{saved['change']:+.4f})", flush=True)  # fmt: skip
        rows.append(
            {
                "run": f"seed {seed}, validation 1",
                "seed": seed,
                "name": f"dose {dose}% lr {lr:g}",
                "dose": dose,
                "lr": lr,
                "change": float(changes.mean()),
                "sd": float(changes.std(ddof=1)),
                "changes": changes.tolist(),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--validation", type=Path, required=True,
        help="the first validation's folder (bench/likelihood_validation.py --session)",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=3407)
    args = parser.parse_args()
    started = time.monotonic()
    tasks = audit_set()
    ids = [task.id for task in tasks]
    rows = design_rows(ids) + validation_rows(args.validation.resolve(), ids, tasks)
    rng = np.random.default_rng(args.seed)
    for row in rows:
        row["keep"] = keep_rates(np.asarray(row["changes"]), rng, MARGINS)
    margin = chosen_margin(rows)
    head = "| run | dose | lr | mean change (nats/token) | " + " | ".join(
        f"P(keep) m {m:g}" for m in MARGINS
    )
    lines = [head + " |", "|" + "---|" * (4 + len(MARGINS))]
    for row in rows:
        keep = " | ".join(f"{100 * row['keep'][str(m)]:.1f}%" for m in MARGINS)
        lines.append(
            f"| {row['run']} | {row['dose']}% | {row['lr']:g} | {row['change']:+.4f} | {keep} |"
        )
    lines += [
        "",
        f"{len(ids)} audit tasks, parent = base model; P(keep) over {BOOTSTRAP} resampled "
        "task sets. Revision 1's rule (bench/preregistered/likelihood-audit.md): the largest "
        f"margin rejecting every dose-100 run with >= {REJECT_COLLAPSE:.0%} and keeping every "
        f"dose-0 run with >= {KEEP_NEUTRAL:.0%}: "
        f"**{'none qualifies' if margin is None else f'{margin:g}'}**.",
    ]
    source = (
        f"bench/likelihood_margin.py at {commit()}: per-task changes (candidate - parent, "
        "nats per token) of real candidates trained on bench/doses.py's rows (seed 3407's "
        "design, seeds 11 and 12's first validation), on the preset's 48 reference programs; "
        "margin chosen by bench/preregistered/likelihood-audit.md, revision 1"
    )
    PRESET_DESIGN.write_text(
        json.dumps({"source": source, "margin": margin, "tasks": ids, "rows": rows}, indent=1)
        + "\n"
    )
    lines.append(f"Took {(time.monotonic() - started) / 60:.1f} minutes.")
    record("Likelihood audit: margin over every design run (bench/likelihood_margin.py)", lines)


if __name__ == "__main__":
    main()
