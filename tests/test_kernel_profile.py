"""bench/kernel_profile.py: perf's samples of a real llama.cpp call, grouped by kernel.

The grouping is what bench/engines.py --profile reports, so it is checked on a real
recording: the bundled Q4_1 model's products must land in "matrix products" under the
name of ggml's Q4_1 dot product, and Q8_0 weights under llamafile's sgemm where the
build has it (scripts/patch_llama_cpp.py), which a stripped build or a renamed
kernel would break.
"""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp")
from bench import kernel_profile
from codeloop.config import BUNDLED_MODEL, EngineConfig
from codeloop.engines.llamacpp import LlamaCppEngine
from codeloop.recipe import messages

pytestmark = pytest.mark.timeout(300)
PROMPTS = [
    messages({"language": "python", "statement": "Print the sum of 1..n.", "kind": "stdio"}),
    messages({"language": "cpp", "statement": "Print a string reversed.", "kind": "stdio"}),
]


def test_the_report_is_grouped_by_what_the_kernels_do() -> None:
    report = """
    60.00%  libggml-cpu.so.0  [.] ggml_vec_dot_q4_1_q8_1
    10.00%  libggml-cpu.so.0  [.] (anonymous namespace)::tinyBLAS_Q0_AVX<block_q8_0, block_q8_0, float>::gemm<4, 4>(long, long, long, long)
     8.00%  libggml-cpu.so.0  [.] ggml_compute_forward_flash_attn_ext
     5.00%  libggml-base.so.0  [.] dequantize_row_q8_0
     4.00%  libgomp.so.1.0.0  [.] 0x000000000001f7da
     3.00%  libpython3.11.so.1.0  [.] _PyEval_EvalFrameDefault
    """
    profile = kernel_profile.parse_report(report)
    assert profile["groups"] == {
        "matrix products": 70.0,
        "attention": 8.0,
        "q8_0 conversions": 5.0,
        "OpenMP": 4.0,
        "rest": 3.0,
    }
    assert profile["kernels"] == {"vec_dot_q4_1_q8_1": 60.0, "sgemm": 10.0}


def test_amx_kernels_are_matrix_products_named_by_their_weights() -> None:
    report = """
    35.43%  libggml-cpu.so.0  [.] (anonymous namespace)::tinygemm_kernel_amx<block_q8_1, block_q4_1, float, 32, 0>
    19.80%  libggml-cpu.so.0  [.] (anonymous namespace)::tinyBLAS_Q0_AVX<block_q8_0, block_q8_0, float>::gemm4xN<2>
     8.77%  libgomp.so.1.0.0  [.] 0x000000000001f7da
    """  # fmt: skip
    profile = kernel_profile.parse_report(report)
    assert profile["groups"]["matrix products"] == pytest.approx(55.23)
    assert profile["kernels"] == {"amx_q4_1": 35.43, "sgemm": 19.8}


def _has_amx() -> bool:
    """Whether this CPU has AMX: llama.cpp then runs the Q4_1 and Q8_0 weights' products
    in its AMX kernel (ahead of llamafile's sgemm, which keeps the rest)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return " amx_int8" in info.read()
    except OSError:
        return False


@pytest.mark.parametrize(
    "weights, kernel",
    [
        (None, "amx_q4_1" if _has_amx() else "vec_dot_q4_1_q8_1"),
        ("q8_0", "amx_q8_0" if _has_amx() else "sgemm"),
    ],
)
def test_a_real_call_spends_most_of_its_time_in_the_weights_kernel(
    weights, kernel, tmp_path
) -> None:
    why = kernel_profile.perf_available()
    if why:
        pytest.skip(why)
    engine = LlamaCppEngine(
        EngineConfig(kind="llamacpp", model=BUNDLED_MODEL, batch_size=2, weights=weights),
        n_ctx=1024,
        threads=2,
    )
    try:
        engine.generate(PROMPTS, max_tokens=4)  # warm: weights paged in
        profile = kernel_profile.profiled(
            lambda: engine.generate(PROMPTS, max_tokens=48), tmp_path, "call"
        )
    finally:
        engine.close()
    groups, kernels = profile["groups"], profile["kernels"]
    assert max(groups, key=groups.get) == "matrix products", groups
    assert max(kernels, key=kernels.get) == kernel, kernels
