"""A preset's stated guard rates are what the simulator computes for it (issue 65).

Each preset states its gate's and audit's error rates in `presets/NAME.claims.toml`;
`evaluate/operating.py` computes every one through the decision code, on the preset's
measured inputs, and a claim holds only when the whole 95% interval of the simulated
rate is on its side. `make demo` prints the same computation (`codeloop guard rates`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.config import preset_names
from codeloop.evaluate import operating


@pytest.mark.parametrize("preset", preset_names())
def test_every_stated_rate_holds_as_computed(preset: str) -> None:
    assert operating.claims_path(preset).is_file(), f"{preset} states no guard rates"
    rates = operating.compute(preset)
    assert rates
    wrong = [
        f"{r.claim}: {r.rate:.3f} [{r.low:.3f}, {r.high:.3f}] {r.bound}"
        for r in rates
        if not r.holds
    ]
    assert not wrong, wrong


def test_a_claim_the_rule_does_not_meet_fails(tmp_path: Path) -> None:
    """The check can fail: the gpu gate's neutral rate stated as at most 1% does not hold
    (alpha is 5%), and its +3-point power stated as at least 99.9% does not either."""
    text = operating.claims_path("gpu").read_text()
    text = text.replace(
        'at_most = 0.08\n\n[[claim]]\nwhat = "gate: P(promising | +3',
        'at_most = 0.01\n\n[[claim]]\nwhat = "gate: P(promising | +3',
    )
    text = text.replace("at_least = 0.80", "at_least = 0.999")
    claims = tmp_path / "gpu.claims.toml"
    claims.write_text(text)
    rates = {r.claim: r for r in operating.compute("gpu", claims)}
    gate = [r for name, r in rates.items() if name.startswith("gate")]
    assert gate and not any(r.holds for r in gate)
    assert all(r.holds for name, r in rates.items() if name.startswith("audit"))


def test_the_command_prints_the_computed_rates(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "codeloop", "guard", "rates", "--preset", "gpu"],
        capture_output=True,
        text=True,
        env={"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    computed = operating.cached("gpu", tmp_path / "codeloop")
    assert all(f"{100 * r.rate:.1f}%" in done.stdout for r in computed)


def test_each_printed_rate_names_its_profile_or_run() -> None:
    """ "[dose 0% lr 0.001, seed 11, validation 1]" is printed as text: Rich once read such
    a case as markup and dropped it, so the rows of one claim's runs read the same."""
    from rich.console import Console

    from codeloop.evaluate.guard_cli import rates_table

    cases = ["dose 100% lr 0.001, seed 12, validation 1", "p 5% flat, rho 0.17"]
    found = [
        operating.Rate(f"audit: P(keep | collapse) [{case}]", "likelihood", 0.02, 0.01, 0.03,
                       "<= 5%", True)
        for case in cases
    ]  # fmt: skip
    console = Console(record=True, width=200)
    console.print(rates_table("cpu-demo", found))
    printed = console.export_text()
    assert all(f"[{case}]" in printed for case in cases), printed
