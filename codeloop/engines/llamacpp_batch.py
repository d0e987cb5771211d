"""Batched decoding on llama.cpp's low-level API: many sequences in one context.

Every request is one sequence of one llama.cpp context, and each decode step sends
the next token of every running sequence in one `llama_batch`, as llama.cpp's
server does with its parallel slots. The batch is continuous: when a sequence ends,
the next waiting request takes its place at once, so a step decodes `parallel`
sequences for as long as requests wait (llama.cpp's cost per step grows about
linearly with its sequences here, so a half-empty step wastes nothing but a full
one finishes the work in fewer steps of the same per-token cost). Each sequence
samples with its own sampler chain (greedy, or temperature then a `dist` sampler
seeded with the request's own seed), so a sample depends on its prompt and seed
only.

Why the context is set up the way it is (measured, see tests/test_engine_llamacpp.py):

* The KV cache is not unified: every sequence has its own stream of cells, and its
  attention reads exactly its own cells at the same offsets whether it decodes alone
  or next to others. With a unified cache a sequence's cells land at offsets that
  depend on its neighbours, the SIMD lanes of the attention sums group its values
  differently, and logits move in the last bits: batched greedy stops matching
  one-by-one greedy now and then.
* Keys and values are stored as q8_0, with flash attention (llama.cpp quantizes
  values only for flash attention). ggml's CPU flash attention has three paths, and
  for float16 caches it picks one by the shape of the micro-batch: a tiled kernel
  for 64 or more queries of one sequence, a kernel that splits a lone sequence's
  cells among the threads (and so sums in an order that depends on the thread
  count), and a one-query-at-a-time kernel otherwise. A prompt's KV values then
  depended on how it was split into micro-batches (measured:
  `test_prefix_sharing_changes_no_output` fails with float16 and flash attention).
  For quantized caches only the one-query-at-a-time kernel exists: each query's
  attention is the same computation over its own visible cells whatever shares its
  micro-batch and however many threads run. Without flash attention (float16,
  quantized keys rejected as they broke seeded samples with adapters), the KV cache
  was 90 MiB for 8 x 512 cells; q8_0 halves it (12 KB per token for SmolLM2-135M)
  and the single kernel is also faster than the matrix path was. The price: answers
  differ from float16 attention's in some tokens, as quantized weights already make
  them differ from the float32 hf engine's (bench/kv_cache.py measures pass rates).
* llama.cpp multiplies a micro-batch of one token with other kernels than two or
  more (gemv instead of its tiled gemm, for the attention of one query per sequence
  as for float32 LoRA weights; AVX-512 VNNI instead of AMX tiles for the quantized
  weights on CPUs with AMX), which need not round alike (gemv and gemm do not).
  So every step decodes exactly one token per sequence (the first step decodes the
  prompt's last token) and at least two tokens in all (a pad token in a free stream
  when one sequence is left), and a prompt's other tokens are decoded one sequence
  per call, never a token alone.
* Prompts that begin with the same tokens (one language's system turn and worked
  example; the n samples of one conversation; the same task asked again in a later
  call) decode that prefix once. After a prompt is decoded, its stream's cells are
  kept in host memory (`PrefixCache`, `llama_state_seq_get_data`); a later prompt
  with the longest common beginning restores them into its own empty stream
  (`llama_state_seq_set_data` puts them at offsets 0.., where decoding would), cuts
  them back to the common prefix and decodes the rest. The restored cells are the
  bytes its own decoding would have computed, so sharing changes no output. The
  cache lives across calls and is emptied when the adapter or the context changes.
* A finished sequence leaves the batch, and the last running sequence's cells are
  moved into its stream, so the running sequences always have ids 0..m-1 and each
  step is one micro-batch: llama.cpp splits a step whose ids have gaps into one
  micro-batch per run of consecutive ids, which is slower and, for a run of one
  token, the other kernels of the point above. The move saves and restores the
  cells, as the prefix cache does: llama.cpp only queues a `llama_memory_seq_cp`
  between streams until the next decode, where it would overwrite whatever was
  restored into the destination meanwhile.
"""

from __future__ import annotations

import ctypes
import mmap
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from codeloop.errors import EngineError

SHARE_MIN = 16
"""Fewest common prompt tokens worth sharing (a shorter prefix is decoded again)."""
State = bytearray | mmap.mmap
"""A sequence's saved cells (any writable buffer; the decoder makes mmaps)."""
CELL_ROUND = 256
"""Each sequence's KV stream grows in steps of this many cells."""
CACHE_MIB = 12
"""Default host memory for cached prompt prefixes (SmolLM2-135M: 12 KB per token with
q8_0 cells, so about 1,000 tokens: the system turn and worked example, about 2 MiB, of
the languages asked most recently, and the newest prompts). 32 MiB held all eight
languages' (about 10% faster on bench/engines.py's prompts, in a comparison by hand) for
about 20 MiB more peak RSS: the goal of a quarter of the hf engine's memory decided."""
KV_TYPE = "q8_0"
"""How the context stores keys and values (with flash attention; see the module notes).
"f16" is the previous setting (float16 cells, flash attention off), kept for
bench/kv_cache.py, which compares the two."""
KV_TYPES = ("q8_0", "f16")


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
    """Prompt tokens whose KV cells were restored from the prefix cache, not decoded."""
    next_token: int = -1
    """The sampled token this sequence decodes in the next step."""
    sampler: Any = None


def common_prefix(a: list[int] | tuple[int, ...], b: list[int] | tuple[int, ...]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def shareable(prompt: list[int], common: int, minimum: int = SHARE_MIN) -> int:
    """How many of `prompt`'s first tokens to take from a cached prefix that has
    `common` tokens in common with it (0: decode it all).

    Never the last token (the first step decodes it), and never leaving exactly one
    token of its own to decode (a lone prompt token takes other kernels)."""
    length = min(common, len(prompt) - 1)
    if len(prompt) - 1 - length == 1:
        length -= 1
    return length if length >= minimum else 0


@dataclass
class _Entry:
    data: State
    hits: int = 0


class PrefixCache:
    """Decoded prompt prefixes' KV cells (llama.cpp sequence state) in host memory.

    Keyed by their tokens. A prompt stored after decoding is only a candidate, while a
    prefix that another prompt shared (stored cut back to the common part), an entry
    used whole (the same prompt asked again), or a prompt whose next request asks it
    again (the decoder knows: a task's samples wait one after another) has proved worth
    keeping. Candidates are wanted right away (requests run in prompt order, so prompts
    that share follow each other): only the `recent` newest are kept, and they go first
    when the budget is exceeded; proven entries go least recently used first.
    """

    def __init__(self, budget_bytes: int, recent: int = 4) -> None:
        self.budget = budget_bytes
        self.recent = recent
        self.entries: OrderedDict[tuple[int, ...], _Entry] = OrderedDict()
        self.size = 0

    def clear(self) -> None:
        self.entries.clear()
        self.size = 0

    def best(self, prompt: list[int]) -> tuple[tuple[int, ...] | None, int]:
        """(key, length): the entry to restore for `prompt` and how many of its tokens
        to keep; (None, 0) when nothing is worth sharing. Among entries with the
        longest usable prefix, the shortest (least to cut back)."""
        found: tuple[int, ...] | None = None
        length = 0
        for key in self.entries:
            usable = shareable(prompt, common_prefix(key, prompt))
            shorter = found is not None and len(key) < len(found)
            if usable and (usable > length or (usable == length and shorter)):
                found, length = key, usable
        return found, length

    def get(self, key: tuple[int, ...], length: int) -> State:
        """The state of entry `key`, of which the caller keeps `length` tokens.

        Kept whole, the entry has proved itself; cut back, it becomes a candidate again:
        the caller stores the common part, which serves both prompts, and one longer
        copy of the same cells is not worth the memory of another language's prefix.
        """
        entry = self.entries[key]
        self.entries.move_to_end(key)
        entry.hits = entry.hits + 1 if length == len(key) else 0
        return entry.data

    def put(self, key: tuple[int, ...], data: State, *, proven: bool) -> None:
        """Store (or refresh) `key`; `proven`: a prefix another prompt shared."""
        if key in self.entries:
            entry = self.entries[key]
            entry.hits += proven
            self.entries.move_to_end(key)
            return
        if len(data) > self.budget:
            return
        self.entries[key] = _Entry(data, int(proven))
        self.size += len(data)
        candidates = [k for k, e in self.entries.items() if not e.hits]
        for victim in candidates[: max(0, len(candidates) - self.recent)]:
            self._drop(victim)
        while self.size > self.budget:
            victim = next((k for k, e in self.entries.items() if not e.hits), None)
            self._drop(victim if victim is not None else next(iter(self.entries)))

    def _drop(self, key: tuple[int, ...]) -> None:
        self.size -= len(self.entries.pop(key).data)


class BatchDecoder:
    """One llama.cpp context over a loaded model that decodes many sequences together."""

    def __init__(
        self,
        model: Any,
        vocab: Any,
        *,
        threads: int,
        n_batch: int = 512,
        n_ubatch: int = 512,
        cache_mib: int = CACHE_MIB,
    ) -> None:
        self.model, self.vocab = model, vocab
        self.threads = threads
        self.n_batch, self.n_ubatch = n_batch, n_ubatch
        self.ctx: Any = None
        self.stream_cells = 0
        self.seqs = 0
        self._batch: Any = None
        self._adapter: Any = None
        self.cache = PrefixCache(cache_mib << 20)
        self.kv_type = KV_TYPE  # read when the context is (re)built
        self.stats = {"prompt_tokens": 0, "shared_tokens": 0, "decode_calls": 0, "moves": 0}
        # A prompt whose next request asks it again is cached as proven, so that request
        # restores it whole: a chunk's samples of a task are sorted together, and as a
        # mere candidate the prompt was the first victim once the languages' proven
        # prefixes filled the budget, each sample decoding its task's part again
        # (bench/call_size.py; False: as before, for that comparison).
        self.keep_repeated = True
        # Where the time goes (bench/engines.py prints the split): llama_decode of prompt
        # tokens, llama_decode of the next tokens, and sampling them.
        self.stats.update(prompt_seconds=0.0, decode_seconds=0.0, sample_seconds=0.0)

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
        if self.kv_type not in KV_TYPES:
            raise EngineError(f"KV cache type {self.kv_type!r}: one of {', '.join(KV_TYPES)}")
        quantized = self.kv_type != "f16"
        params.flash_attn_type = (
            C.LLAMA_FLASH_ATTN_TYPE_ENABLED if quantized else C.LLAMA_FLASH_ATTN_TYPE_DISABLED
        )
        params.type_k = params.type_v = getattr(C, f"GGML_TYPE_{self.kv_type.upper()}")
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

        self.cache.clear()  # states are restored only into the context that made them
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
        if handle is not self._adapter:
            self.cache.clear()  # cached cells were computed with the other adapter
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

    def _decode(self, entries: list[tuple[int, int, int, bool]], phase: str = "decode") -> None:
        """Decode (token, position, sequence id, wants logits) entries in one llama_decode;
        its time counts as `phase` ("prompt" or "decode") in `stats`."""
        import llama_cpp as C

        batch = self._batch
        for i, (token, pos, seq, logits) in enumerate(entries):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = logits
        batch.n_tokens = len(entries)
        started = time.perf_counter()
        status = C.llama_decode(self.ctx, batch)
        self.stats[f"{phase}_seconds"] += time.perf_counter() - started
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
        parallel: int | None = None,
        cells: int = 0,
    ) -> list[Sequence]:
        """Decode all prompts, at most `parallel` at a time (default: all), in the order
        given, until each one ends; one Sequence per prompt. `cells`: make each stream
        at least this long, so that later, longer calls need no new context (a new
        context empties the prefix cache).

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
        parallel = max(1, min(parallel or len(seqs), len(seqs)))
        # At least two streams: a lone running sequence steps next to a pad token.
        longest = max(len(s.prompt) + s.limit for s in seqs) + 1
        self._ensure(max(longest, cells), max(2, parallel))
        memory = C.llama_get_memory(self.ctx)
        # The cells' bookkeeping only, not their values: writing zeros would make every
        # page of the cache count in the process's memory, and no cell is read before
        # it is written (scripts/patch_llama_cpp.py, KV_PAGES_ON_USE).
        C.llama_memory_clear(memory, False)
        waiting = deque(seqs)
        running: list[Sequence] = []  # running[i] decodes in stream i
        try:
            while waiting or running:
                while waiting and len(running) < parallel:
                    seq = waiting.popleft()
                    seq.sampler = self._sampler(temperature, seq.seed, min_p, top_p)
                    again = self.keep_repeated and bool(waiting) and waiting[0].prompt == seq.prompt
                    self._admit(len(running), seq, memory, share_prefix, again)
                    running.append(seq)
                self._step(running, memory, stop)
                self._compact(running, memory)
        finally:
            for seq in seqs:
                if seq.sampler is not None:
                    C.llama_sampler_free(seq.sampler)
                    seq.sampler = None
            C.llama_memory_clear(memory, False)
        return seqs

    def _admit(
        self, stream: int, seq: Sequence, memory: Any, share: bool, again: bool = False
    ) -> None:
        """Put every token of `seq`'s prompt but its last into the empty `stream`:
        restored from the prefix cache as far as it reaches, decoded from there.
        `again`: the next request asks the same prompt, so its cells are kept as proven."""
        import llama_cpp as C

        C.llama_memory_seq_rm(memory, stream, -1, -1)  # also moves the stream's head to 0
        prompt, end = seq.prompt, len(seq.prompt) - 1
        start = 0
        if share:
            key, length = self.cache.best(prompt)
            if key is not None:
                self._restore(stream, self.cache.get(key, length))
                if length < len(key):
                    # Cut back to the common part (the head moves there, so the prompt's
                    # own tokens land right after it, where they would land alone), and
                    # keep that part: it is what prompts like this one share.
                    if not C.llama_memory_seq_rm(memory, stream, length, -1):
                        raise EngineError("llama.cpp could not cut a restored prefix back")
                    self.cache.put(tuple(prompt[:length]), self._state(stream), proven=True)
                start = seq.shared = length
                self.stats["shared_tokens"] += length
        self._prefill(stream, prompt, start, end)
        if share and end >= SHARE_MIN and start < end:
            self.cache.put(tuple(prompt[:end]), self._state(stream), proven=again)
        self.stats["prompt_tokens"] += len(prompt)
        seq.next_token = prompt[-1]

    def _state(self, stream: int) -> State:
        """The KV cells of `stream` as llama.cpp serializes one sequence's state.

        In an anonymous mapping of its own, written in place: no second copy of
        megabytes, and its pages go back to the system when it is dropped (a malloc'd
        buffer of this size may stay in the heap and keep the process's RSS up).
        """
        import llama_cpp as C

        size = C.llama_state_seq_get_size(self.ctx, stream)
        data = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
        written = C.llama_state_seq_get_data(
            self.ctx, (ctypes.c_uint8 * size).from_buffer(data), size, stream
        )
        if written != size:
            raise EngineError("llama.cpp could not save a sequence's cells")
        return data

    def _restore(self, stream: int, data: State) -> None:
        import llama_cpp as C

        buffer = (ctypes.c_uint8 * len(data)).from_buffer(data)
        if C.llama_state_seq_set_data(self.ctx, buffer, len(data), stream) != len(data):
            raise EngineError("llama.cpp could not restore cached prompt cells")

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
            self._decode(
                [(tokens[p], p, seq_id, False) for p in range(start, start + piece)], "prompt"
            )
            start += piece

    def _step(self, running: list[Sequence], memory: Any, stop) -> None:
        """One llama_decode of the next token of every running sequence, then sampling."""
        import llama_cpp as C

        entries = [
            (seq.next_token, len(seq.prompt) + len(seq.tokens) - 1, stream, True)
            for stream, seq in enumerate(running)
        ]
        if len(entries) == 1:
            # llama.cpp multiplies a lone token's activations with other kernels
            # (gemv, not its tiled gemm; VNNI, not AMX tiles; ggml's dot products, not
            # llamafile's sgemm) that round its products differently: a pad token in
            # the free stream 1 keeps every step at two tokens, and the ids consecutive
            # (a step whose ids have a gap is split into one batch per run). It asks for
            # logits too, so the output projection also multiplies two rows.
            C.llama_memory_seq_rm(memory, 1, -1, -1)
            entries.append((entries[0][0], 0, 1, True))
        self._decode(entries)
        started = time.perf_counter()
        for index, seq in enumerate(running):
            self._accept(seq, C.llama_sampler_sample(seq.sampler, self.ctx, index), stop)
        self.stats["sample_seconds"] += time.perf_counter() - started

    def _compact(self, running: list[Sequence], memory: Any) -> None:
        """Drop finished sequences, moving the last running one into each freed stream,
        so the running sequences keep ids 0..m-1."""
        import llama_cpp as C

        stream = 0
        while stream < len(running):
            if not running[stream].done:
                stream += 1
                continue
            last = len(running) - 1
            if stream != last:
                # Through host memory, not llama_memory_seq_cp: a copy between streams
                # is only queued until the next llama_decode, and would then overwrite
                # whatever a restore put into the destination stream meanwhile.
                self._restore(stream, self._state(last))
                self.stats["moves"] += 1
            C.llama_memory_seq_rm(memory, last, -1, -1)
            running[stream] = running[last]
            running.pop()

    def logits(self, tokens: list[int]) -> list[float]:
        """Next-token logits after `tokens`, decoded as one sequence (adapter applied)."""
        import llama_cpp as C

        self._ensure(len(tokens) + 1, 1)
        memory = C.llama_get_memory(self.ctx)
        C.llama_memory_clear(memory, False)  # bookkeeping only, as in generate
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
