"""Write a PEFT LoRA adapter as a llama.cpp LoRA GGUF, so the llamacpp engine can use it.

llama.cpp stores a Llama's Q and K projections with their rows permuted for its
rotary layout (transformers undoes this when it loads a GGUF). A LoRA delta
B @ A lands on those rows, so B of q_proj and k_proj is permuted the same way; A
is untouched. The scale is alpha / rank on both sides. Converted files are cached
by the adapter's sha256, so switching adapters costs one conversion per adapter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeloop.errors import EngineError

_MODULES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
_PEFT_KEY = re.compile(
    r"^(?:base_model\.model\.)?model\.layers\.(\d+)\.(\w+\.\w+)\.lora_([AB])(?:\.\w+)?\.weight$"
)


def _permute(weights, heads: int):  # numpy array [out, r]
    """llama.cpp's row permutation of Q/K projections (convert_hf_to_gguf's `permute`)."""
    rows = weights.shape[0]
    return (
        weights.reshape(heads, 2, rows // heads // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def metadata(value: Callable[[str], Any], source: str | Path) -> dict[str, int | str]:
    """Architecture and head counts of a base model, `value(key)` reading its GGUF keys."""
    arch = str(value("general.architecture"))
    if arch != "llama":
        raise EngineError(f"{source}: LoRA conversion supports llama models, not {arch}")
    return {
        "arch": arch,
        "heads": int(value("llama.attention.head_count")),
        "kv_heads": int(value("llama.attention.head_count_kv")),
    }


def base_metadata(base_gguf: str | Path) -> dict[str, int | str]:
    """`metadata` of the base GGUF file, read with gguf's reader."""
    import gguf

    reader = gguf.GGUFReader(str(base_gguf))

    def value(key: str) -> Any:
        field = reader.get_field(key)
        if field is None:
            raise EngineError(f"{base_gguf}: no {key} in its metadata")
        return field.contents()

    return metadata(value, base_gguf)


def convert(
    adapter: str | Path,
    base_gguf: str | Path,
    target: str | Path,
    meta: dict[str, int | str] | None = None,
) -> Path:
    """Write `adapter` (a PEFT folder) as a LoRA GGUF for `base_gguf` at `target`.

    `meta`: the base's `base_metadata`, when the caller already has it (gguf's reader
    pages the whole base file in, about 160 MiB at peak for SmolLM2, where an engine
    that loaded the model can read the same values from llama.cpp).
    """
    import gguf
    import numpy as np

    folder = Path(adapter)
    config = json.loads((folder / "adapter_config.json").read_text())
    meta = meta or base_metadata(base_gguf)
    out = gguf.GGUFWriter(str(target), arch=str(meta["arch"]))
    out.add_type(gguf.GGUFType.ADAPTER)
    out.add_string(gguf.Keys.Adapter.TYPE, "lora")
    out.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(config["lora_alpha"]))
    for name, (a, b) in sorted(lora_pairs(folder, meta).items()):
        out.add_tensor(f"{name}.lora_a", np.ascontiguousarray(a))
        out.add_tensor(f"{name}.lora_b", np.ascontiguousarray(b))
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()
    return Path(target)


def lora_pairs(adapter: str | Path, meta: dict[str, int | str]) -> dict[str, tuple[Any, Any]]:
    """(A, B) in float32 of each base tensor `adapter` (a PEFT folder) changes, keyed by
    the tensor's llama.cpp name (`blk.3.attn_q.weight`), B's rows already in llama.cpp's
    layout; the delta of a weight is `alpha / rank * B @ A`, its rank A's row count."""
    import numpy as np
    from safetensors.numpy import load_file

    folder = Path(adapter)
    config = json.loads((folder / "adapter_config.json").read_text())
    if config.get("use_rslora") or config.get("use_dora"):
        raise EngineError(f"{folder}: rsLoRA/DoRA adapters cannot be converted for llama.cpp")
    tensors = load_file(str(folder / "adapter_model.safetensors"))
    sides: dict[str, dict[str, Any]] = {}
    for key in sorted(tensors):
        match = _PEFT_KEY.match(key)
        if not match or match.group(2) not in _MODULES:
            raise EngineError(f"{folder}: cannot map adapter tensor {key} to llama.cpp")
        layer, module, side = int(match.group(1)), match.group(2), match.group(3)
        data = tensors[key].astype(np.float32)
        if side == "B" and module == "self_attn.q_proj":
            data = _permute(data, int(meta["heads"]))
        elif side == "B" and module == "self_attn.k_proj":
            data = _permute(data, int(meta["kv_heads"]))
        sides.setdefault(f"blk.{layer}.{_MODULES[module]}.weight", {})[side] = data
    if not sides:
        raise EngineError(f"{folder}: the adapter has no LoRA tensors")
    unpaired = sorted(name for name, pair in sides.items() if set(pair) != {"A", "B"})
    if unpaired:
        raise EngineError(f"{folder}: LoRA tensors without their other half: {unpaired[:3]}")
    return {name: (pair["A"], pair["B"]) for name, pair in sides.items()}


def lora_alpha(adapter: str | Path) -> float:
    """A PEFT adapter's alpha: a weight's delta is `alpha / rank * B @ A`."""
    return float(json.loads((Path(adapter) / "adapter_config.json").read_text())["lora_alpha"])
