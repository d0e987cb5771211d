"""Where llama.cpp keeps a GGUF's weights on a CPU with AMX: one copy of a tied embedding.

On a CPU with AMX, llama.cpp copies every weight its AMX kernels can multiply into an
AMX buffer of its own. For a model whose output projection is its token embedding
(SmolLM2: no `output.weight`, the Q8_0 `token_embd.weight` serves both) that means two
copies of the largest tensor: the AMX copy the output projection multiplies with (33
MiB for SmolLM2-135M), and the mapped file's pages the token lookups read, which fault
in as prompts use them. Here the layers' matrices go to AMX explicitly and nothing else
does (llama.cpp's "extra buffer types" off), so the output projection reads the mapped
embedding: one copy for both uses. Measured on the bundled model (bench/engines.py's
llamacpp-packed row): peak RSS 9 MiB lower, greedy answers unchanged, and 15-18% fewer
tokens/s, as the output projection runs on AVX-512 VNNI instead of AMX tiles.

The override names the tensors llama.cpp would have put on AMX anyway, and only for the
llama architecture, whose layer matrices are plain 2-D products: a weight forced onto
AMX for a product its kernels refuse aborts the process (ggml's scheduler asserts), so
every layer matrix of a role must pass the checks of ggml's AMX `supports_op`, or the
model keeps llama.cpp's own placement.
"""

from __future__ import annotations

import ctypes
import struct
from pathlib import Path
from typing import Any

from codeloop.errors import EngineError

ROLES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
"""The llama architecture's layer matrices (each multiplies the hidden states, 2-D)."""
AMX_ALIGNMENT = {"Q4_0": 32, "Q4_1": 32, "Q8_0": 32, "Q4_K": 256, "Q5_K": 256, "Q6_K": 256}
"""Types with AMX kernels, and the multiple their input width must be (ggml-cpu/amx)."""
AMX_ROWS = 32
"""Output width multiple the AMX kernels need (TILE_N * 2)."""


def read_header(path: str | Path) -> tuple[str | None, dict[str, tuple[str, list[int]]]]:
    """(general.architecture, {tensor name: (type name, shape)}) of GGUF `path`.

    Reads the header only, streaming past the metadata values. Not gguf's
    GGUFReader: it builds every metadata array (the vocabulary, the merges) and a
    view of every tensor, which peaked at 210 MiB of RSS and took 2.3 s on the
    bundled model, more than the memory this module saves.
    """
    from gguf import GGMLQuantizationType, GGUFValueType

    scalar = {
        GGUFValueType.UINT8: "B", GGUFValueType.INT8: "b", GGUFValueType.BOOL: "?",
        GGUFValueType.UINT16: "H", GGUFValueType.INT16: "h", GGUFValueType.UINT32: "I",
        GGUFValueType.INT32: "i", GGUFValueType.FLOAT32: "f", GGUFValueType.UINT64: "Q",
        GGUFValueType.INT64: "q", GGUFValueType.FLOAT64: "d",
    }  # fmt: skip
    with open(path, "rb") as file:

        def read(fmt: str) -> Any:
            size = struct.calcsize("<" + fmt)
            data = file.read(size)
            if len(data) != size:
                raise EngineError(f"{path}: the GGUF header ends early")
            return struct.unpack("<" + fmt, data)[0]

        def string() -> bytes:
            return file.read(read("Q"))

        def skip(kind: int) -> None:
            if kind == GGUFValueType.STRING:
                file.seek(read("Q"), 1)
            elif kind == GGUFValueType.ARRAY:
                inner, count = read("I"), read("Q")
                if inner in scalar:
                    file.seek(struct.calcsize("<" + scalar[inner]) * count, 1)
                else:
                    for _ in range(count):
                        skip(inner)
            elif kind in scalar:
                file.seek(struct.calcsize("<" + scalar[kind]), 1)
            else:
                raise EngineError(f"{path}: unknown GGUF value type {kind}")

        if file.read(4) != b"GGUF":
            raise EngineError(f"{path}: not a GGUF file")
        read("I")  # version
        tensor_count, field_count = read("Q"), read("Q")
        architecture = None
        for _ in range(field_count):
            key, kind = string(), read("I")
            if key == b"general.architecture" and kind == GGUFValueType.STRING:
                architecture = string().decode()
            else:
                skip(kind)
        tensors = {}
        for _ in range(tensor_count):
            name = string().decode()
            shape = [read("Q") for _ in range(read("I"))]
            kind = read("I")
            read("Q")  # data offset
            try:
                tensors[name] = (GGMLQuantizationType(kind).name, shape)
            except ValueError:  # a type newer than this gguf: never one AMX takes
                tensors[name] = (str(kind), shape)
    return architecture, tensors


def amx_roles(path: str | Path) -> list[str]:
    """The layer roles of GGUF `path` whose every matrix AMX can multiply; [] when the
    model's output projection is a tensor of its own (nothing would be packed twice)
    or it is not a llama-architecture model."""
    architecture, tensors = read_header(path)
    if architecture != "llama" or "output.weight" in tensors:
        return []
    roles = []
    for role in ROLES:
        matrices = [info for name, info in tensors.items() if name.endswith(f".{role}.weight")]
        if matrices and all(_amx_can_multiply(*info) for info in matrices):
            roles.append(role)
    return roles


def _amx_can_multiply(kind: str, shape: list[int]) -> bool:
    alignment = AMX_ALIGNMENT.get(kind)
    return (
        alignment is not None
        and len(shape) == 2
        and shape[0] % alignment == 0
        and shape[1] % AMX_ROWS == 0
    )


def _cpu_extra_buffer_types() -> dict[str, int]:
    """llama.cpp's CPU backend's extra weight buffer types by name ("AMX",
    "CPU_REPACK"), as pointers; {} when the build has none or the libraries are not
    where llama-cpp-python keeps them."""
    import llama_cpp

    lib = Path(llama_cpp.__file__).parent / "lib"
    try:
        ggml = ctypes.CDLL(str(lib / "libggml.so"))
        base = ctypes.CDLL(str(lib / "libggml-base.so"))
    except OSError:
        return {}
    pointer = ctypes.c_void_p
    ggml.ggml_backend_dev_by_type.restype = pointer
    ggml.ggml_backend_dev_by_type.argtypes = [ctypes.c_int]
    base.ggml_backend_dev_backend_reg.restype = pointer
    base.ggml_backend_dev_backend_reg.argtypes = [pointer]
    base.ggml_backend_reg_get_proc_address.restype = pointer
    base.ggml_backend_reg_get_proc_address.argtypes = [pointer, ctypes.c_char_p]
    base.ggml_backend_buft_name.restype = ctypes.c_char_p
    base.ggml_backend_buft_name.argtypes = [pointer]
    llama_cpp.llama_backend_init()  # registers the backends (idempotent)
    device = ggml.ggml_backend_dev_by_type(0)  # GGML_BACKEND_DEVICE_TYPE_CPU
    if not device:
        return {}
    address = base.ggml_backend_reg_get_proc_address(
        base.ggml_backend_dev_backend_reg(device), b"ggml_backend_dev_get_extra_bufts"
    )
    if not address:
        return {}
    listed = ctypes.CFUNCTYPE(ctypes.POINTER(pointer), pointer)(address)(device)
    found: dict[str, int] = {}
    index = 0
    while listed and listed[index]:
        found[base.ggml_backend_buft_name(listed[index]).decode()] = listed[index]
        index += 1
    return found


class _Override(ctypes.Structure):
    """llama.cpp's `llama_model_tensor_buft_override`: a tensor-name regex and a buft."""

    _fields_ = [("pattern", ctypes.c_char_p), ("buft", ctypes.c_void_p)]


def model_params(path: str | Path, *, place: bool = True) -> tuple[Any, Any]:
    """(llama_model_params, what must outlive the load) for GGUF `path`: llama.cpp's
    defaults, or, on a CPU with AMX and a model with a tied embedding (and `place`),
    the layers' matrices on AMX and every other weight read from the mapped file."""
    import llama_cpp

    params = llama_cpp.llama_model_default_params()
    amx = _cpu_extra_buffer_types().get("AMX") if place else None
    roles = amx_roles(path) if amx else []
    if not roles:
        return params, None
    pattern = rf"^blk\.[0-9]+\.({'|'.join(roles)})\.weight$".encode()
    overrides = (_Override * 2)(_Override(pattern, amx), _Override(None, None))
    params.tensor_buft_overrides = ctypes.cast(overrides, ctypes.c_void_p)
    params.use_extra_bufts = False
    return params, overrides
