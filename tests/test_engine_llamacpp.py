"""The llamacpp engine on the bundled GGUF, and the PEFT -> llama.cpp LoRA conversion.

The conversion is checked where it matters: an adapter must move llama.cpp's
next-token logits the way it moves the transformers model's (same prompt tokens,
same adapter), which a wrong tensor mapping or a missing Q/K permutation breaks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
pytest.importorskip("llama_cpp")

from codeloop.config import BUNDLED_MODEL, EngineConfig  # noqa: E402
from codeloop.engines import lora_gguf  # noqa: E402
from codeloop.engines.llamacpp import LlamaCppEngine  # noqa: E402
from codeloop.models import load, resolve  # noqa: E402

pytestmark = pytest.mark.timeout(600)
HELLO = [{"role": "user", "content": "Write a Python program that prints hello."}]


@pytest.fixture(scope="module")
def engine():
    engine = LlamaCppEngine(
        EngineConfig(kind="llamacpp", model=BUNDLED_MODEL), n_ctx=1024, threads=2
    )
    yield engine
    engine.close()


def make_adapter(folder: Path, targets: str | list[str]):
    """The transformers SmolLM2 with a random (non-zero) LoRA adapter, saved in `folder`.

    The adapter is strong on purpose: llama.cpp quantizes activations to 8 bits, so
    any perturbation adds rounding noise of a fixed size, and only a delta well above
    that noise can be compared direction for direction.
    """
    torch.set_num_threads(2)
    model, tokenizer = load(resolve(BUNDLED_MODEL))
    torch.manual_seed(0)
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=targets, init_lora_weights=False)
    wrapped = peft.get_peft_model(model, config)
    wrapped.save_pretrained(folder)
    return wrapped, tokenizer, folder


@pytest.fixture(scope="module")
def hf_and_adapter(tmp_path_factory):
    return make_adapter(tmp_path_factory.mktemp("adapter"), "all-linear")


def test_generates_and_repeats_seeded_samples(engine) -> None:
    [[greedy]] = engine.generate([HELLO], max_tokens=48)
    assert greedy.text.strip() and greedy.tokens > 0
    first = engine.generate([HELLO, HELLO], max_tokens=24, temperature=0.8, seed=[3, 4])
    again = engine.generate([HELLO, HELLO], max_tokens=24, temperature=0.8, seed=[3, 4])
    assert [r[0].text for r in first] == [r[0].text for r in again]
    assert engine.info()["engine"] == "llamacpp"


def _cpp_logits(engine, tokens: list[int]):
    import numpy as np

    engine.llm.reset()
    engine.llm.eval(tokens)
    # Without logits_all, llama-cpp-python keeps only the context's last-token logits.
    last = np.ctypeslib.as_array(engine.llm._ctx.get_logits(), shape=(engine.llm.n_vocab(),))
    return torch.tensor(last.copy()).float()


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


def test_adapter_changes_generation_and_unloading_restores_it(engine, hf_and_adapter) -> None:
    folder = hf_and_adapter[2]
    base = engine.generate([HELLO], max_tokens=24)[0][0].text
    engine.load_adapter(folder)
    adapted = engine.generate([HELLO], max_tokens=24)[0][0].text
    assert engine.info()["adapter_sha256"] is not None
    engine.load_adapter(None)
    assert engine.generate([HELLO], max_tokens=24)[0][0].text == base
    assert adapted != base
