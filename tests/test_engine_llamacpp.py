"""The llamacpp engine on the bundled GGUF, and the PEFT -> llama.cpp LoRA conversion.

Batched decoding is checked against decoding one request at a time: an answer must
not depend on its batch neighbours, their order, prefix sharing or the adapter
being applied to a batch. The comparisons are exact and can fail: with a unified KV
cache (or float16 cells with flash attention) llama.cpp's logits move in their last
bits with the batch, and greedy answers drift apart within a few dozen tokens.

The conversion is checked where it matters: an adapter must move llama.cpp's
next-token logits the way it moves the transformers model's (same prompt tokens,
same adapter), which a wrong tensor mapping or a missing Q/K permutation breaks.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
pytest.importorskip("llama_cpp")

from codeloop.config import BUNDLED_MODEL, EngineConfig  # noqa: E402
from codeloop.engines import lora_gguf  # noqa: E402
from codeloop.engines.llamacpp import LlamaCppEngine  # noqa: E402
from codeloop.engines.llamacpp_batch import PrefixCache  # noqa: E402
from codeloop.errors import EngineError  # noqa: E402
from codeloop.models import load, resolve  # noqa: E402
from codeloop.recipe import ends_code_block, messages  # noqa: E402

pytestmark = pytest.mark.timeout(600)
HELLO = [{"role": "user", "content": "Write a Python program that prints hello."}]
# Two languages, so two shared prefixes (system turn + worked example) in one batch.
TASKS = [
    ("python", "Read n and print the sum of the integers 1..n."),
    ("cpp", "Read a string and print it reversed."),
    ("python", "Read a list of integers and print the largest."),
    ("cpp", "Read n and print n factorial."),
]
RECIPE = [messages({"language": lang, "statement": s, "kind": "stdio"}) for lang, s in TASKS]


@pytest.fixture(scope="module")
def engine():
    engine = LlamaCppEngine(
        EngineConfig(kind="llamacpp", model=BUNDLED_MODEL, batch_size=4), n_ctx=1024, threads=2
    )
    yield engine
    engine.close()


def make_adapter(folder: Path, targets: str | list[str], rank: int = 4):
    """The transformers SmolLM2 with a random (non-zero) LoRA adapter, saved in `folder`.

    The adapter is strong on purpose: llama.cpp quantizes activations to 8 bits, so
    any perturbation adds rounding noise of a fixed size, and only a delta well above
    that noise can be compared direction for direction.
    """
    torch.set_num_threads(2)
    model, tokenizer = load(resolve(BUNDLED_MODEL))
    torch.manual_seed(0)
    config = peft.LoraConfig(
        r=rank, lora_alpha=2 * rank, target_modules=targets, init_lora_weights=False
    )
    wrapped = peft.get_peft_model(model, config)
    wrapped.save_pretrained(folder)
    return wrapped, tokenizer, folder


@pytest.fixture(scope="module")
def hf_and_adapter(tmp_path_factory):
    return make_adapter(tmp_path_factory.mktemp("adapter"), "all-linear")


def texts(results) -> list[str]:
    return [completion.text for row in results for completion in row]


def one_by_one(engine, conversations, **options) -> list[str]:
    seeds = options.pop("seed", [0] * len(conversations))
    return [
        engine.generate([c], seed=[s], **options)[0][0].text
        for c, s in zip(conversations, seeds, strict=True)
    ]


def test_generates_and_repeats_seeded_samples(engine) -> None:
    [[greedy]] = engine.generate([HELLO], max_tokens=48)
    assert greedy.text.strip() and greedy.tokens > 0
    first = engine.generate([HELLO, HELLO], max_tokens=24, temperature=0.8, seed=[3, 4])
    again = engine.generate([HELLO, HELLO], max_tokens=24, temperature=0.8, seed=[3, 4])
    assert texts(first) == texts(again)
    assert texts(first)[0] != texts(first)[1]  # two seeds, two samples
    assert engine.info()["engine"] == "llamacpp"


def test_prompts_are_the_chat_template_of_the_hf_tokenizer(engine, hf_and_adapter) -> None:
    """The tokens the earlier engine (Llama.create_chat_completion) and the hf engine feed."""
    tokenizer = hf_and_adapter[1]
    for conversation in [HELLO, *RECIPE]:
        expected = tokenizer.apply_chat_template(
            conversation, add_generation_prompt=True, tokenize=True
        )
        expected = list(expected["input_ids"] if hasattr(expected, "keys") else expected)
        assert engine.encode(conversation) == expected


def test_batched_greedy_equals_one_by_one(engine) -> None:
    moves = engine.decoder.stats["moves"]
    batched = texts(engine.generate(RECIPE, max_tokens=64))
    assert batched == one_by_one(engine, RECIPE, max_tokens=64)
    assert len(set(batched)) == len(batched)
    # Some answers ended before others, so running sequences were moved into their ids.
    assert engine.decoder.stats["moves"] > moves


def test_a_seeded_sample_ignores_its_batch_neighbours_and_their_order(engine) -> None:
    seeds = [21, 22, 23, 24]
    options = {"max_tokens": 24, "temperature": 0.9}
    batched = texts(engine.generate(RECIPE, seed=seeds, **options))
    reverse = texts(engine.generate(RECIPE[::-1], seed=seeds[::-1], **options))[::-1]
    assert batched == reverse
    assert batched == one_by_one(engine, RECIPE, seed=seeds, **options)
    # Other neighbours: the first request next to three copies of itself with other seeds.
    mixed = texts(engine.generate([RECIPE[0]] * 4, seed=[99, 21, 98, 97], **options))
    assert mixed[1] == batched[0]
    assert len(set(mixed)) > 1  # the copies did sample differently


def test_n_samples_share_their_prompt_and_stay_independent(engine) -> None:
    shared = engine.decoder.stats["shared_tokens"]
    rows = engine.generate(RECIPE[:2], max_tokens=16, temperature=0.9, seed=[5, 6], n=3)
    assert engine.decoder.stats["shared_tokens"] > shared
    flat = texts(rows)
    assert len(set(flat[:3])) > 1 and len(set(flat[3:])) > 1
    again = texts(engine.generate(RECIPE[:2], max_tokens=16, temperature=0.9, seed=[5, 6], n=3))
    assert flat == again
    # The first sample of a request is the same with n=3 as with n=1.
    alone = one_by_one(engine, RECIPE[:2], max_tokens=16, temperature=0.9, seed=[5, 6])
    assert [flat[0], flat[3]] == alone


def test_truncated_sampling_narrows_to_greedy_and_keeps_seeds(engine) -> None:
    """min-p and top-p reach llama.cpp's sampler chain: a tiny top-p (or a min-p near 1)
    keeps only the most likely token, so the samples are the greedy answers."""
    greedy = texts(engine.generate(RECIPE, max_tokens=24))
    options = {"max_tokens": 24, "temperature": 1.5, "seed": [1, 2, 3, 4]}
    wide = texts(engine.generate(RECIPE, **options))
    assert wide != greedy
    original = engine.config
    try:
        engine.config = original.model_copy(update={"top_p": 1e-6})
        assert texts(engine.generate(RECIPE, **options)) == greedy
        engine.config = original.model_copy(update={"min_p": 0.999})
        assert texts(engine.generate(RECIPE, **options)) == greedy
        engine.config = original.model_copy(update={"min_p": 0.1})
        narrowed = texts(engine.generate(RECIPE, **options))
        assert (
            narrowed
            == texts(engine.generate(RECIPE[::-1], **{**options, "seed": [4, 3, 2, 1]}))[::-1]
        )
    finally:
        engine.config = original


def test_prefix_sharing_changes_no_output(engine) -> None:
    options = {"max_tokens": 24, "temperature": 0.9, "seed": [1, 2, 3, 4]}
    before = engine.decoder.stats["shared_tokens"]
    shared = texts(engine.generate(RECIPE, **options))
    assert engine.decoder.stats["shared_tokens"] > before
    engine.share_prefix = False
    try:
        before = engine.decoder.stats["shared_tokens"]
        plain = texts(engine.generate(RECIPE, **options))
        assert engine.decoder.stats["shared_tokens"] == before
    finally:
        engine.share_prefix = True
    assert shared == plain


def test_waiting_requests_start_in_freed_streams_and_answer_as_alone(engine, monkeypatch) -> None:
    """More requests than batch_size: a waiting one starts as soon as a stream is free,
    between two steps of the others, and still answers as it does alone."""
    conversations = [*RECIPE, HELLO, *RECIPE[::-1]]
    options = {"max_tokens": 40, "temperature": 0.8, "seed": list(range(len(conversations)))}
    engine.generate(conversations, max_tokens=1)  # cached: every start is a restore
    events: list[str] = []
    admit, step = engine.decoder._admit, engine.decoder._step
    monkeypatch.setattr(engine.decoder, "_admit", lambda *a: (events.append("admit"), admit(*a))[1])
    monkeypatch.setattr(engine.decoder, "_step", lambda *a: (events.append("step"), step(*a))[1])
    moves = engine.decoder.stats["moves"]
    together = texts(engine.generate(conversations, **options))
    monkeypatch.undo()
    assert events.count("admit") == len(conversations) > engine.config.batch_size
    assert "admit" in events[events.index("step") :]
    assert engine.decoder.stats["moves"] > moves
    engine.share_prefix = False
    try:
        assert together == one_by_one(engine, conversations, **options)
    finally:
        engine.share_prefix = True


def test_a_prompt_asked_again_restores_its_cells_from_the_cache(engine) -> None:
    engine.decoder.cache.clear()
    first = texts(engine.generate(RECIPE[:1], max_tokens=24))
    shared = engine.decoder.stats["shared_tokens"]
    assert texts(engine.generate(RECIPE[:1], max_tokens=24)) == first
    restored = engine.decoder.stats["shared_tokens"] - shared
    assert restored == len(engine.encode(RECIPE[0])) - 1


def test_a_prompt_s_samples_decode_it_once_when_the_cache_is_full(engine) -> None:
    """The samples of one prompt, asked together, restore it whole from the cache even
    when proven entries fill its budget (as the languages' shared prefixes do in a
    round), where a prompt stored once used to be the first entry dropped."""
    decoder = engine.decoder
    budget = decoder.cache.budget
    prompt = len(engine.encode(RECIPE[2]))

    def decoded(keep: bool) -> tuple[int, list[str]]:
        decoder.cache.clear()
        decoder.keep_repeated = keep
        engine.generate(RECIPE[2:3], max_tokens=4)  # the prompt's cells, to size them
        size = decoder.cache.size
        decoder.cache.clear()
        decoder.cache.budget = size + size // 2  # room for one prompt, not two
        decoder.cache.put((-1,) * 40, bytearray(size), proven=True)  # shares nothing
        before = dict(decoder.stats)
        rows = engine.generate(RECIPE[2:3], max_tokens=12, temperature=0.9, seed=7, n=3)
        moved = decoder.stats["prompt_tokens"] - before["prompt_tokens"]
        moved -= decoder.stats["shared_tokens"] - before["shared_tokens"]
        return moved, texts(rows)

    try:
        kept, kept_texts = decoded(True)
        dropped, dropped_texts = decoded(False)
    finally:
        decoder.cache.budget, decoder.keep_repeated = budget, True
        decoder.cache.clear()
    assert kept == prompt + 2  # decoded once; the other two restore all but its last token
    assert dropped == 3 * prompt  # the old way: each sample decodes it again
    assert kept_texts == dropped_texts and len(set(kept_texts)) > 1


def test_cells_are_kept_as_q8_0_keys_and_values(engine) -> None:
    """The saved cells of a prompt weigh what q8_0 keys and values weigh (34 bytes per
    32 values), about half of float16's: the context is the one the notes describe."""
    import llama_cpp as C

    engine.decoder.cache.clear()
    engine.generate(RECIPE[:1], max_tokens=4)
    [(key, entry)] = engine.decoder.cache.entries.items()
    model = engine.model.model
    per_cell = C.llama_model_n_embd(model) // C.llama_model_n_head(model)
    values = C.llama_model_n_layer(model) * 2 * C.llama_model_n_head_kv(model) * per_cell
    assert values * 34 / 32 <= len(entry.data) / len(key) < values * 34 / 32 * 1.02
    assert engine.info()["kv_cache"] == "q8_0"


def test_an_unknown_kv_cache_type_is_refused_when_the_context_is_built(engine) -> None:
    from codeloop.engines.llamacpp_batch import BatchDecoder
    from codeloop.errors import EngineError

    decoder = BatchDecoder(engine.model.model, engine.model.vocab, threads=1)
    decoder.kv_type = "q4_0"
    with pytest.raises(EngineError, match="'q4_0': one of q8_0, f16"):
        decoder._ensure(256, 1)
    assert decoder.ctx is None


def test_every_step_is_one_batch_of_two_or_more_consecutive_sequences(engine, monkeypatch) -> None:
    """llama.cpp computes a lone token with other kernels (gemv, ggml's dot products
    instead of llamafile's sgemm) than two or more, and splits a batch whose sequence
    ids have gaps: both would make an answer depend on when its neighbours finished.
    The output projection too multiplies two rows or more (the pad asks for logits)."""
    steps: list[list[int]] = []
    outputs: list[int] = []
    decode = engine.decoder._decode

    def spy(entries, phase="decode"):
        if any(logits for *_rest, logits in entries):  # a step (prefill wants no logits)
            steps.append([seq for _token, _pos, seq, _logits in entries])
            outputs.append(sum(bool(logits) for *_rest, logits in entries))
        else:
            assert len({seq for _token, _pos, seq, _logits in entries}) == 1
            assert len(entries) >= 2
        return decode(entries, phase)

    monkeypatch.setattr(engine.decoder, "_decode", spy)
    engine.generate(RECIPE, max_tokens=64)
    engine.generate(RECIPE[:1], max_tokens=8)
    assert steps and any(len(ids) == 2 for ids in steps)
    for ids in steps:
        assert len(ids) >= 2 and ids == list(range(len(ids)))
    assert min(outputs) >= 2


def test_prefix_cache_lookup_and_what_it_keeps() -> None:
    system = tuple(range(100, 140))
    cache = PrefixCache(budget_bytes=300)
    cache.put((*system, 1, 2), bytearray(b"p" * 100), proven=False)
    # The longest common prefix, never a prompt's last token, never leaving exactly
    # one of its own tokens to decode, never fewer than SHARE_MIN tokens.
    assert cache.best([*system, 1, 2, 9]) == ((*system, 1, 2), 42)
    assert cache.best([*system, 1, 2]) == ((*system, 1, 2), 41)
    assert cache.best([*system, 3]) == ((*system, 1, 2), 40)
    assert cache.best([*system, 5, 6]) == ((*system, 1, 2), 39)
    assert cache.best([7] * 50) == (None, 0)
    # A prefix other prompts shared outlives prompts stored once, whatever their age.
    cache.put(system, bytearray(b"s" * 100), proven=True)
    assert cache.best([*system, 3]) == (system, 40)  # as long, and less to cut back
    cache.put((1,) * 20, bytearray(b"q" * 100), proven=False)
    cache.put((2,) * 20, bytearray(b"r" * 100), proven=False)
    assert list(cache.entries) == [system, (1,) * 20, (2,) * 20]
    assert cache.get((2,) * 20, 20) == b"r" * 100  # used whole: now proven too
    cache.put((3,) * 20, bytearray(b"t" * 100), proven=False)
    assert list(cache.entries) == [system, (2,) * 20, (3,) * 20]
    assert cache.size == 300
    cache.put((4,) * 20, bytearray(b"x" * 400), proven=False)  # larger than the budget
    assert (4,) * 20 not in cache.entries
    # Only the `recent` newest candidates are kept, even within the budget.
    roomy = PrefixCache(budget_bytes=10_000, recent=2)
    for n in range(5):
        roomy.put((n,) * 20, bytearray(10), proven=False)
    roomy.put(system, bytearray(10), proven=True)
    assert list(roomy.entries) == [(3,) * 20, (4,) * 20, system]
    roomy.get(system, 30)  # cut back: the caller keeps the shorter prefix instead
    roomy.put(system[:30], bytearray(10), proven=True)
    assert list(roomy.entries) == [(4,) * 20, system, system[:30]]


def test_generation_stops_at_the_closed_code_block(engine) -> None:
    results = engine.generate(RECIPE, max_tokens=160)
    stopped = [c for row in results for c in row if c.finish_reason == "stop"]
    assert stopped, [c.text for row in results for c in row]
    for completion in stopped:
        assert ends_code_block(completion.text)
        # Nothing after the token that closed the block, and not one token earlier.
        assert completion.text.rstrip().endswith("```")
        assert completion.text.count("```") == 2
    # A stopped answer is the same with room for more tokens.
    longer = texts(engine.generate(RECIPE, max_tokens=200))
    for index, completion in enumerate(c for row in results for c in row):
        if completion.finish_reason == "stop":
            assert longer[index] == completion.text


def _cpp_logits(engine, tokens: list[int]):
    return torch.tensor(engine.decoder.logits(tokens)).float()


def _delta_cosine(engine, hf_and_adapter, adapter_folder: Path) -> float:
    wrapped, tokenizer, _folder = hf_and_adapter
    tokens = tokenizer.apply_chat_template(HELLO, add_generation_prompt=True, tokenize=True)
    tokens = list(tokens["input_ids"] if hasattr(tokens, "keys") else tokens)
    with torch.no_grad():
        ids = torch.tensor([tokens])
        with wrapped.disable_adapter():
            hf_base = wrapped(input_ids=ids).logits[0, -1]
        hf_adapted = wrapped(input_ids=ids).logits[0, -1]
    engine.load_adapter(None)
    cpp_base = _cpp_logits(engine, tokens)
    engine.load_adapter(adapter_folder)
    cpp_adapted = _cpp_logits(engine, tokens)
    engine.load_adapter(None)
    return float(
        torch.nn.functional.cosine_similarity(hf_adapted - hf_base, cpp_adapted - cpp_base, dim=0)
    )


def test_the_engine_reads_the_base_metadata_that_gguf_reads(engine) -> None:
    """The engine converts with llama.cpp's view of the base (no second read of the
    file); it must be what gguf's reader finds in that file."""
    assert engine._base_metadata() == lora_gguf.base_metadata(engine.ref.path)
    assert engine._base_metadata()["heads"] == 9  # SmolLM2-135M: 9 query heads, 3 KV


def test_converted_adapter_moves_logits_like_the_peft_adapter(engine, hf_and_adapter) -> None:
    cosine = _delta_cosine(engine, hf_and_adapter, hf_and_adapter[2])
    assert cosine > 0.95, cosine


def test_the_qk_permutation_is_what_makes_attention_adapters_agree(
    engine, tmp_path, monkeypatch
) -> None:
    """The comparison can fail: without llama.cpp's Q/K row layout the deltas disagree."""
    attention = make_adapter(tmp_path / "qk", ["q_proj", "k_proj"])
    assert _delta_cosine(engine, attention, attention[2]) > 0.9
    config_file = attention[2] / "adapter_config.json"
    config = json.loads(config_file.read_text())
    config["codeloop_test"] = "another sha256, so a fresh conversion without the permutation"
    config_file.write_text(json.dumps(config))
    monkeypatch.setattr(lora_gguf, "_permute", lambda weights, heads: weights)
    assert _delta_cosine(engine, attention, attention[2]) < 0.8


@pytest.fixture(scope="module")
def rank8_adapter(tmp_path_factory) -> Path:
    """Rank 8, the loop's default: llama.cpp multiplies its float32 LoRA matrices with
    other kernels for one token than for several (rank 4 is too narrow for them)."""
    return make_adapter(tmp_path_factory.mktemp("rank8"), "all-linear", rank=8)[2]


def test_adapter_applies_to_batches_and_unloading_restores_them(engine, rank8_adapter) -> None:
    base = texts(engine.generate(RECIPE, max_tokens=48))
    sampled = {"max_tokens": 48, "temperature": 1.0, "seed": [7, 8, 9, 10]}
    assert engine.decoder.cache.entries
    engine.load_adapter(rank8_adapter)
    try:
        assert engine.info()["adapter_sha256"] is not None
        assert not engine.decoder.cache.entries  # cells computed without the adapter
        adapted = texts(engine.generate(RECIPE, max_tokens=48))
        assert adapted == one_by_one(engine, RECIPE, max_tokens=48)
        samples = texts(engine.generate(RECIPE, **sampled))
        assert samples == one_by_one(engine, RECIPE, **sampled)
    finally:
        engine.load_adapter(None)
    assert texts(engine.generate(RECIPE, max_tokens=48)) == base
    assert all(a != b for a, b in zip(adapted, base, strict=True))


def resident_and_mapped(path: str) -> tuple[int, int]:
    """(resident, mapped) bytes of this process's mappings of `path` (/proc/self/smaps)."""
    import os

    target, resident, mapped, inside = os.path.realpath(path), 0, 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and not fields[0].endswith(":"):  # a mapping's header line
            inside = len(fields) >= 6 and fields[5] == target
        elif inside and fields[0] == "Size:":
            mapped += int(fields[1]) << 10
        elif inside and fields[0] == "Rss:":
            resident += int(fields[1]) << 10
    return resident, mapped


def test_the_loaded_model_file_is_not_counted_twice() -> None:
    """llama.cpp reads the whole GGUF through its mapping to fill its own weight
    buffers; the engine hands those pages back, so only what is read through the
    mapping later counts against the process (about 92 MiB of it otherwise)."""
    engine = LlamaCppEngine(
        EngineConfig(kind="llamacpp", model=BUNDLED_MODEL, batch_size=2), n_ctx=256, threads=1
    )
    try:
        resident, mapped = resident_and_mapped(engine.ref.path)
        assert mapped > 80 << 20  # the weights are mapped: the measurement sees them
        assert resident < 4 << 20
        [[answer]] = engine.generate([HELLO], max_tokens=8)  # still answers from it
        assert answer.tokens > 0
    finally:
        engine.close()


def anonymous_resident() -> int:
    """Bytes of this process's resident memory that no file backs (/proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) << 10
    raise AssertionError("no RssAnon in /proc/self/status")


def test_the_kv_cache_counts_only_the_cells_in_use() -> None:
    """16 streams of 2,048 q8_0 cells are about 380 MiB of KV cache (30 layers x keys and
    values of 192 numbers at 34 bytes per 32): zeroed when the context was made, all of
    it counted in the process's memory. Short prompts write a few dozen cells a stream,
    so only their pages may count (scripts/patch_llama_cpp.py, KV_PAGES_ON_USE)."""
    engine = LlamaCppEngine(
        EngineConfig(kind="llamacpp", model=BUNDLED_MODEL, batch_size=16), n_ctx=4096, threads=2
    )
    try:
        prompts = [engine.encode(HELLO)] * 16
        before = anonymous_resident()
        rows = engine.decoder.generate(
            prompts, list(range(16)), max_tokens=[4] * 16, temperature=0.0, cells=2048
        )
        grown = anonymous_resident() - before
        assert engine.decoder.stream_cells * engine.decoder.seqs >= 16 * 2048
        assert all(row.tokens for row in rows)  # it did decode in those streams
        assert grown < 100 << 20, f"{grown >> 20} MiB"
    finally:
        engine.close()


def test_llama_cpp_prints_its_errors_and_nothing_else(engine, capfd) -> None:
    """ggml's levels: 3 a warning, 4 an error, 5 the line before it continued."""
    from codeloop.engines import llamacpp

    assert llamacpp._log_callback is not None  # installed by the engine
    for level, text in [
        (2, b"info\n"),
        (3, b"lora for 'blk.0.attn_q.weight' cannot use buft 'AMX'"),
        (5, b", fallback to CPU\n"),
        (4, b"an error"),
        (5, b" that goes on\n"),
        (3, b"a warning\n"),
    ]:
        llamacpp._log_callback(level, text, None)  # through the C callback llama.cpp calls
    assert capfd.readouterr().err == "an error that goes on\n"


# --- re-typed weights, merged adapters (engine.weights, engine.merge_adapter) ----------


@pytest.fixture(scope="module")
def merged_engine():
    engine = LlamaCppEngine(
        EngineConfig(kind="llamacpp", model=BUNDLED_MODEL, batch_size=4, merge_adapter=True),
        n_ctx=1024,
        threads=2,
    )
    yield engine
    engine.close()


def test_q8_0_weights_give_the_file_s_next_token_and_logits(engine, merged_engine) -> None:
    """The Q8_0 copy of the Q4_1 file computes what the file does: the same next token
    on every prompt and logits that agree to within quantization noise. A transposed,
    misnamed or wrongly dequantized tensor breaks both."""
    # merging adapters loads the base as the merged files' type too (Q8_0 unless set)
    assert merged_engine.path != engine.path and merged_engine.info()["weights"] == "q8_0"
    for conversation in RECIPE:
        tokens = engine.encode(conversation)
        file_logits = _cpp_logits(engine, tokens)
        typed_logits = _cpp_logits(merged_engine, tokens)
        assert int(file_logits.argmax()) == int(typed_logits.argmax())
        cosine = torch.nn.functional.cosine_similarity(file_logits, typed_logits, dim=0)
        assert cosine > 0.99, cosine


def test_q8_0_batched_greedy_equals_one_by_one(merged_engine) -> None:
    """Q8_0 weights are multiplied by llamafile's tiled sgemm where the build has it
    (scripts/patch_llama_cpp.py), whose tile shapes follow the batch: each output must
    still sum its blocks in one order, or answers would move with their neighbours."""
    batched = texts(merged_engine.generate(RECIPE, max_tokens=64))
    assert batched == one_by_one(merged_engine, RECIPE, max_tokens=64)
    assert len(set(batched)) == len(batched)


def test_a_merged_adapter_moves_logits_like_the_peft_adapter(merged_engine, hf_and_adapter) -> None:
    """Merged into re-typed weights (no run-time LoRA), the adapter still moves the
    logits the way PEFT moves the transformers model's; unloading restores the base."""
    before = merged_engine.path
    cosine = _delta_cosine(merged_engine, hf_and_adapter, hf_and_adapter[2])
    assert cosine > 0.95, cosine
    assert merged_engine.path == before and merged_engine.adapter_hash is None


def test_a_merged_file_is_built_once_per_adapter_and_type(rank8_adapter, hf_and_adapter) -> None:
    from codeloop.engines.gguf_weights import prepared_gguf

    base = resolve(BUNDLED_MODEL).path
    first = prepared_gguf(base, "q8_0", rank8_adapter)
    built = first.stat().st_mtime_ns
    assert prepared_gguf(base, "q8_0", rank8_adapter) == first  # the cache
    assert first.stat().st_mtime_ns == built
    other = prepared_gguf(base, "q8_0", hf_and_adapter[2])
    assert other != first and prepared_gguf(base, None) == Path(base)
    with pytest.raises(EngineError, match=r"engine\.weights"):
        prepared_gguf(base, "q3_x")


def test_the_config_offers_exactly_the_weight_types_the_engine_builds() -> None:
    from typing import get_args

    from codeloop.engines.gguf_weights import WEIGHT_TYPES

    annotation = EngineConfig.model_fields["weights"].annotation
    offered = {name for part in get_args(annotation) for name in get_args(part)}
    assert offered == set(WEIGHT_TYPES)


def test_a_merge_built_apart_reports_why_it_failed(rank8_adapter, tmp_path) -> None:
    """Built in a process of its own (as the engine builds it), a merge that cannot be
    made is a clear EngineError in the caller, with the child's reason, and no file."""
    import shutil

    from codeloop.engines.gguf_weights import prepared_gguf

    dora = tmp_path / "dora"
    shutil.copytree(rank8_adapter, dora)
    config = json.loads((dora / "adapter_config.json").read_text())
    (dora / "adapter_config.json").write_text(json.dumps({**config, "use_dora": True}))
    with pytest.raises(EngineError, match="DoRA adapters cannot be converted"):
        prepared_gguf(resolve(BUNDLED_MODEL).path, "q8_0", dora, apart=True)


def test_the_decoder_clocks_prompt_decode_and_sampling_apart(engine) -> None:
    """bench/engines.py splits a call's time by these clocks: each must move with its
    own work (a prompt decoded, next tokens decoded, tokens sampled)."""
    engine.decoder.cache.clear()
    before = dict(engine.decoder.stats)
    started = time.perf_counter()
    engine.generate(RECIPE[:2], max_tokens=16)
    wall = time.perf_counter() - started
    moved = {key: engine.decoder.stats[key] - before[key] for key in before}
    assert moved["prompt_tokens"] > 0 and moved["prompt_seconds"] > 0
    assert moved["decode_seconds"] > 0 and moved["sample_seconds"] > 0
    assert moved["prompt_seconds"] + moved["decode_seconds"] + moved["sample_seconds"] < wall
