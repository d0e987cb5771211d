"""The hf engine on a tiny random Llama built here, and (slow) on the bundled SmolLM2."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

from codeloop.config import BUNDLED_MODEL, EngineConfig  # noqa: E402
from codeloop.engines.hf import HFEngine, truncated  # noqa: E402
from codeloop.models import hf_folder, resolve  # noqa: E402
from codeloop.recipe import source  # noqa: E402

CONVERSATIONS = [[{"role": "user", "content": "x" * k}] for k in (1, 9, 23, 4, 15)]


@pytest.fixture(scope="module")
def tokenizer():
    folder = hf_folder(resolve(BUNDLED_MODEL))
    return transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)


def tiny_llama(tokenizer, seed: int = 0):
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
    )
    return transformers.LlamaForCausalLM(config).eval()


@pytest.fixture
def engine(tokenizer):
    torch.set_num_threads(1)
    return HFEngine(EngineConfig(batch_size=4), model=tiny_llama(tokenizer), tokenizer=tokenizer)


def texts(results) -> list[list[str]]:
    return [[completion.text for completion in row] for row in results]


def test_batched_and_one_by_one_greedy_are_identical(engine) -> None:
    batched = engine.generate(CONVERSATIONS, max_tokens=24)
    alone = [engine.generate([conversation], max_tokens=24)[0] for conversation in CONVERSATIONS]
    assert texts(batched) == texts(alone)
    assert all(row[0].tokens > 0 for row in batched)
    assert len({row[0].text for row in batched}) > 1  # different prompts, different answers


def test_seeded_sampling_is_reproducible_whatever_the_batch(engine) -> None:
    seeds = [11, 12, 13, 14, 15]
    first = engine.generate(CONVERSATIONS, max_tokens=16, temperature=1.0, seed=seeds, n=2)
    reordered = engine.generate(
        CONVERSATIONS[::-1], max_tokens=16, temperature=1.0, seed=seeds[::-1], n=2
    )[::-1]
    assert texts(first) == texts(reordered)
    assert any(row[0].text != row[1].text for row in first)  # samples of one request differ
    other = engine.generate(CONVERSATIONS, max_tokens=16, temperature=1.0, seed=99, n=2)
    assert texts(other) != texts(first)


def test_truncation_keeps_the_likely_tokens_renormalised() -> None:
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05])
    assert torch.equal(truncated(probs, 0.0, 1.0), probs)  # off: untouched
    # min_p 0.2: a token needs at least 0.2 * 0.5 = 0.1
    assert torch.allclose(truncated(probs, 0.2, 1.0), torch.tensor([0.5, 0.3, 0.15, 0]) / 0.95)
    # top_p 0.7: 0.5 alone is short of 0.7, so 0.3 joins; 0.15 starts at 0.8 and is cut
    assert torch.allclose(truncated(probs, 0.0, 0.7), torch.tensor([0.5, 0.3, 0, 0]) / 0.8)
    assert torch.allclose(truncated(probs, 0.0, 0.01), torch.tensor([1.0, 0, 0, 0]))


def test_a_tiny_top_p_samples_the_greedy_answer(tokenizer) -> None:
    torch.set_num_threads(1)
    model = tiny_llama(tokenizer)
    greedy = HFEngine(EngineConfig(batch_size=4), model=model, tokenizer=tokenizer)
    narrow = HFEngine(EngineConfig(batch_size=4, top_p=1e-6), model=model, tokenizer=tokenizer)
    wide = texts(greedy.generate(CONVERSATIONS, max_tokens=16, temperature=1.5, seed=3))
    want = texts(greedy.generate(CONVERSATIONS, max_tokens=16))
    # at temperature 1.5 the random model's samples wander; top-p keeps only the top token
    assert wide != want
    assert texts(narrow.generate(CONVERSATIONS, max_tokens=16, temperature=1.5, seed=3)) == want


def test_adapter_changes_outputs_and_unloading_restores_them(engine, tokenizer, tmp_path: Path):
    base = texts(engine.generate(CONVERSATIONS, max_tokens=16))
    lora = peft.LoraConfig(r=8, lora_alpha=64, target_modules="all-linear", init_lora_weights=False)
    peft.get_peft_model(tiny_llama(tokenizer), lora).save_pretrained(tmp_path / "adapter")
    engine.load_adapter(tmp_path / "adapter")
    adapted = texts(engine.generate(CONVERSATIONS, max_tokens=16))
    assert adapted != base
    assert engine.info()["adapter_sha256"] is not None
    engine.load_adapter(None)
    assert texts(engine.generate(CONVERSATIONS, max_tokens=16)) == base
    assert engine.info()["adapter_sha256"] is None
    engine.load_adapter(tmp_path / "adapter")  # switching back does not reload
    assert texts(engine.generate(CONVERSATIONS, max_tokens=16)) == adapted


def test_generation_stops_at_max_tokens(engine) -> None:
    result = engine.generate(CONVERSATIONS[:1], max_tokens=3)[0][0]
    assert result.tokens <= 3
    assert result.finish_reason in ("length", "stop")


@pytest.mark.slow
def test_bundled_smollm2_writes_a_python_program() -> None:
    torch.set_num_threads(2)
    engine = HFEngine(EngineConfig(model=BUNDLED_MODEL, batch_size=2, precision="float32"))
    conversation = [
        {"role": "system", "content": "Answer with one complete program in a code block."},
        {"role": "user", "content": "Write a Python program that prints hello. Use ```python."},
    ]
    [[answer]] = engine.generate([conversation], max_tokens=96)
    assert engine.info()["model"] == BUNDLED_MODEL
    assert answer.tokens > 0
    assert "print" in source(answer.text, "python")
