"""Reproducible math for training: MKL's strict branch and fixed thread counts.

A resumed round must train to the same adapter as an uninterrupted one (the chaos test
compares their sha256), which needs MKL settings fixed before torch loads it. They are
process-wide, so only the entry points that train set them (`codeloop.cli.main`,
`trainer.run`, the test suite's conftest), never an import of the package.
"""

from __future__ import annotations

import os


def mkl_branch() -> str:
    """MKL's strict reproducibility mode for this CPU (`MKL_CBWR`), or plain AUTO.

    A resumed round must train to the same weights as an uninterrupted one (the chaos
    test compares the adapters' sha256). In MKL's ordinary reproducibility mode
    (AUTO) a matrix product may round by the memory alignment of its inputs, so a
    process that resumed from a checkpoint could round differently: resuming the
    chaos fixture's training from its first checkpoint gave an adapter a few ulps off
    the uninterrupted one, every time, and from later checkpoints the same one. The
    strict mode makes ?gemm independent of alignment and thread count, but only on an
    explicit AVX2 or AVX-512 branch, so we name the one this CPU has.
    """
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            first_cpu = cpuinfo.read().split("\n\n", 1)[0]
    except OSError:
        return "AUTO"
    pairs = (line.split(":", 1) for line in first_cpu.splitlines() if ":" in line)
    fields = {key.strip(): value.split() for key, value in pairs}
    flags = set(fields.get("flags", []))
    if fields.get("vendor_id") != ["GenuineIntel"]:
        return "AUTO"  # MKL's named branches are Intel's; elsewhere as before
    if {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "AVX512,STRICT"
    if "avx2" in flags:
        return "AVX2,STRICT"
    return "AUTO"


def use_reproducible_math() -> None:
    """Set MKL's strict branch and fixed thread counts in this process's environment,
    where the user has not set them. Called by the entry points that train (the CLI,
    `trainer.run`) before torch loads MKL; a library import never calls it, so
    `import codeloop` in a user's own script leaves its environment as it was."""
    if "MKL_CBWR" not in os.environ:
        os.environ["MKL_CBWR"] = mkl_branch()
    for name, value in (("MKL_DYNAMIC", "FALSE"), ("OMP_DYNAMIC", "FALSE")):
        os.environ.setdefault(name, value)
