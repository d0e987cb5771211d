"""The likelihood audit's per-task score (`likelihood.mean_logprob`) against its definition.

The scorer projects only the positions that predict a labelled token onto the
vocabulary; the definition is computed here the slow way, one forward pass per token
on its prefix alone, so an off-by-one in the kept positions cannot agree with it.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from codeloop.evaluate import likelihood  # noqa: E402


def _model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=50,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    return LlamaForCausalLM(config).eval()


def _by_definition(model: LlamaForCausalLM, ids: list[int], labels: list[int]) -> float:
    """Mean over labelled tokens t of log p(token t | tokens before t), one pass each."""
    found = []
    for t, label in enumerate(labels):
        if t == 0 or label == -100:
            continue
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids[:t]])).logits[0, -1].float()
        found.append(float(torch.log_softmax(logits, dim=-1)[label]))
    return sum(found) / len(found)


@pytest.mark.parametrize(
    "scored",
    [
        [6, 7, 8, 9],  # an answer after its prompt, as the audit scores
        [2, 5, 9],  # labelled tokens with gaps between them
    ],
)
def test_the_score_is_the_mean_log_probability_of_the_labelled_tokens(scored: list[int]) -> None:
    model = _model()
    ids = [3, 7, 11, 2, 9, 9, 4, 1, 30, 12]
    labels = [ids[t] if t in scored else -100 for t in range(len(ids))]
    expected = _by_definition(model, ids, labels)
    assert likelihood.mean_logprob(model, ids, labels) == pytest.approx(expected, abs=1e-5)
    # one position off scores other tokens, and the definition tells them apart
    shifted = [ids[t] if t - 1 in scored else -100 for t in range(len(ids))]
    assert abs(_by_definition(model, ids, shifted) - expected) > 1e-3
