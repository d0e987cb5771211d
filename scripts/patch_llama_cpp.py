"""Patch an unpacked llama-cpp-python sdist before scripts/setup.sh builds it natively.

ggml's AMX matrix kernels (Sapphire Rapids and later Xeons) load their tile
configuration from a struct built on the stack; the compiler drops those stores, and
`ldtilecfg` reads garbage: SIGSEGV in `ggml_backend_amx_mul_mat` at the first batched
matrix product (llama.cpp issue #20824, fixed upstream by PR #26954, not yet in the
vendored copy). The fix is the same constant, placed in read-only data.

    python scripts/patch_llama_cpp.py SDIST_FOLDER

Refuses to build from a tree it does not recognise (neither the old text nor the
patched one), so a version bump is noticed here rather than as a crash.
"""

from __future__ import annotations

import sys
from pathlib import Path

MMQ = "vendor/llama.cpp/ggml/src/ggml-cpu/amx/mmq.cpp"

OLD = """    alignas(64) tile_config_t tc = {};
    tc.palette_id = 1;
    tc.start_row = 0;
    tc.rows[0] = 8;   tc.colsb[0] = 64;
    tc.rows[1] = 8;   tc.colsb[1] = 64;
    tc.rows[2] = 16;  tc.colsb[2] = 32;
    tc.rows[3] = 16;  tc.colsb[3] = 32;
    tc.rows[4] = 16;  tc.colsb[4] = 64;
    tc.rows[5] = 16;  tc.colsb[5] = 64;
    tc.rows[6] = 16;  tc.colsb[6] = 64;
    tc.rows[7] = 16;  tc.colsb[7] = 64;
"""

NEW = """    // codeloop: a constant in read-only data (llama.cpp PR #26954); built on the
    // stack, its stores were dropped and ldtilecfg faulted on garbage.
    alignas(64) static const tile_config_t tc = {
        1, 0, {0},
        {64, 64, 32, 32, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0},
        {8, 8, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0},
    };
"""


def patch(sdist: Path) -> str:
    """Patch `sdist` in place; returns what was done ("patched" or "already patched")."""
    path = sdist / MMQ
    if not path.is_file():
        raise SystemExit(f"patch_llama_cpp: {path} not found; is {sdist} a llama-cpp-python sdist?")
    text = path.read_text()
    if NEW in text:
        return "already patched"
    if text.count(OLD) != 1:
        raise SystemExit(
            f"patch_llama_cpp: {path} does not hold the AMX tile configuration this patch "
            "expects; check whether upstream fixed it (llama.cpp PR #26954) and update "
            "scripts/patch_llama_cpp.py"
        )
    path.write_text(text.replace(OLD, NEW))
    return "patched"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python scripts/patch_llama_cpp.py SDIST_FOLDER")
    print(f"patch_llama_cpp: {patch(Path(sys.argv[1]))} {MMQ}")
