"""The vllm engine: offline `vllm.LLM` on a GPU, LoRA adapters through `LoRARequest`.

vLLM is imported only when this engine is chosen, and a machine without vLLM or
without a GPU gets a clear error instead of a stack trace from deep inside it.
Each sample carries its own seed in its `SamplingParams`, so samples do not
depend on batch composition.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codeloop.config import EngineConfig
from codeloop.engines.base import Completion, Conversation, adapter_sha256, expand, regroup
from codeloop.errors import EngineError
from codeloop.models import hf_folder, resolve


class VLLMEngine:
    def __init__(self, config: EngineConfig, *, max_lora_rank: int = 64) -> None:
        try:
            import torch
            from vllm import LLM
        except ImportError as error:
            raise EngineError(
                f"the vllm engine needs vLLM ({error}); install codeloop[vllm] on a GPU machine"
            ) from None
        if not torch.cuda.is_available():
            raise EngineError("the vllm engine needs a CUDA GPU; none is visible here")
        self.config = config
        self.ref = resolve(config.model, config.revision)
        dtype = "bfloat16" if config.precision == "auto" else config.precision
        self.llm = LLM(
            model=hf_folder(self.ref),
            revision=None if self.ref.local else config.revision,
            dtype=dtype,
            enable_lora=True,
            max_lora_rank=max_lora_rank,
            gpu_memory_utilization=config.gpu_memory_utilization,
            seed=0,
        )
        self.lora: Any = None
        self.adapter_hash: str | None = None
        self._ids: dict[str, int] = {}

    def load_adapter(self, path: str | Path | None) -> None:
        if path is None:
            self.lora, self.adapter_hash = None, None
            return
        from vllm.lora.request import LoRARequest

        digest = adapter_sha256(path)
        assert digest is not None
        number = self._ids.setdefault(digest, len(self._ids) + 1)
        self.lora = LoRARequest(f"codeloop-{digest[:16]}", number, str(path))
        self.adapter_hash = digest

    def generate(
        self,
        conversations: list[Conversation],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        seed: int | list[int] = 0,
        n: int = 1,
        keys: list[str] | None = None,
    ) -> list[list[Completion]]:
        from vllm import SamplingParams

        jobs = expand(conversations, seed, n)
        params = [
            SamplingParams(
                max_tokens=max_tokens,
                temperature=temperature,
                seed=job_seed,
                **(
                    {"min_p": self.config.min_p, "top_p": self.config.top_p}
                    if temperature > 0
                    else {}
                ),
            )
            for _c, job_seed in jobs
        ]
        outputs = self.llm.chat(
            [c for c, _s in jobs], sampling_params=params, lora_request=self.lora, use_tqdm=False
        )
        flat = [
            Completion(
                text=o.outputs[0].text,
                tokens=len(o.outputs[0].token_ids),
                finish_reason="length" if o.outputs[0].finish_reason == "length" else "stop",
            )
            for o in outputs
        ]
        return regroup(flat, n)

    def info(self) -> dict[str, Any]:
        return {
            "engine": "vllm",
            "model": self.ref.name,
            "revision": self.ref.revision,
            "precision": self.config.precision,
            "adapter_sha256": self.adapter_hash,
        }

    def close(self) -> None:
        self.llm = None
