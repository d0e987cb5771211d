"""The sequential gate's design (looks and efficacy bound), chosen by a preregistered rule.

bench/preregistered/round-time.md fixed the rule before this ran (the earlier rule,
bench/preregistered/likelihood-audit.md, fixed only the bound of looks [2, 4, 8]):
among looks in {[1, 2, 4], [2, 4]} and efficacy_z in {1.645, 1.8, 1.95, 2.1}, with a
futility bound of z < 0 at the interim looks, a design is eligible when its simulated
P(promising | neutral) has its 95% Wilson upper end at most 10% and P(promising | +10
points) its lower end at least 90%, on every profile of
codeloop/presets/cpu-demo.gate-profile.json. The chosen design spends the fewest mean
samples per side under neutral (ties to the larger bound). Every rate drives the
project's own decision code (`codeloop/evaluate/operating.py`, `guard.gate_verdict`);
P(promising | +5 points) is reported beside it.

    .venv/bin/python -m bench.gate_looks [--reps 2000]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass

from bench.results import record
from codeloop.config import SessionConfig, load_preset, validate
from codeloop.evaluate import operating

LOOKS = ([1, 2, 4], [2, 4])
BOUNDS = (1.645, 1.8, 1.95, 2.1)
EFFECTS = (0.0, 10.0, 5.0)


@dataclass
class Outcome:
    """One design's worst case over the profiles, per effect: (rate, low, high, spent)."""

    looks: list[int]
    bound: float
    rows: dict[float, list[tuple[str, float, float, float, float]]]

    def worst_high(self, effect: float) -> float:
        return max(row[3] for row in self.rows[effect])

    def worst_low(self, effect: float) -> float:
        return min(row[2] for row in self.rows[effect])

    def spent(self, effect: float) -> float:
        return max(row[4] for row in self.rows[effect])

    @property
    def eligible(self) -> bool:
        return self.worst_high(0.0) <= 0.10 and self.worst_low(10.0) >= 0.90


def preset_with(looks: list[int], efficacy_z: float) -> SessionConfig:
    data = load_preset("cpu-demo").model_dump(mode="json", by_alias=True, exclude_none=True)
    data["gate"].update(
        rule="paired",
        confirm_samples=looks[-1],
        looks=looks,
        efficacy_z=efficacy_z,
        futility_z=0.0,
    )
    return validate(data, "bench/gate_looks.py")


def simulate(looks: list[int], bound: float, profiles: list[dict], reps: int) -> Outcome:
    """Every profile at every effect, through the decision code."""
    config = preset_with(looks, bound)
    rows: dict[float, list] = {}
    for effect in EFFECTS:
        rows[effect] = []
        for number, profile in enumerate(profiles):
            hits, spent = operating.gate_rate(config, profile, effect, reps, 100 + number)
            low, high = operating.wilson(hits, reps)
            rows[effect].append((profile["name"], hits / reps, low, high, spent))
    return Outcome(looks, bound, rows)


def choose(outcomes: list[Outcome]) -> Outcome | None:
    """The preregistered pick: eligible, fewest samples under neutral, ties to the larger
    bound."""
    eligible = [o for o in outcomes if o.eligible]
    return min(eligible, key=lambda o: (round(o.spent(0.0), 2), -o.bound), default=None)


def table(outcomes: list[Outcome], chosen: Outcome | None) -> list[str]:
    lines = [
        "| looks | efficacy_z | neutral: worst P(promising) [95%] | +10 points: worst "
        "[95%] | +5 points: worst | samples per side (neutral) | eligible |",
        "|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        neutral = max(o.rows[0.0], key=lambda row: row[3])
        gain = min(o.rows[10.0], key=lambda row: row[2])
        small = min(o.rows[5.0], key=lambda row: row[1])
        mark = "**chosen**" if o is chosen else ("yes" if o.eligible else "no")
        lines.append(
            f"| {o.looks} | {o.bound} | {100 * neutral[1]:.1f}% [{100 * neutral[2]:.1f}, "
            f"{100 * neutral[3]:.1f}] | {100 * gain[1]:.1f}% [{100 * gain[2]:.1f}, "
            f"{100 * gain[3]:.1f}] | {100 * small[1]:.1f}% | {o.spent(0.0):.2f} | {mark} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    started = time.monotonic()
    profiles = json.loads(
        (operating.claims_path("cpu-demo").parent / "cpu-demo.gate-profile.json").read_text()
    )["profiles"]
    outcomes = [simulate(looks, b, profiles, args.reps) for looks in LOOKS for b in BOUNDS]
    chosen = choose(outcomes)
    lines = table(outcomes, chosen)
    lines.append("")
    pick = f"looks {chosen.looks}, efficacy_z {chosen.bound}" if chosen else "none eligible"
    lines.append(
        f"{args.reps} simulated decisions per profile and effect, {len(profiles)} profiles; "
        f"'worst' is over the profiles. The preregistered rule picks: {pick}. "
        f"Took {(time.monotonic() - started) / 60:.1f} minutes."
    )
    record("Sequential gate: looks and bound (bench/gate_looks.py)", lines)


if __name__ == "__main__":
    main()
