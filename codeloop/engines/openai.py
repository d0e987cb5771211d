"""The openai engine: any OpenAI-compatible chat endpoint (vLLM, SGLang, llama.cpp, TGI).

Every sample is its own request carrying its own seed, so results do not depend
on how the server batches. Server faults (5xx, timeouts, a dropped connection)
are retried with exponential backoff; when the retries run out, or on a 4xx, the
engine raises an `EngineError` naming the URL and the reason. It never turns a
failed request into an empty answer, which the loop would count as the model's.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from codeloop.config import EngineConfig
from codeloop.engines.base import Completion, Conversation, adapter_sha256, expand, regroup
from codeloop.engines.server import ManagedServer
from codeloop.errors import EngineError

_RETRYABLE = (httpx.TimeoutException, httpx.TransportError)


class OpenAIEngine:
    def __init__(self, config: EngineConfig, *, log_dir: str | Path = ".") -> None:
        import os

        self.config = config
        self.server: ManagedServer | None = None
        if config.server is not None:
            self.server = ManagedServer(config.server, Path(log_dir) / "server.log").start()
        base = config.base_url
        if base is None and config.server is not None:
            parts = urlsplit(config.server.health_url)
            base = f"{parts.scheme}://{parts.netloc}/v1"
        if base is None:
            raise EngineError("the openai engine needs engine.base_url or engine.server")
        self.base_url = base.rstrip("/")
        key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = httpx.Client(headers=headers, timeout=config.request_timeout_s)
        self.served_model = config.model
        self.adapter_hash: str | None = None

    # -- requests ------------------------------------------------------------------------

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        url = f"{self.base_url}{path}"
        delay, last = 0.5, "no attempt"
        for attempt in range(self.config.max_retries + 1):
            if attempt:
                time.sleep(delay)
                delay *= 2
            try:
                response = self.client.post(url, json=payload)
            except _RETRYABLE as error:
                last = f"{type(error).__name__}: {error}"
                continue
            if response.status_code >= 500:
                last = f"HTTP {response.status_code}: {response.text[:300]}"
                continue
            if response.status_code >= 400:
                raise EngineError(
                    f"{url} refused the request: HTTP {response.status_code}: {response.text[:500]}"
                )
            try:
                return response.json()
            except ValueError:
                last = f"invalid JSON answer: {response.text[:200]}"
        raise EngineError(
            f"{url} failed after {self.config.max_retries + 1} attempts; last error: {last}"
        )

    def _complete(
        self, conversation: Conversation, max_tokens: int, temperature: float, seed: int
    ) -> Completion:
        payload = {
            "model": self.served_model,
            "messages": conversation,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": seed,
            "n": 1,
        }
        if temperature > 0:
            # Always sent, "off" included: servers have their own defaults (llama.cpp's
            # min_p 0.05, top_p 0.95; vLLM's from the model's generation config), and a
            # sample must follow engine.min_p / engine.top_p as in the other engines.
            # min_p is not in OpenAI's API; vLLM, SGLang and llama.cpp's servers read it.
            payload["top_p"] = self.config.top_p
            payload["min_p"] = self.config.min_p
        answer = self._post("/chat/completions", payload)
        try:
            choice = answer["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise EngineError(
                f"{self.base_url}: malformed chat answer: {str(answer)[:300]}"
            ) from None
        tokens = (answer.get("usage") or {}).get("completion_tokens", 0)
        return Completion(
            text=text, tokens=tokens, finish_reason=choice.get("finish_reason") or "stop"
        )

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
        jobs = expand(conversations, seed, n)
        with ThreadPoolExecutor(max_workers=self.config.concurrency) as pool:
            flat = list(
                pool.map(lambda job: self._complete(job[0], max_tokens, temperature, job[1]), jobs)
            )
        return regroup(flat, n)

    # -- adapters ------------------------------------------------------------------------

    def load_adapter(self, path: str | Path | None) -> None:
        """Serve a LoRA adapter by name (vLLM's runtime LoRA loading), or the base model."""
        if path is None:
            self.served_model, self.adapter_hash = self.config.model, None
            return
        digest = adapter_sha256(path)
        assert digest is not None
        name = f"codeloop-{digest[:16]}"
        try:
            self._post("/load_lora_adapter", {"lora_name": name, "lora_path": str(path)})
        except EngineError as error:
            if "already" not in str(error).lower():
                raise EngineError(
                    f"{self.base_url} cannot load LoRA adapters at run time ({error}); "
                    "start vLLM with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora"
                ) from None
        self.served_model, self.adapter_hash = name, digest

    def info(self) -> dict[str, Any]:
        return {
            "engine": "openai",
            "model": self.config.model,
            "revision": self.config.revision,
            "precision": self.config.precision,
            "adapter_sha256": self.adapter_hash,
            "base_url": self.base_url,
        }

    def close(self) -> None:
        self.client.close()
        if self.server is not None:
            self.server.stop()
