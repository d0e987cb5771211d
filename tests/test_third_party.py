"""Third-party test files, run unchanged against codeloop (tests/third_party/README.md).

verl's own SandboxFusion tests (`test_sandbox_fusion_on_cpu.py`, verl 0.9.1's client)
run in a pytest process of their own, against a real `codeloop serve` that their
folder's conftest starts on loopback: its `check_correctness` scores right answers,
wrong answers, runtime errors, compile errors and timeouts as it does against
SandboxFusion, under its own concurrency. The one test that assumes a bigger machine is
skipped there with the measured reason (`CAPACITY` in that conftest), and counted here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VERL = Path(sys.prefix) / "verl-pkgs"

pytestmark = pytest.mark.timeout(900)


def outcome(summary: str) -> dict[str, int]:
    """pytest's last line as counts: {"passed": 14, "skipped": 1, ...}."""
    return {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|error)", summary)}


@pytest.mark.skipif(not VERL.is_dir(), reason="verl is installed by `make setup-test`")
def test_verl_sandbox_fusion_tests_pass_against_codeloop_serve() -> None:
    env = {**os.environ, "CODELOOP_THIRD_PARTY": "1", "PYTHONPATH": str(VERL)}
    env.pop("SANDBOX_FUSION_URL", None)  # the conftest points it at its own server
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "tests/third_party/verl"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )  # fmt: skip
    tail = done.stdout[-6000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    counts = outcome(done.stdout.strip().splitlines()[-1])
    assert counts.get("passed", 0) == 14, tail
    assert counts.get("skipped", 0) == 1 and "capacity of this machine" in done.stdout, tail
