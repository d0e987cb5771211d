"""Batched decoding on llama.cpp's low-level API: many sequences in one context.

Every request is one sequence of one llama.cpp context, and each decode step sends
the next token of every unfinished sequence in one `llama_batch`, as llama.cpp's
server does with its parallel slots. Each sequence samples with its own sampler
chain (greedy, or temperature then a `dist` sampler seeded with the request's own
seed), so a sample depends on its prompt and seed only.

Why the context is set up the way it is (measured, see tests/test_engine_llamacpp.py):

* The KV cache is not unified: every sequence has its own stream of cells, and its
  attention reads exactly its own cells at the same offsets whether it decodes alone
  or next to others. With a unified cache a sequence's cells land at offsets that
  depend on its neighbours, the SIMD lanes of the attention sums group its values
  differently, and logits move in the last bits: batched greedy stops matching
  one-by-one greedy now and then.
* Flash attention is off: on the CPU its kernel picks a path (and a precision for
  the V sums) by the number of queries in a micro-batch, so a prompt's KV values would
  depend on how it was split into micro-batches.
* llama.cpp multiplies a micro-batch of one token with other kernels than two or
  more (gemv instead of its tiled gemm, for the attention of one query per sequence
  as for float32 LoRA weights), and they round differently. So every step decodes
  exactly one token per sequence (the first step decodes the prompt's last token)
  and at least two tokens in all (a pad token in a spare sequence when one sequence
  is left), and a prompt's other tokens are decoded one sequence per call, never a
  token alone.
* Prompts that begin with the same tokens (one language's system turn and worked
  example; the n samples of one conversation) decode that prefix once: the stream of
  the first such prompt is copied to the others (`llama_memory_seq_cp`, a buffer copy
  at the same offsets) and cut back to the common prefix, then each decodes the rest
  of its own prompt. The copy holds exactly the cells the others would have computed,
  so sharing changes no output.
* A finished sequence leaves the batch, and the last running sequence's stream is
  copied into its place, so the running sequences always have ids 0..m-1 and each
  step is one micro-batch: llama.cpp splits a step whose ids have gaps into one
  micro-batch per run of consecutive ids, which is slower and, for a run of one
  token, the other kernels of the point above.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from codeloop.errors import EngineError

SHARE_MIN = 16
"""Fewest common prompt tokens worth sharing (a shorter prefix is decoded again)."""
CELL_ROUND = 256
"""Each sequence's KV stream grows in steps of this many cells."""


@dataclass
class Sequence:
    """One request being decoded: its prompt, its limit, and what it generated."""

    prompt: list[int]
    seed: int
    limit: int
    tokens: list[int] = field(default_factory=list)
    text: bytes = b""
    reason: str = "length"
    done: bool = False
    shared: int = 0
    """Prompt tokens whose KV cells were copied from another sequence, not decoded."""
    next_token: int = -1
    """The sampled token this sequence decodes in the next step."""


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def plan_sharing(prompts: list[list[int]], minimum: int = SHARE_MIN) -> list[tuple[int, int]]:
    """For each prompt, (source, length): start from a copy of the first `length` tokens of
    the earlier prompt `source`, or (-1, 0) to decode it all.

    Only a prompt's tokens before its last are shared (the last one is decoded by the
    first step), from the earliest prompt with the longest common prefix, and never
    leaving exactly one token of its own to decode (see `BatchDecoder._prefill`).
    """
    plan: list[tuple[int, int]] = []
    for i, prompt in enumerate(prompts):
        best, length = -1, 0
        for j in range(i):
            common = min(common_prefix(prompts[j][:-1], prompt[:-1]), len(prompt) - 1)
            if common > length:
                best, length = j, common
        if len(prompt) - 1 - length == 1:
            length -= 1
        plan.append((best, length) if length >= minimum else (-1, 0))
    return plan


class BatchDecoder:
    """One llama.cpp context over a loaded model that decodes many sequences together."""

    def __init__(
        self, model: Any, vocab: Any, *, threads: int, n_batch: int = 512, n_ubatch: int = 512
    ) -> None:
        self.model, self.vocab = model, vocab
        self.threads = threads
        self.n_batch, self.n_ubatch = n_batch, n_ubatch
        self.ctx: Any = None
        self.stream_cells = 0
        self.seqs = 0
        self._batch: Any = None
        self._adapter: Any = None
        self.stats = {"prompt_tokens": 0, "shared_tokens": 0, "decode_calls": 0, "moves": 0}

    # -- context -----------------------------------------------------------------------

    def _ensure(self, stream_cells: int, seqs: int) -> None:
        """A context with `seqs` sequences of at least `stream_cells` cells (only grows)."""
        import llama_cpp as C

        if self.ctx is not None and stream_cells <= self.stream_cells and seqs <= self.seqs:
            return
        most = C.llama_max_parallel_sequences()
        if seqs > most:
            raise EngineError(
                f"llama.cpp decodes at most {most} sequences at once; asked for {seqs} "
                "(engine.batch_size)"
            )
        stream_cells = -(-max(stream_cells, self.stream_cells) // CELL_ROUND) * CELL_ROUND
        seqs = max(seqs, self.seqs)
        self._free_context()
        params = C.llama_context_default_params()
        params.n_ctx = stream_cells * seqs
        params.n_batch = self.n_batch
        params.n_ubatch = self.n_ubatch
        params.n_seq_max = seqs
        params.n_threads = params.n_threads_batch = self.threads
        params.kv_unified = False
        params.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_DISABLED
        params.no_perf = True
        ctx = C.llama_init_from_model(self.model, params)
        if not ctx:
            raise EngineError(
                f"llama.cpp could not create a context of {seqs} x {stream_cells} cells"
            )
        self.ctx, self.stream_cells, self.seqs = ctx, stream_cells, seqs
        self._batch = C.llama_batch_init(self.n_batch, 0, 1)
        self._apply_adapter()

    def _free_context(self) -> None:
        import llama_cpp as C

        if self._batch is not None:
            C.llama_batch_free(self._batch)
            self._batch = None
        if self.ctx is not None:
            C.llama_free(self.ctx)
            self.ctx = None

    def close(self) -> None:
        self._free_context()

    def set_adapter(self, handle: Any) -> None:
        """Apply the llama.cpp LoRA adapter `handle` (scale 1) to every decode, or None."""
        self._adapter = handle
        if self.ctx is not None:
            self._apply_adapter()

    def _apply_adapter(self) -> None:
        import llama_cpp as C

        if self._adapter is None:
            C.llama_set_adapters_lora(self.ctx, None, 0, None)
            return
        adapters = (C.llama_adapter_lora_p_ctypes * 1)(self._adapter)
        scales = (ctypes.c_float * 1)(1.0)
        if C.llama_set_adapters_lora(self.ctx, adapters, 1, scales):
            raise EngineError("llama.cpp could not attach the LoRA adapter")

    # -- low level ---------------------------------------------------------------------

    def _decode(self, entries: list[tuple[int, int, int, bool]]) -> None:
        """Decode (token, position, sequence id, wants logits) entries in one llama_decode."""
        import llama_cpp as C

        batch = self._batch
        for i, (token, pos, seq, logits) in enumerate(entries):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = logits
        batch.n_tokens = len(entries)
        status = C.llama_decode(self.ctx, batch)
        self.stats["decode_calls"] += 1
        if status != 0:
            raise EngineError(f"llama_decode failed with status {status}")

    @staticmethod
    def _sampler(temperature: float, seed: int, min_p: float = 0.0, top_p: float = 1.0) -> Any:
        """Greedy, or temperature, then top-p and min-p (when on), then a seeded draw.

        Top-p comes before min-p so that together they keep the tokens each would keep
        alone (min-p is relative to the most likely token, which top-p always keeps),
        as the hf engine's `truncated` does.
        """
        import llama_cpp as C

        chain = C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())
        if temperature <= 0:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_greedy())
        else:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_temp(temperature))
            if top_p < 1:
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_p(top_p, 1))
            if min_p > 0:
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_min_p(min_p, 1))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_dist(seed & 0xFFFFFFFF))
        return chain

    def piece(self, token: int) -> bytes:
        """The bytes of `token` in generated text (special tokens render empty)."""
        import llama_cpp as C

        buffer = ctypes.create_string_buffer(64)
        n = C.llama_token_to_piece(self.vocab, token, buffer, 64, 0, False)
        if n < 0:
            buffer = ctypes.create_string_buffer(-n)
            n = C.llama_token_to_piece(self.vocab, token, buffer, -n, 0, False)
        return buffer.raw[:n]

    # -- generation --------------------------------------------------------------------

    def generate(
        self,
        prompts: list[list[int]],
        seeds: list[int],
        *,
        max_tokens: list[int],
        temperature: float,
        stop: Callable[[str], bool] | None = None,
        share_prefix: bool = True,
        min_p: float = 0.0,
        top_p: float = 1.0,
    ) -> list[Sequence]:
        """Decode all prompts together until each one ends; one Sequence per prompt.

        A sequence ends at an end-of-generation token (neither counted nor in its text),
        when `stop(text)` holds after a token whose piece contains a backtick, or after
        its `max_tokens`.
        """
        import llama_cpp as C

        seqs = [
            Sequence(prompt=list(p), seed=s, limit=m)
            for p, s, m in zip(prompts, seeds, max_tokens, strict=True)
        ]
        if not seqs:
            return []
        if any(not s.prompt for s in seqs):
            raise EngineError("llama.cpp cannot decode an empty prompt")
        plan = plan_sharing(prompts) if share_prefix else [(-1, 0)] * len(seqs)
        # One more sequence than requests: the pad of a step with a single token.
        self._ensure(max(len(s.prompt) + s.limit for s in seqs) + 1, len(seqs) + 1)
        memory = C.llama_get_memory(self.ctx)
        C.llama_memory_clear(memory, True)
        samplers = [self._sampler(temperature, s.seed, min_p, top_p) for s in seqs]
        try:
            self._prompts(seqs, plan, memory)
            self._steps(seqs, samplers, memory, stop)
        finally:
            for sampler in samplers:
                C.llama_sampler_free(sampler)
            C.llama_memory_clear(memory, False)
        return seqs

    def _accept(self, seq: Sequence, token: int, stop: Callable[[str], bool] | None) -> None:
        """Take the sampled `token` into `seq`, or end `seq`."""
        import llama_cpp as C

        if C.llama_vocab_is_eog(self.vocab, token):
            seq.done, seq.reason = True, "stop"
            return
        seq.tokens.append(token)
        piece = self.piece(token)
        seq.text += piece
        if stop is not None and b"`" in piece and stop(seq.text.decode("utf-8", "ignore")):
            seq.done, seq.reason = True, "stop"
        elif len(seq.tokens) >= seq.limit:
            seq.done, seq.reason = True, "length"
        else:
            seq.next_token = token

    def _prefill(self, seq_id: int, tokens: list[int], start: int, end: int) -> None:
        """Decode prompt tokens [start, end) of one sequence, without logits.

        One sequence per llama_decode and never a single token alone: llama.cpp's
        attention takes another path for a lone query of a sequence, so a prompt token
        decoded alone gets (slightly) other KV values than one decoded with others.
        """
        size = self.n_ubatch
        while start < end:
            piece = min(size, end - start)
            if end - start - piece == 1:  # the last piece would be one token
                piece -= 1
            self._decode([(tokens[p], p, seq_id, False) for p in range(start, start + piece)])
            start += piece

    def _prompts(self, seqs: list[Sequence], plan: list[tuple[int, int]], memory: Any) -> None:
        """Put every prompt but its last token into its sequence's stream.

        A shared prefix is decoded once: its source decodes its whole prompt, then each
        sequence that shares it gets a copy of the source's stream cut back to the
        prefix (`llama_memory_seq_rm` also moves the stream's head there, so its own
        tokens land right after the prefix, where they would land alone) and decodes
        the rest of its own prompt. The last prompt token is decoded by the first step.
        """
        import llama_cpp as C

        ends = [len(s.prompt) - 1 for s in seqs]
        done = [0] * len(seqs)  # prompt tokens in each sequence's stream
        started = [length == 0 for _source, length in plan]
        while True:
            progressed = False
            for i, seq in enumerate(seqs):
                if started[i] and done[i] < ends[i]:
                    self._prefill(i, seq.prompt, done[i], ends[i])
                    done[i], progressed = ends[i], True
            ready = [started[i] and done[i] == ends[i] for i in range(len(seqs))]
            for i, (source, length) in enumerate(plan):
                if not started[i] and ready[source]:
                    C.llama_memory_seq_cp(memory, source, i, -1, -1)
                    if not C.llama_memory_seq_rm(memory, i, length, -1):
                        raise EngineError("llama.cpp could not cut a copied prompt back")
                    started[i], done[i], seqs[i].shared = True, length, length
                    self.stats["shared_tokens"] += length
                    progressed = True
            if not progressed:
                break
        if done != ends:
            raise EngineError("prefix sharing left a prompt undecoded (a bug)")
        self.stats["prompt_tokens"] += sum(len(s.prompt) for s in seqs)
        for seq in seqs:
            seq.next_token = seq.prompt[-1]

    def _steps(self, seqs, samplers, memory, stop) -> None:
        """One llama_decode per step over every unfinished sequence."""
        import llama_cpp as C

        slots = list(range(len(seqs)))  # slots[seq id] = index of the request it holds
        while True:
            self._compact(slots, seqs, memory)
            active = [slot for slot, i in enumerate(slots) if not seqs[i].done]
            if not active:
                return
            entries = []
            for slot in active:
                seq = seqs[slots[slot]]
                entries.append((seq.next_token, len(seq.prompt) + len(seq.tokens) - 1, slot, True))
            if len(entries) == 1:
                # llama.cpp multiplies a lone token's activations with other kernels
                # (gemv, not its tiled gemm) that round the adapter's float32 products
                # differently: a pad token keeps every step at two tokens. Its id follows
                # the running one (a finished or the spare sequence), since llama.cpp
                # splits a step whose sequence ids have a gap into one batch per run.
                pad = active[-1] + 1
                C.llama_memory_seq_rm(memory, pad, -1, -1)
                entries.append((entries[0][0], 0, pad, False))
            self._decode(entries)
            for index, slot in enumerate(active):
                i = slots[slot]
                token = C.llama_sampler_sample(samplers[i], self.ctx, index)
                self._accept(seqs[i], token, stop)

    def _compact(self, slots: list[int], seqs: list[Sequence], memory: Any) -> None:
        """Move running sequences into the ids of finished ones, so ids 0..m-1 run."""
        import llama_cpp as C

        running = [slot for slot, i in enumerate(slots) if not seqs[i].done]
        count = len(running)
        holes = [slot for slot in range(count) if seqs[slots[slot]].done]
        movers = [slot for slot in running if slot >= count]
        for hole, mover in zip(holes, movers, strict=True):
            C.llama_memory_seq_rm(memory, hole, -1, -1)
            C.llama_memory_seq_cp(memory, mover, hole, -1, -1)
            C.llama_memory_seq_rm(memory, mover, -1, -1)
            slots[hole], slots[mover] = slots[mover], slots[hole]
            self.stats["moves"] += 1

    def logits(self, tokens: list[int]) -> list[float]:
        """Next-token logits after `tokens`, decoded as one sequence (adapter applied)."""
        import llama_cpp as C

        self._ensure(len(tokens) + 1, 1)
        memory = C.llama_get_memory(self.ctx)
        C.llama_memory_clear(memory, True)
        entries = [(t, p, 0, p == len(tokens) - 1) for p, t in enumerate(tokens)]
        index = 0
        for start in range(0, len(entries), self.n_batch):
            chunk = entries[start : start + self.n_batch]
            self._decode(chunk)
            index = len(chunk) - 1
        row = C.llama_get_logits_ith(self.ctx, index)
        values = list(row[: C.llama_vocab_n_tokens(self.vocab)])
        C.llama_memory_clear(memory, False)
        return values
