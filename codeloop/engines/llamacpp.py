"""The llamacpp engine: llama-cpp-python in process, the fast CPU path for GGUF models.

It serves the bundled GGUF directly (no dequantized copy). A PEFT adapter is
converted once to a llama.cpp LoRA GGUF (cached by the adapter's sha256) and
attached to the running context, so switching adapters never reloads the base.
Each request is seeded on its own: a sample depends on its seed only.
"""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path
from typing import Any

from codeloop.config import EngineConfig
from codeloop.engines.base import Completion, Conversation, adapter_sha256, expand, regroup
from codeloop.engines.lora_gguf import convert
from codeloop.errors import EngineError
from codeloop.models import resolve
from codeloop.recipe import ends_code_block


class LlamaCppEngine:
    def __init__(self, config: EngineConfig, *, n_ctx: int = 4096, threads: int | None = None):
        from llama_cpp import Llama

        self.config = config
        self.ref = resolve(config.model, config.revision)
        if not self.ref.gguf:
            raise EngineError(
                f"engine.model: the llamacpp engine needs a GGUF file, got {config.model}"
            )
        self.llm = Llama(
            model_path=self.ref.path,
            n_ctx=n_ctx,
            verbose=False,
            seed=0,
            n_threads=threads or max(1, len(os.sched_getaffinity(0))),
        )
        self._adapters: dict[str, Any] = {}
        self.adapter_hash: str | None = None
        self.stats = {"generated_tokens": 0, "seconds": 0.0}

    def load_adapter(self, path: str | Path | None) -> None:
        import llama_cpp

        if path is None:
            llama_cpp.llama_set_adapters_lora(self.llm.ctx, None, 0, None)
            self.adapter_hash = None
            return
        digest = adapter_sha256(path)
        assert digest is not None
        if digest not in self._adapters:
            from codeloop.sandbox.cache import cache_root

            target = cache_root() / "lora-gguf" / f"{digest}.gguf"
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                temp = target.with_suffix(f".tmp-{os.getpid()}")
                convert(path, self.ref.path, temp)
                temp.replace(target)
            handle = llama_cpp.llama_adapter_lora_init(self.llm.model, str(target).encode())
            if not handle:
                raise EngineError(f"llama.cpp refused the converted adapter {target}")
            self._adapters[digest] = handle
        adapters = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(self._adapters[digest])
        scales = (ctypes.c_float * 1)(1.0)
        if llama_cpp.llama_set_adapters_lora(self.llm.ctx, adapters, 1, scales):
            raise EngineError(f"llama.cpp could not attach adapter {path}")
        self.adapter_hash = digest

    def info(self) -> dict[str, Any]:
        return {
            "engine": "llamacpp",
            "model": self.ref.name,
            "revision": self.ref.revision,
            "precision": "gguf",
            "adapter_sha256": self.adapter_hash,
        }

    def _one(
        self, conversation: Conversation, max_tokens: int, temperature: float, seed: int
    ) -> Completion:
        self.llm.reset()
        text, tokens, reason = "", 0, "length"
        stream = self.llm.create_chat_completion(
            conversation,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            top_p=1.0,
            top_k=0,
            min_p=0.0,
            repeat_penalty=1.0,
            stream=True,
        )
        for chunk in stream:
            choice = chunk["choices"][0]
            piece = choice["delta"].get("content") or ""
            if piece:
                text += piece
                tokens += 1
            if choice.get("finish_reason"):
                reason = "stop" if choice["finish_reason"] == "stop" else "length"
            if ends_code_block(text):
                reason = "stop"
                break
        return Completion(text=text, tokens=tokens, finish_reason=reason)

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
        started = time.monotonic()
        flat = [self._one(c, max_tokens, temperature, s) for c, s in expand(conversations, seed, n)]
        results = regroup(flat, n)
        self.stats["generated_tokens"] += sum(r.tokens for row in results for r in row)
        self.stats["seconds"] += time.monotonic() - started
        return results

    def close(self) -> None:
        self.llm.close()
