"""Where the llamacpp engine asks llama.cpp to keep a GGUF's weights (one copy of a
tied embedding on CPUs with AMX), and the header reader that decision rests on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
pytest.importorskip("llama_cpp")

from codeloop.config import BUNDLED_MODEL  # noqa: E402
from codeloop.engines import llamacpp_placement  # noqa: E402
from codeloop.errors import EngineError  # noqa: E402
from codeloop.models import resolve  # noqa: E402

Q8_0 = gguf.GGMLQuantizationType.Q8_0


def test_the_header_reader_agrees_with_gguf_on_the_bundled_model() -> None:
    path = resolve(BUNDLED_MODEL, None).path
    architecture, tensors = llamacpp_placement.read_header(path)
    reader = gguf.GGUFReader(path)
    assert architecture == reader.fields["general.architecture"].contents() == "llama"
    assert tensors == {
        t.name: (t.tensor_type.name, [int(n) for n in t.shape]) for t in reader.tensors
    }
    assert llamacpp_placement.amx_roles(path) == list(llamacpp_placement.ROLES)


def write_model(path: Path, *, architecture: str, tensors: dict[str, tuple[int, int]]) -> Path:
    """A GGUF header with Q8_0 tensors of the given (input, output) widths (zero data)."""
    writer = gguf.GGUFWriter(str(path), architecture)
    for name, (columns, rows) in tensors.items():
        blocks = np.zeros((rows, columns // 32 * 34), dtype=np.uint8)  # 34 bytes per 32
        writer.add_tensor(name, blocks, raw_dtype=Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_only_a_tied_llama_model_with_amx_ready_matrices_is_placed(tmp_path: Path) -> None:
    layer = {
        "token_embd.weight": (64, 128),
        "blk.0.attn_q.weight": (64, 64),
        "blk.1.attn_q.weight": (64, 64),
        "blk.0.ffn_up.weight": (64, 96),
        "blk.1.ffn_up.weight": (64, 80),  # 80 outputs: not a multiple of 32
        "blk.0.ffn_down.weight": (96, 64),
        "blk.1.ffn_down.weight": (96, 64),
    }
    tied = write_model(tmp_path / "tied.gguf", architecture="llama", tensors=layer)
    # Every layer's attn_q and ffn_down can go to AMX; one ffn_up cannot, so no ffn_up
    # is named (llama.cpp aborts on a weight forced onto AMX that AMX refuses).
    assert llamacpp_placement.amx_roles(tied) == ["attn_q", "ffn_down"]
    untied = {**layer, "output.weight": (64, 128)}
    path = write_model(tmp_path / "untied.gguf", architecture="llama", tensors=untied)
    assert llamacpp_placement.amx_roles(path) == []  # nothing would be packed twice
    other = write_model(tmp_path / "other.gguf", architecture="qwen2", tensors=layer)
    assert llamacpp_placement.amx_roles(other) == []


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"GGML" + bytes(60))
    with pytest.raises(EngineError, match="not a GGUF"):
        llamacpp_placement.read_header(bad)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(b"GGUF" + bytes(6))
    with pytest.raises(EngineError, match="ends early"):
        llamacpp_placement.read_header(cut)


LOAD = """
import json, sys
import gguf  # imported by the placement: not what is measured
from pathlib import Path
from codeloop.engines import llamacpp

def anon():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) << 10

from codeloop.config import BUNDLED_MODEL, EngineConfig
before = anon()
engine = llamacpp.LlamaCppEngine(
    EngineConfig(kind="llamacpp", model=BUNDLED_MODEL, batch_size=2),
    n_ctx=256,
    threads=1,
    place_weights=sys.argv[1] == "placed",
)
grown = anon() - before
[[answer]] = engine.generate([[{"role": "user", "content": "Say hi."}]], max_tokens=12)
print(json.dumps({"grown": grown, "text": answer.text, "placed": engine._placement is not None}))
"""


def load_in_a_process(placement: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", LOAD, placement], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(
    "AMX" not in llamacpp_placement._cpu_extra_buffer_types(), reason="no AMX on this CPU"
)
def test_the_tied_embedding_is_kept_once_on_a_cpu_with_amx() -> None:
    """By default llama.cpp packs the embedding a second time for the output
    projection (33 MiB of anonymous memory for SmolLM2-135M); placed, it is not."""
    placed, default = load_in_a_process("placed"), load_in_a_process("default")
    assert placed["placed"] and not default["placed"]
    assert default["grown"] - placed["grown"] > 20 << 20, (default["grown"], placed["grown"])
    assert placed["text"] == default["text"]
