"""A GGUF's weights re-typed for this CPU, with a round's LoRA adapter merged in.

The bundled SmolLM2 ships as Q4_1, a type llama.cpp has no repacked x86 kernels for;
other types may decode faster on the CPU at hand, and Q8_0 holds Q4_1's values almost
exactly (bench/engines.py --merged compares them, answers and speed). A LoRA adapter
applied at run time costs every token its extra matmuls; merged into the weights it
costs nothing after the merge.

`prepared_gguf` writes both as one file: every weight dequantized (gguf's reader), the
adapter's `scale * B @ A` added where it applies, written as F16 and quantized to the
asked type by llama.cpp's own quantizer (`llama_model_quantize`). Files are cached by
the base's and the adapter's sha256 and the type, so a candidate is merged once.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from codeloop.engines.lora_gguf import base_metadata, lora_alpha, lora_pairs
from codeloop.errors import EngineError
from codeloop.paths import cache_root
from codeloop.store import sha256_file

WEIGHT_TYPES: dict[str, int] = {"f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 8, "q8_0": 7}
"""Weight types `engine.weights` may name, and llama.cpp's `LLAMA_FTYPE_MOSTLY_*` for
each (llama.h)."""

MERGED_DEFAULT = "q8_0"
"""The type of a merged file when `engine.weights` names none: it holds Q4_1's values
almost exactly."""


def weight_type(weights: str | None, merge_adapter: bool) -> str | None:
    """The type an engine loads: `weights`, else MERGED_DEFAULT when adapters are merged
    (so that the base and every merged candidate share one type), else the file's own."""
    return weights or (MERGED_DEFAULT if merge_adapter else None)


def prepared_gguf(
    base: str | Path,
    weights: str | None,
    adapter: str | Path | None = None,
    adapter_hash: str | None = None,
    *,
    base_hash: str | None = None,
    apart: bool = False,
) -> Path:
    """`base` with `adapter` merged into its weights and every weight as `weights`
    (None: the base file itself when there is no adapter, else MERGED_DEFAULT), cached
    by the two sha256s (`base_hash`, `adapter_hash`: when the caller has them). `apart`:
    build it in a process of its own, so that the dequantized copy (several hundred
    MiB) never counts in the caller's peak memory; an engine asks for that."""
    if weights is None and adapter is None:
        return Path(base)
    kind = weights or MERGED_DEFAULT
    if kind not in WEIGHT_TYPES:
        raise EngineError(f"engine.weights: {kind!r}; one of {', '.join(WEIGHT_TYPES)}")
    if adapter is not None and adapter_hash is None:
        from codeloop.engines.base import adapter_sha256

        adapter_hash = adapter_sha256(adapter)
    base_hash = base_hash or sha256_file(Path(base))
    name = f"{Path(base).stem}-{base_hash[:16]}-{kind}"
    name += f"-lora-{adapter_hash[:16]}" if adapter_hash else ""
    target = cache_root() / "gguf-weights" / f"{name}.gguf"
    if target.is_file():
        return target
    if apart:
        command = [sys.executable, "-m", "codeloop.engines.gguf_weights", str(base), kind]
        command += [str(adapter), adapter_hash or ""] if adapter is not None else []
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0 or not target.is_file():
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise EngineError(f"building {target.name} failed: {last}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".merge-") as scratch:
        dense = Path(scratch) / "f16.gguf"
        write_dense(Path(base), dense, adapter)
        typed = Path(scratch) / "typed.gguf"
        quantize(dense, typed, kind)
        os.replace(typed, target)  # whole or not at all, as another process may race
    return target


def write_dense(base: Path, target: Path, adapter: str | Path | None) -> None:
    """`base`'s metadata and tensors at `target`, every quantized 2-D weight as F16 and
    `adapter`'s delta added to the weights it changes (the 1-D norms stay F32)."""
    import gguf
    import numpy as np
    from gguf import GGMLQuantizationType as Types

    reader = gguf.GGUFReader(str(base))
    meta = base_metadata(base)
    pairs = lora_pairs(adapter, meta) if adapter is not None else {}
    alpha = lora_alpha(adapter) if adapter is not None else 0.0
    writer = gguf.GGUFWriter(str(target), str(meta["arch"]))
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name == gguf.Keys.General.ARCHITECTURE:
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)
    merged = set()
    for tensor in reader.tensors:
        data: Any = tensor.data
        if tensor.tensor_type not in (Types.F32, Types.F16):
            data = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        if tensor.name in pairs:
            a, b = pairs[tensor.name]
            # alpha over this tensor's own rank, as llama.cpp scales a run-time LoRA
            data = np.asarray(data, dtype=np.float32) + (alpha / a.shape[0]) * (b @ a)
            merged.add(tensor.name)
        if tensor.tensor_type == Types.F32 and tensor.name not in pairs:
            writer.add_tensor(tensor.name, np.asarray(data), raw_dtype=Types.F32)
        else:
            writer.add_tensor(tensor.name, np.asarray(data, dtype=np.float16), raw_dtype=Types.F16)
    missing = sorted(set(pairs) - merged)
    if missing:
        raise EngineError(f"{adapter}: changes tensors {base} lacks: {missing[:3]}")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def quantize(source: Path, target: Path, kind: str) -> None:
    """llama.cpp's quantizer: `source` (F16) as `kind` at `target`."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = WEIGHT_TYPES[kind]
    params.nthread = max(1, len(os.sched_getaffinity(0)))
    code = llama_cpp.llama_model_quantize(
        str(source).encode(), str(target).encode(), ctypes.byref(params)
    )
    if code != 0 or not target.is_file():
        raise EngineError(f"llama.cpp could not quantize {source} to {kind} (code {code})")


if __name__ == "__main__":  # prepared_gguf(..., apart=True): BASE TYPE [ADAPTER HASH]
    try:
        arguments = sys.argv[1:]
        prepared_gguf(
            arguments[0],
            arguments[1],
            arguments[2] if len(arguments) > 2 else None,
            arguments[3] if len(arguments) > 3 and arguments[3] else None,
        )
    except EngineError as error:
        sys.exit(f"codeloop: {error}")
