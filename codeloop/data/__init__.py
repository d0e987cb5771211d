"""Benchmark data shipped inside the package, so a clean install evaluates offline.

`humaneval-x/`: HumanEval-X (164 problems x C++, Go, Java, JavaScript, Python,
Rust) from the CodeGeeX repository, commit 2838420b7b4492cf3d16bce5320e26e65960c9e2,
Apache License 2.0 (`humaneval-x/LICENSE`, `humaneval-x/README.md`); the files'
sha256 are in `humaneval-x/SHA256SUMS` and every evaluation records them.
"""

from __future__ import annotations

from pathlib import Path

HUMANEVAL_X = Path(__file__).resolve().parent / "humaneval-x"
"""The shipped HumanEval-X folder (humaneval_<lang>.jsonl.gz)."""
HUB = "hub"
"""The value of a HumanEval-X path or --data-dir that asks for the hub copy instead."""
