"""Finding and loading the base model offline: the bundled GGUF, a GGUF file, or a folder.

Training must never reach the network at run time: a hub id is
accepted only when it is already in the local Hugging Face cache. A GGUF file is
trained through `codeloop.models.hf_folder`, the same once-converted, dequantized
Hugging Face folder the inference engines load, so LoRA trains on the weights
llama.cpp would serve, just unpacked, without dequantizing on every run. torch and
transformers are imported inside the functions, so importing this module (and
`codeloop --help`) stays fast.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from codeloop import store
from codeloop.config import BUNDLED_MODEL
from codeloop.errors import ConfigError
from codeloop.models import ModelRef, bundled_gguf, hf_folder


@dataclass(frozen=True)
class ModelSource:
    """Where the base model comes from: `folder` (+ `gguf_file`) or a cached hub id."""

    name: str
    kind: str  # "gguf", "folder" or "hub-cache"
    location: str
    gguf_file: str | None = None

    def folder(self) -> str:
        """What `from_pretrained` loads: the folder, the hub id, or a GGUF's converted folder."""
        if self.gguf_file is None:
            return self.location
        gguf = str(Path(self.location) / self.gguf_file)
        return hf_folder(ModelRef(name=self.name, path=gguf, gguf=True))

    def identity(self) -> dict[str, Any]:
        """What binds an adapter to this base: name, kind, and a content hash where cheap.

        A GGUF file is hashed whole (the bundled one is 98 MB); for a folder the
        config and the weight files' names and sizes stand in, since hashing many GB
        on every resume would cost minutes.
        """
        info: dict[str, Any] = asdict(self)
        if self.gguf_file is not None:
            info["sha256"] = store.sha256_file(Path(self.location) / self.gguf_file)
        elif self.kind == "folder":
            folder = Path(self.location)
            config = folder / "config.json"
            info["config_sha256"] = store.sha256_file(config) if config.is_file() else None
            info["weights"] = {
                p.name: p.stat().st_size
                for p in sorted(folder.iterdir())
                if p.suffix in {".safetensors", ".bin"}
            }
        return info


def resolve_model(name: str) -> ModelSource:
    """Map a model name to a local source, refusing anything that would need the network."""
    if name == BUNDLED_MODEL:
        path = bundled_gguf()
        return ModelSource(name, "gguf", str(path.parent), path.name)
    path = Path(name).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return ModelSource(name, "gguf", str(path.resolve().parent), path.name)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ConfigError(f"{path}: not a Hugging Face model folder (no config.json)")
        return ModelSource(name, "folder", str(path.resolve()))
    if path.suffix == ".gguf" or (os.sep in name and not _looks_like_hub_id(name)):
        raise ConfigError(f"{name}: model file or folder not found")
    return ModelSource(name, "hub-cache", name)


def _looks_like_hub_id(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "/", "~"))


def load_tokenizer(source: ModelSource) -> Any:
    """The tokenizer of `source`; it must have a chat template, since rows are chats."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(source.folder(), local_files_only=True)
    except OSError as error:
        raise ConfigError(_offline_hint(source, error)) from None
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(f"{source.name}: the tokenizer has no chat template; rows are chats")
    if tokenizer.pad_token is None:
        # Right-padding with the end-of-turn token is harmless: padded labels are -100.
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model(source: ModelSource, dtype_name: str) -> Any:
    """The causal LM of `source` in `dtype_name` (float32, bfloat16 or float16)."""
    import torch
    from transformers import AutoModelForCausalLM

    try:
        model = AutoModelForCausalLM.from_pretrained(
            source.folder(), dtype=getattr(torch, dtype_name), local_files_only=True
        )
    except OSError as error:
        raise ConfigError(_offline_hint(source, error)) from None
    model.config.use_cache = False
    return model


def resolve_dtype(precision: str) -> str:
    """`auto` is float32 on CPU (bf16 matmuls are slow there) and bfloat16 on a GPU."""
    if precision != "auto":
        return precision
    import torch

    return "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float32"


def _offline_hint(source: ModelSource, error: OSError) -> str:
    if source.kind == "hub-cache":
        return (
            f"{source.name}: not in the local Hugging Face cache and training never downloads; "
            f"fetch it first (huggingface-cli download {source.name}) or give a local folder "
            f"({error.__class__.__name__})"
        )
    return f"{source.name}: could not load the model from {source.location}: {error}"
