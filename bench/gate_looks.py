"""The sequential gate's efficacy bound, chosen by the preregistered rule (issue 65).

bench/preregistered/likelihood-audit.md fixed the rule before this ran: among
efficacy_z in {1.645, 1.8, 1.95, 2.1, 2.25}, with looks at 2, 4 and 8 samples per side
and a futility bound of z < 0 at the interim looks, the smallest whose simulated
P(promising | neutral) has its 95% Wilson upper end at most 10% on every profile of
codeloop/presets/cpu-demo.gate-profile.json. Each rate drives the project's own
decision code (`codeloop/evaluate/operating.py`, `guard.gate_verdict`). Then, at the
chosen bound, P(promising) at +5 and +10 points and the samples per side it spends.

    .venv/bin/python -m bench.gate_looks [--reps 2000]
"""

from __future__ import annotations

import argparse
import json
import time

from bench.results import record
from codeloop.config import load_preset, validate
from codeloop.evaluate import operating

BOUNDS = (1.645, 1.8, 1.95, 2.1, 2.25)


def preset_with(efficacy_z: float):
    data = load_preset("cpu-demo").model_dump(mode="json", by_alias=True, exclude_none=True)
    data["gate"].update(
        rule="paired", confirm_samples=8, looks=[2, 4, 8], efficacy_z=efficacy_z, futility_z=0.0
    )
    return validate(data, "bench/gate_looks.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    started = time.monotonic()
    profiles = json.loads(
        (operating.claims_path("cpu-demo").parent / "cpu-demo.gate-profile.json").read_text()
    )["profiles"]
    lines = ["| efficacy_z | profile | effect | P(promising) [95%] | samples per side |"]
    lines.append("|---|---|---|---|---|")
    chosen = None
    for bound in BOUNDS:
        config = preset_with(bound)
        worst = 0.0
        for number, profile in enumerate(profiles):
            hits, spent = operating.gate_rate(config, profile, 0.0, args.reps, 100 + number)
            low, high = operating.wilson(hits, args.reps)
            worst = max(worst, high)
            lines.append(
                f"| {bound} | {profile['name']} | neutral | {100 * hits / args.reps:.1f}% "
                f"[{100 * low:.1f}, {100 * high:.1f}] | {spent:.2f} |"
            )
        if worst <= 0.10:
            chosen = bound
            break
    if chosen is not None:
        config = preset_with(chosen)
        for points in (5.0, 10.0):
            for number, profile in enumerate(profiles):
                hits, spent = operating.gate_rate(config, profile, points, args.reps, 200 + number)
                low, high = operating.wilson(hits, args.reps)
                lines.append(
                    f"| {chosen} | {profile['name']} | +{points:g} points | "
                    f"{100 * hits / args.reps:.1f}% [{100 * low:.1f}, {100 * high:.1f}] | "
                    f"{spent:.2f} |"
                )
    lines.append("")
    lines.append(
        f"{args.reps} simulated decisions per row; the preregistered rule picks efficacy_z = "
        f"{chosen if chosen is not None else 'none (no bound holds 10%)'}. "
        f"Took {(time.monotonic() - started) / 60:.1f} minutes."
    )
    record("Sequential gate: the efficacy bound (bench/gate_looks.py)", lines)


if __name__ == "__main__":
    main()
