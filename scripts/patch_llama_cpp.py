"""Patch an unpacked llama-cpp-python sdist before scripts/setup.sh builds it natively.

Two changes, each refused unless the vendored text is the one expected (neither the
old text nor the patched one: a version bump is noticed here rather than as a crash
or a silent change of kernels):

* AMX tile configuration. ggml's AMX matrix kernels (Sapphire Rapids and later Xeons)
  load their tile configuration from a struct built on the stack; the compiler drops
  those stores, and `ldtilecfg` reads garbage: SIGSEGV in `ggml_backend_amx_mul_mat`
  at the first batched matrix product (llama.cpp issue #20824, fixed upstream by PR
  #26954, not yet in the vendored copy). The fix is the same constant, placed in
  read-only data.
* llamafile's sgemm for quantized weights only. Its float32 products (a run-time LoRA
  adapter's matrices) round by the batch's shape, so an adapter's answers changed with
  their batch neighbours, and setup.sh built without it. Its Q8_0 and Q4_0 kernels
  (`tinyBLAS_Q0_AVX`) sum each output's blocks in one order whatever tile computes it,
  and multiply a batch of rows at once where ggml's own path takes one dot product per
  row and weight row: on an AMD EPYC without AMX that was most of a Q8_0 model's time
  (bench/engines.py --profile). The patch keeps sgemm for those two weight types and
  lets every other type fall back to ggml's kernels; `CODELOOP_SGEMM=off` in the
  environment turns it off for the process (bench/engines.py's side-by-side rows).
  ggml already sends a single row (a micro-batch of one token) to its own kernels, so
  codeloop's decoder never multiplies one row alone (llamacpp_batch.py).
* A KV cache of quantized values in host memory is not zeroed when a context is
  made. Zeroing wrote every page of every sequence's stream of cells, so the whole
  cache counted in the process's memory from the start (docs/ENGINES.md has the
  measured sizes), though a stream uses only its prompt's and answer's cells.
  Unzeroed, a page counts once a cell on it is written. Nothing reads a cell's
  values before they are written: quantized values need flash attention, whose CPU
  kernel skips every cell its mask hides (not of the query's sequence, or not yet
  decoded) before reading it. The batch decoder clears only the cells' bookkeeping
  between calls (`llama_memory_clear(memory, False)`) for the same reason. Float16
  caches (bench/kv_cache.py's comparison, without flash attention, where a matrix
  product reads every cell) are zeroed as before.

    python scripts/patch_llama_cpp.py SDIST_FOLDER
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Patch:
    """One text replacement in the vendored llama.cpp: `old` must occur exactly once."""

    path: str
    old: str
    new: str
    upstream: str
    """What to check when the old text is gone (an upstream fix, a moved function)."""


AMX_TILES = Patch(
    path="vendor/llama.cpp/ggml/src/ggml-cpu/amx/mmq.cpp",
    old="""    alignas(64) tile_config_t tc = {};
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
""",
    new="""    // codeloop: a constant in read-only data (llama.cpp PR #26954); built on the
    // stack, its stores were dropped and ldtilecfg faulted on garbage.
    alignas(64) static const tile_config_t tc = {
        1, 0, {0},
        {64, 64, 32, 32, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0},
        {8, 8, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0},
    };
""",
    upstream="whether upstream fixed the AMX tile configuration (llama.cpp PR #26954)",
)

SGEMM_QUANTIZED_ONLY = Patch(
    path="vendor/llama.cpp/ggml/src/ggml-cpu/llamafile/sgemm.cpp",
    old="""    if (Ctype != GGML_TYPE_F32)
        return false;

    switch (Atype) {
""",
    new="""    if (Ctype != GGML_TYPE_F32)
        return false;

    // codeloop: the quantized-weight kernels only (each output sums its blocks in one
    // order whatever the tile); float products stay on ggml's own path.
    // CODELOOP_SGEMM=off in the environment: none (scripts/patch_llama_cpp.py).
    static const bool codeloop_sgemm_off = [] {
        const char * value = getenv("CODELOOP_SGEMM");
        return value != nullptr && strcmp(value, "off") == 0;
    }();
    if (codeloop_sgemm_off || (Atype != GGML_TYPE_Q8_0 && Atype != GGML_TYPE_Q4_0))
        return false;

    switch (Atype) {
""",
    upstream="llamafile_sgemm's opening checks in the vendored sgemm.cpp",
)

KV_PAGES_ON_USE = Patch(
    path="vendor/llama.cpp/src/llama-kv-cache.cpp",
    old="""        ggml_backend_buffer_clear(buf, 0);
        ctxs_bufs.emplace_back(std::move(ctx), buf);
""",
    new="""        // codeloop: a host buffer of quantized values (so flash attention, which
        // skips hidden cells) is not zeroed here: its pages count in the process's
        // memory once cells use them (scripts/patch_llama_cpp.py).
        if (!ggml_backend_buffer_is_host(buf) || !ggml_is_quantized(type_v)) {
            ggml_backend_buffer_clear(buf, 0);
        }
        ctxs_bufs.emplace_back(std::move(ctx), buf);
""",
    upstream="where the vendored llama-kv-cache.cpp allocates its buffers",
)

PATCHES = (AMX_TILES, SGEMM_QUANTIZED_ONLY, KV_PAGES_ON_USE)


def apply(sdist: Path, patch: Patch) -> str:
    """Apply `patch` to `sdist` in place; "patched" or "already patched"."""
    path = sdist / patch.path
    if not path.is_file():
        raise SystemExit(f"patch_llama_cpp: {path} not found; is {sdist} a llama-cpp-python sdist?")
    text = path.read_text()
    if patch.new in text:
        return "already patched"
    if text.count(patch.old) != 1:
        raise SystemExit(
            f"patch_llama_cpp: {path} does not hold the text this patch expects; check "
            f"{patch.upstream} and update scripts/patch_llama_cpp.py"
        )
    path.write_text(text.replace(patch.old, patch.new))
    return "patched"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python scripts/patch_llama_cpp.py SDIST_FOLDER")
    for each in PATCHES:
        print(f"patch_llama_cpp: {apply(Path(sys.argv[1]), each)} {each.path}")
