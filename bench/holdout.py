"""The clean held-out test, now in the package: `codeloop.tasks.clean` (64 frozen stdio
problems with their kin labels; `codeloop eval --suite clean` measures any model on it).

This name stays so that the notebook's commands and notes that cite bench/holdout.py
still read; new code imports `codeloop.tasks.clean` itself. Its rule holds as before:
the set is never used for tuning or selection.
"""

from __future__ import annotations

from codeloop.tasks.clean import (
    FAMILY_PREFIX,
    FROZEN_SHA256,
    KIN,
    KIN_SHA256,
    PROBLEMS,
    PROVENANCE_DATASET,
    PROVENANCE_LICENSE,
    RESAMPLES,
    SEED,
    Problem,
    cases,
    current_sha256,
    distinct_solved,
    frozen_view,
    kin_mask,
    kin_names,
    kin_sha256,
    non_kin,
    non_kin_interval,
    paired_interval,
    tasks,
)

__all__ = [
    "FAMILY_PREFIX",
    "FROZEN_SHA256",
    "KIN",
    "KIN_SHA256",
    "PROBLEMS",
    "PROVENANCE_DATASET",
    "PROVENANCE_LICENSE",
    "RESAMPLES",
    "SEED",
    "Problem",
    "cases",
    "current_sha256",
    "distinct_solved",
    "frozen_view",
    "kin_mask",
    "kin_names",
    "kin_sha256",
    "non_kin",
    "non_kin_interval",
    "paired_interval",
    "tasks",
]
