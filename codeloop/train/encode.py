"""Turning chat rows into token ids and labels: the loss falls on the answer only.

The prompt (system and user turns, and the template's `assistant` header) is what
the model is given, not what it should learn to write, so its labels are -100.
The answer's tokens, including the template's end-of-turn token, carry labels, so
the model also learns to stop. Rows longer than `max_length` are dropped, never
truncated: a truncated program is an unverified program. The drop is counted and
reported, never silent.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from codeloop.errors import ConfigError

IGNORE_INDEX = -100
"""Label of a token that does not count in the loss (PyTorch's cross-entropy default)."""


class ChatTokenizer(Protocol):
    """The slice of a Hugging Face tokenizer that encoding needs."""

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any: ...

    def __call__(self, text: str, **kwargs: Any) -> Any: ...


@dataclass(frozen=True)
class Example:
    """One encoded row: `input_ids` and `labels` of equal length."""

    task_id: str
    language: str
    input_ids: list[int]
    labels: list[int]

    @property
    def answer_tokens(self) -> int:
        return sum(1 for label in self.labels if label != IGNORE_INDEX)


@dataclass(frozen=True)
class Encoded:
    """The rows that fit, and the ones dropped as too long (task id, token count)."""

    examples: list[Example]
    dropped: list[tuple[str, int]] = field(default_factory=list)
    max_length: int = 0

    @property
    def dropped_count(self) -> int:
        return len(self.dropped)

    def languages(self) -> dict[str, int]:
        return dict(Counter(example.language for example in self.examples))

    def report(self) -> str:
        """One line for the console: kept, dropped and why."""
        line = f"{len(self.examples)} rows encoded"
        if self.dropped:
            line += (
                f", {len(self.dropped)} dropped as longer than {self.max_length} tokens "
                f"(longest {max(length for _, length in self.dropped)})"
            )
        return line


def _ids(tokenizer: ChatTokenizer, messages: list[dict[str, str]], prompt: bool) -> list[int]:
    # Render to text, then tokenize without adding special tokens: the chat template
    # already writes every special token (BOS included) it wants, as TRL does.
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=prompt)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def encode_row(tokenizer: ChatTokenizer, row: dict[str, Any]) -> Example:
    """Encode one row; labels are -100 on every token before the final assistant answer.

    The answer starts where the tokens of the prompt (rendered with the generation
    prompt) and of the whole conversation first differ; for ChatML templates that is
    exactly after `<|im_start|>assistant\\n`.
    """
    messages = [{"role": m["role"], "content": m["content"]} for m in row["messages"]]
    prompt_ids = _ids(tokenizer, messages[:-1], prompt=True)
    input_ids = _ids(tokenizer, messages, prompt=False)
    start = 0
    for a, b in zip(prompt_ids, input_ids, strict=False):
        if a != b:
            break
        start += 1
    labels = [IGNORE_INDEX] * start + input_ids[start:]
    return Example(row["task_id"], row["language"], input_ids, labels)


def encode_rows(tokenizer: ChatTokenizer, rows: list[dict[str, Any]], max_length: int) -> Encoded:
    """Encode rows with the tokenizer's chat template; drop (and count) rows over `max_length`.

    A row whose answer yields no label at all means the chat template renders the
    prompt in a way the full conversation does not continue; that is refused, since
    training on it would teach nothing and hide a broken template.
    """
    if max_length <= 0:
        raise ValueError(f"max_length must be positive, got {max_length}")
    kept: list[Example] = []
    dropped: list[tuple[str, int]] = []
    for row in rows:
        example = encode_row(tokenizer, row)
        if example.answer_tokens == 0:
            raise ConfigError(
                f"task {example.task_id}: the chat template leaves no answer token to learn; "
                "use a tokenizer whose template ends the prompt where the answer begins"
            )
        if len(example.input_ids) > max_length:
            dropped.append((example.task_id, len(example.input_ids)))
        else:
            kept.append(example)
    return Encoded(kept, dropped, max_length)
