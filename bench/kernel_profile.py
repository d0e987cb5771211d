"""Where a llama.cpp call's CPU time goes, kernel by kernel: Linux perf's samples.

bench/engines.py --profile records one more warm call of each llamacpp row under
`perf record -e cpu-clock` (a software clock, so it works where hardware counters are
not offered, as in this machine's VM) attached to the worker's own process, after the
timed calls, so the timed rates are not perturbed. The samples are grouped by what the
kernels do, so that rows with other weight types, an adapter or other builds compare:

- matrix products: ggml's per-row dot products (`ggml_vec_dot_<weights>_<activations>`),
  llamafile's tiled sgemm (`tinyBLAS*`), the repacked kernels (`ggml_gemm_*`,
  `ggml_gemv_*`) and the loop that hands them their rows (`ggml_compute_forward_mul_mat`);
- attention (`*flash_attn*`);
- q8_0 conversions: activations quantized for the products, q8_0 KV cells and
  embedding rows dequantized (`quantize_row_*`, `dequantize_row_*`);
- OpenMP: libgomp, where llama.cpp's threads wait for each other between graph nodes;
- the rest: other graph nodes (norms, rope, activations), sampling, Python.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

GROUPS = ("matrix products", "attention", "q8_0 conversions", "OpenMP", "rest")
LINE = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(.+?)\s*$")


def group_of(library: str, symbol: str) -> str:
    """The GROUPS entry a sampled (shared object, symbol) belongs to."""
    products = ("ggml_vec_dot_", "ggml_gemm_", "ggml_gemv_", "ggml_compute_forward_mul_mat")
    if symbol.startswith((*products, "llamafile_sgemm")) or "tinyBLAS" in symbol:
        return "matrix products"
    if "tinygemm_kernel_amx" in symbol:  # ggml's AMX kernels, on CPUs that have AMX
        return "matrix products"
    if "flash_attn" in symbol:
        return "attention"
    if symbol.startswith(("quantize_row_", "dequantize_row_")):
        return "q8_0 conversions"
    if library.startswith("libgomp"):
        return "OpenMP"
    return "rest"


def kernel_name(symbol: str) -> str:
    """A short name for a matrix-product kernel: the dot product's types, or sgemm."""
    if "tinyBLAS" in symbol or symbol.startswith("llamafile_sgemm"):
        return "sgemm"
    amx = re.search(r"tinygemm_kernel_amx<[^,]*,\s*block_(\w+)", symbol)
    if amx:  # named by the weights' type: tinygemm_kernel_amx<block_q8_1, block_q4_1, ...>
        return f"amx_{amx[1]}"
    if "tinygemm_kernel_amx" in symbol:
        return "amx"
    if symbol.startswith("ggml_compute_forward_mul_mat"):
        return "mul_mat loop"
    return symbol.removeprefix("ggml_")


def parse_report(text: str) -> dict[str, Any]:
    """Shares (percent of samples) by group, and the matrix-product kernels by name,
    from `perf report --stdio --sort dso,sym -q`."""
    groups = dict.fromkeys(GROUPS, 0.0)
    kernels: dict[str, float] = {}
    for line in text.splitlines():
        match = LINE.match(line)
        if not match:
            continue
        share, library, symbol = float(match[1]), match[2], match[3]
        group = group_of(library, symbol)
        groups[group] += share
        if group == "matrix products":
            name = kernel_name(symbol)
            kernels[name] = kernels.get(name, 0.0) + share
    return {"groups": groups, "kernels": kernels}


def perf_available() -> str | None:
    """Why `perf record` cannot profile here, or None when it can."""
    if shutil.which("perf") is None:
        return "no `perf` on PATH (Debian: linux-perf)"
    done = subprocess.run(
        ["perf", "record", "-e", "cpu-clock", "-o", os.devnull, "--", "true"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return f"`perf record -e cpu-clock` failed: {done.stderr.strip()[-200:]}"
    return None


def profiled(call: Callable[[], object], scratch: Path, label: str) -> dict[str, Any]:
    """Run `call` with perf sampling this process; its shares by group and kernel."""
    data = scratch / f"{label}.perf"
    recorder = subprocess.Popen(
        ["perf", "record", "-e", "cpu-clock", "-F", "999", "-p", str(os.getpid()), "-o", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # perf attaches to every thread before the call starts
    try:
        call()
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=60)
    report = subprocess.run(
        ["perf", "report", "-i", str(data), "--stdio", "--sort", "dso,sym", "-q"],
        capture_output=True,
        text=True,
        check=True,
    )
    return parse_report(report.stdout)


def cells(profile: dict[str, Any] | None) -> str:
    """Table cells: each group's share, then the two largest matrix-product kernels."""
    if not profile:
        return " - |" * (len(GROUPS) + 1)
    shares = " ".join(f"{profile['groups'][group]:.0f}% |" for group in GROUPS)
    top = sorted(profile["kernels"].items(), key=lambda item: -item[1])[:2]
    return f" {shares} " + ", ".join(f"{name} {share:.0f}%" for name, share in top) + " |"
