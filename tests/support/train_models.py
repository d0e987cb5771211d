"""Shared builders for the trainer tests: a tiny chat model made on the spot, and datasets.

No hub, no mocks: the tokenizer is a real byte-level BPE trained here on a few
strings and given a ChatML template; the model is a real 2-layer Llama with
hidden size 32, saved as a Hugging Face folder, so the trainer loads it exactly
as it loads any local model. This module holds no tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codeloop import store
from codeloop.config import ExportConfig, TrainConfig

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

PROGRAMS = {
    "python": "import sys\nprint(sum(map(int, sys.stdin.read().split())) + {k})\n",
    "c": '#include <stdio.h>\nint main(void){{long s={k},x;while(scanf("%ld",&x)==1)s+=x;'
    'printf("%ld\\n",s);}}\n',
}


def build_tokenizer(folder: Path) -> Any:
    """Train a byte-level BPE (vocab 400) on program-like text and save it with ChatML."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    corpus = [program.format(k=k) for program in PROGRAMS.values() for k in range(10)]
    corpus += [f"system\nuser\nassistant\nWrite a program that adds {k}." for k in range(10)]
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(corpus, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    tokenizer.chat_template = CHATML
    tokenizer.save_pretrained(folder)
    return tokenizer


def save_llama(folder: Path, tokenizer: Any, **overrides: Any) -> Path:
    """A seeded 2-layer Llama (hidden 32 unless overridden) for `tokenizer`, saved to `folder`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    settings = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 256,
        "tie_word_embeddings": True,
        **overrides,
    }
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **settings,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def build_model(folder: Path) -> Path:
    """A 2-layer Llama (hidden 32) with the test tokenizer, saved as an HF folder."""
    return save_llama(folder, build_tokenizer(folder))


def make_row(index: int, language: str, **changes: Any) -> dict[str, Any]:
    """One verified train row in the export format."""
    row = {
        "task_id": f"adds-{index}-{language}",
        "language": language,
        "split": "train",
        "messages": [
            {"role": "system", "content": "You write complete programs."},
            {"role": "user", "content": f"Write a {language} program that adds {index % 10}."},
            {"role": "assistant", "content": PROGRAMS[language].format(k=index % 10)},
        ],
        "verification": {"kind": "local_execution", "passed": True},
        "provenance": {"dataset": "test", "revision": "0", "source_row_sha256": "0" * 64},
    }
    row.update(changes)
    return row


def make_rows(per_language: int, languages: tuple[str, ...] = ("python", "c")) -> list[dict]:
    return [make_row(i, lang) for i in range(per_language) for lang in languages]


def write_dataset(folder: Path, items: list[dict[str, Any]], **manifest: Any) -> Path:
    """Write `train.jsonl` and its manifest as the export phase does; returns the dataset."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "train.jsonl"
    store.write_text(data, "".join(json.dumps(row) + "\n" for row in items))
    counts: dict[str, int] = {}
    for row in items:
        counts[row["language"]] = counts.get(row["language"], 0) + 1
    info = {
        "split": "train",
        "verification": "local_execution",
        "rows": len(items),
        "languages": counts,
        "dataset_sha256": store.sha256_file(data),
        **manifest,
    }
    store.write_json(Path(f"{data}.manifest.json"), info)
    return data


def settings(**train: Any) -> tuple[TrainConfig, ExportConfig]:
    """Small, fast training settings for the tiny model."""
    values = {
        "rank": 4,
        "alpha": 8.0,
        "dropout": 0.1,
        "learning_rate": 1e-2,
        "steps_per_round": 8,
        "max_epochs": 100.0,
        "batch_size": 2,
        "gradient_accumulation": 2,
        "save_steps": 2,
    }
    values.update(train)
    return TrainConfig(**values), ExportConfig(min_examples=4, min_per_language=1, max_length=256)
