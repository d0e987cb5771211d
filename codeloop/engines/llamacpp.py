"""The llamacpp engine: llama-cpp-python in process, the fast CPU path for GGUF models.

It serves the bundled GGUF directly (no dequantized copy) and decodes a batch of
requests together in one llama.cpp context (`llamacpp_batch.BatchDecoder`): one
sequence per request, each with its own sampler seeded by the request's seed, so a
sample depends on its seed only, never on its batch neighbours or their order.
Prompts that share their first tokens (a language's system turn and worked example,
the n samples of one conversation) decode them once. A PEFT adapter is converted
once to a llama.cpp LoRA GGUF (cached by the adapter's sha256) and attached to the
context, so switching adapters never reloads the base.

Prompts are the GGUF's own chat template rendered the way llama-cpp-python's
`Llama.create_chat_completion` renders it, so they are token for token what the
earlier one-request-at-a-time engine fed the model.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from pathlib import Path
from typing import Any

from codeloop.config import EngineConfig
from codeloop.engines.base import Completion, Conversation, adapter_sha256, expand, regroup
from codeloop.engines.gguf_weights import prepared_gguf, weight_type
from codeloop.engines.llamacpp_batch import BatchDecoder
from codeloop.engines.llamacpp_placement import model_params
from codeloop.engines.lora_gguf import convert, metadata
from codeloop.errors import EngineError
from codeloop.models import resolve
from codeloop.paths import cache_root
from codeloop.recipe import ends_code_block
from codeloop.store import sha256_file

MADV_DONTNEED = 4  # <sys/mman.h>, Linux
LOG_ERROR, LOG_CONTINUED = 4, 5  # ggml_log_level
_log_state = {"printing": False}


def _log_errors(level: int, text: bytes | None, _user_data: Any) -> None:
    """llama.cpp's log callback: errors (and their continuation lines) to stderr."""
    printing = level == LOG_ERROR or (level == LOG_CONTINUED and _log_state["printing"])
    _log_state["printing"] = printing
    if printing and text:
        print(text.decode("utf-8", "replace"), end="", file=sys.stderr, flush=True)


_log_callback: Any = None


def log_errors_only() -> None:
    """Let llama.cpp log its errors only.

    llama-cpp-python's own switch (`set_verbose(False)`) maps ggml's log levels one
    off (WARN as ERROR), so its warnings still printed: 210 lines on every adapter
    load on a CPU with AMX ("lora for ... cannot use buft 'AMX', fallback to CPU").
    """
    global _log_callback
    import llama_cpp

    if _log_callback is None:
        _log_callback = llama_cpp.llama_log_callback(_log_errors)  # kept: C holds it
    llama_cpp.llama_log_set(_log_callback, ctypes.c_void_p(0))


def chat_formatter(model: Any) -> Any:
    """The chat formatter `Llama.create_chat_completion` would use for this GGUF.

    With a `tokenizer.chat_template` in the metadata that is the template itself
    (rendered by llama-cpp-python's Jinja2ChatFormatter, with the model's BOS/EOS
    texts); without one, llama-cpp-python's fallback, the llama-2 format.
    """
    from llama_cpp import llama_chat_format

    template = model.metadata().get("tokenizer.chat_template")
    if template is None:
        return llama_chat_format.format_llama2
    eos, bos = model.token_eos(), model.token_bos()
    return llama_chat_format.Jinja2ChatFormatter(
        template=template,
        eos_token=model.token_get_text(eos) if eos != -1 else "",
        bos_token=model.token_get_text(bos) if bos != -1 else "",
        stop_token_ids=[eos],
    )


def release_file_pages(path: str | Path) -> int:
    """Drop this process's resident pages of every mapping of `path`; returns the bytes.

    llama.cpp maps the whole GGUF, then copies the weights its AMX or repacked kernels
    use into buffers of their own and leaves the mapping in place: the pages it read
    stayed counted in our RSS, so the bundled model's weights counted twice (its 92
    MiB mapping besides llama.cpp's copies). After
    `MADV_DONTNEED` the page cache keeps the file, and what is still read through the
    mapping (the token embedding rows of the prompts' tokens, the norms; all the
    weights on a CPU without those kernels) faults back in on first use.
    """
    target = os.path.realpath(path)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    released = 0
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:  # not Linux: nothing to release
        return 0
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5] == target:
            low, high = (int(part, 16) for part in fields[0].split("-"))
            if libc.madvise(low, high - low, MADV_DONTNEED) == 0:
                released += high - low
    return released


class LlamaCppEngine:
    def __init__(
        self,
        config: EngineConfig,
        *,
        n_ctx: int = 4096,
        threads: int | None = None,
        share_prefix: bool = True,
        place_weights: bool = True,
    ):
        """`n_ctx` bounds one request (prompt and answer); `threads` defaults to every
        CPU of this process's affinity mask; `place_weights` False leaves llama.cpp's
        own weight placement (`llamacpp_placement`; bench/engines.py compares them)."""
        self.config = config
        self.ref = resolve(config.model, config.revision)
        if not self.ref.gguf:
            raise EngineError(
                f"engine.model: the llamacpp engine needs a GGUF file, got {config.model}"
            )
        log_errors_only()
        self.place_weights = place_weights
        self.weights = weight_type(config.weights, config.merge_adapter)
        self._base_hash: str | None = None
        self.path = self.base_path = self._typed(None)
        self._load(self.path)
        self.formatter = chat_formatter(self.model)
        self.n_ctx = n_ctx
        self.share_prefix = share_prefix
        self.threads = threads or max(1, len(os.sched_getaffinity(0)))
        self.decoder = BatchDecoder(self.model.model, self.model.vocab, threads=self.threads)
        self._adapters: dict[str, Any] = {}
        self.adapter_hash: str | None = None
        self.stats = {"generated_tokens": 0, "seconds": 0.0}

    def _typed(self, adapter: str | Path | None, digest: str | None = None) -> str:
        """The file to load: the configured one, or its copy re-typed (`self.weights`)
        with `adapter` merged in (`gguf_weights.prepared_gguf`, cached)."""
        if self.weights is None and adapter is None:
            return self.ref.path
        self._base_hash = self._base_hash or sha256_file(Path(self.ref.path))
        typed = prepared_gguf(
            self.ref.path, self.weights, adapter, digest, base_hash=self._base_hash, apart=True
        )
        return str(typed)

    def _load(self, path: str) -> None:
        """llama.cpp's model from `path`; `_placement` is kept, as llama.cpp reads the
        overrides it holds while loading."""
        from llama_cpp import _internals

        params, self._placement = model_params(path, place=self.place_weights)
        try:
            self.model = _internals.LlamaModel(path_model=path, params=params, verbose=False)
        except ValueError as error:
            raise EngineError(f"llama.cpp could not load {path}: {error}") from error
        release_file_pages(path)

    def _reload(self, path: str) -> None:
        """Another weights file (a merged adapter, or the base again): a new model and
        decoder, the KV type kept; the prefix cache starts empty."""
        if path == self.path:
            return
        kv_type = self.decoder.kv_type
        self.decoder.close()
        self.model.close()
        self._adapters.clear()
        self._load(path)
        self.path = path
        self.formatter = chat_formatter(self.model)
        self.decoder = BatchDecoder(self.model.model, self.model.vocab, threads=self.threads)
        self.decoder.kv_type = kv_type

    def load_adapter(self, path: str | Path | None) -> None:
        import llama_cpp

        if self.config.merge_adapter:
            digest = adapter_sha256(path)
            self._reload(self._typed(path, digest) if path is not None else self.base_path)
            self.adapter_hash = digest
            return
        self._reload(self.base_path)
        if path is None:
            self.decoder.set_adapter(None)
            self.adapter_hash = None
            return
        digest = adapter_sha256(path)
        assert digest is not None
        if digest not in self._adapters:
            target = cache_root() / "lora-gguf" / f"{digest}.gguf"
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                temp = target.with_suffix(f".tmp-{os.getpid()}")
                convert(path, self.ref.path, temp, self._base_metadata())
                temp.replace(target)
            handle = llama_cpp.llama_adapter_lora_init(self.model.model, str(target).encode())
            if not handle:
                raise EngineError(f"llama.cpp refused the converted adapter {target}")
            self._adapters[digest] = handle
        try:
            self.decoder.set_adapter(self._adapters[digest])
        except EngineError as error:
            raise EngineError(f"llama.cpp could not attach adapter {path}") from error
        self.adapter_hash = digest

    def _base_metadata(self) -> dict[str, int | str]:
        """`lora_gguf.metadata` read from the loaded model, not from the file again."""
        import llama_cpp

        def value(key: str) -> str:
            buffer = ctypes.create_string_buffer(256)
            if llama_cpp.llama_model_meta_val_str(self.model.model, key.encode(), buffer, 256) < 0:
                raise EngineError(f"{self.ref.path}: no {key} in its metadata")
            return buffer.value.decode()

        return metadata(value, self.ref.path)

    def info(self) -> dict[str, Any]:
        return {
            "engine": "llamacpp",
            "model": self.ref.name,
            "revision": self.ref.revision,
            "precision": "gguf",
            "weights": self.weights or "file",
            "adapter_merged": self.config.merge_adapter,
            "kv_cache": self.decoder.kv_type,
            "adapter_sha256": self.adapter_hash,
        }

    def encode(self, conversation: Conversation) -> list[int]:
        """The prompt tokens of `conversation` (chat template with the assistant turn open)."""
        result = self.formatter(messages=conversation)
        return self.model.tokenize(
            result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True
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
        started = time.monotonic()
        jobs = expand(conversations, seed, n)
        prompts = [self.encode(conversation) for conversation, _seed in jobs]
        for prompt in prompts:
            if len(prompt) >= self.n_ctx:
                raise EngineError(
                    f"a prompt of {len(prompt)} tokens does not fit the context of "
                    f"{self.n_ctx} tokens"
                )
        # Requests with equal first tokens run one after another, so the prefix one
        # decoded is still cached for the next. The order is invisible in the answers:
        # each depends on its own prompt and seed only.
        order = sorted(range(len(jobs)), key=lambda k: prompts[k])
        longest = max(map(len, prompts), default=0)
        done = self.decoder.generate(
            [prompts[k] for k in order],
            [jobs[k][1] for k in order],
            max_tokens=[min(max_tokens, self.n_ctx - len(prompts[k])) for k in order],
            temperature=temperature,
            stop=ends_code_block,
            share_prefix=self.share_prefix,
            min_p=self.config.min_p,
            top_p=self.config.top_p,
            parallel=self.config.batch_size,
            # Room for the configured answer length, whatever this call asks: a call
            # with fewer tokens first (a warm-up, a short probe) does not size the
            # context so that the next needs a new one, which empties the prefix cache.
            cells=min(self.n_ctx, longest + max(max_tokens, self.config.max_tokens)),
        )
        flat: list[Completion | None] = [None] * len(jobs)
        for k, seq in zip(order, done, strict=True):
            flat[k] = Completion(
                text=seq.text.decode("utf-8", "ignore"),
                tokens=len(seq.tokens),
                finish_reason=seq.reason,
            )
        results = regroup([c for c in flat if c is not None], n)
        self.stats["generated_tokens"] += sum(r.tokens for row in results for r in row)
        self.stats["seconds"] += time.monotonic() - started
        return results

    def close(self) -> None:
        self.decoder.close()
        self.model.close()
