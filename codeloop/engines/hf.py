"""The transformers + PEFT engine: any local Hugging Face model (or GGUF) on CPU or GPU.

Decoding is our own small loop over the model's KV cache rather than
`model.generate`, for two reasons the loop depends on: every request samples
from its own `torch.Generator` (so a sample depends on its seed, not on its batch
neighbours), and generation stops as soon as the answer's code block is closed.
LoRA adapters are loaded next to the base weights and switched by name, so moving
between the retained and the candidate adapter never reloads the base model.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from codeloop.config import EngineConfig
from codeloop.engines.base import Completion, Conversation, adapter_sha256, expand, regroup
from codeloop.errors import EngineError
from codeloop.models import ModelRef, load, resolve
from codeloop.recipe import ends_code_block


def truncated(probs: Any, min_p: float, top_p: float) -> Any:
    """`probs` (one row of next-token probabilities) with min-p and top-p applied.

    Unchanged when both are off, so plain temperature sampling draws exactly the same
    tokens as before these settings existed. A token that survives keeps its relative
    probability (the row is renormalised); the most likely token always survives.
    """
    import torch

    if min_p <= 0 and top_p >= 1:
        return probs
    keep = torch.ones_like(probs, dtype=torch.bool)
    if min_p > 0:
        keep &= probs >= min_p * probs.max()
    if top_p < 1:
        ordered, order = torch.sort(probs, descending=True)
        before = torch.cumsum(ordered, dim=-1) - ordered  # mass of the more likely tokens
        keep &= torch.zeros_like(keep).scatter(-1, order, before < top_p)
    kept = torch.where(keep, probs, torch.zeros_like(probs))
    return kept / kept.sum()


class HFEngine:
    """transformers model + tokenizer, batched left-padded decoding, switchable LoRA."""

    def __init__(
        self,
        config: EngineConfig,
        *,
        model: Any = None,
        tokenizer: Any = None,
        ref: ModelRef | None = None,
    ) -> None:
        import torch

        self.config = config
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.ref = ref or resolve(config.model, config.revision)
        if model is None or tokenizer is None:
            model, tokenizer = load(self.ref, config.precision, self.device)
        self.model, self.tokenizer = model, tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.adapter_path: str | None = None
        self.adapter_hash: str | None = None
        self._adapters: dict[str, str] = {}  # sha256 -> PEFT adapter name
        self.stats = {"generated_tokens": 0, "seconds": 0.0}

    # -- adapters ------------------------------------------------------------------------

    def load_adapter(self, path: str | Path | None) -> None:
        if path is None:
            self.adapter_path = self.adapter_hash = None
            return
        folder = Path(path)
        if not (folder / "adapter_config.json").exists():
            raise EngineError(f"{folder}: not a PEFT adapter folder (no adapter_config.json)")
        digest = adapter_sha256(folder)
        assert digest is not None
        if digest not in self._adapters:
            name = f"a{len(self._adapters)}"
            from peft import PeftModel

            if isinstance(self.model, PeftModel):
                self.model.load_adapter(str(folder), adapter_name=name)
            else:
                self.model = PeftModel.from_pretrained(self.model, str(folder), adapter_name=name)
            self.model.eval()
            self._adapters[digest] = name
        self.model.set_adapter(self._adapters[digest])
        self.adapter_path, self.adapter_hash = str(folder), digest

    def info(self) -> dict[str, Any]:
        return {
            "engine": "hf",
            "model": self.ref.name,
            "revision": self.ref.revision,
            "precision": str(next(self.model.parameters()).dtype).removeprefix("torch."),
            "adapter_sha256": self.adapter_hash,
        }

    def close(self) -> None:
        self.model = None

    # -- generation ----------------------------------------------------------------------

    def _encode(self, conversation: Conversation) -> list[int]:
        ids = self.tokenizer.apply_chat_template(
            conversation, add_generation_prompt=True, tokenize=True
        )
        if hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return list(ids)

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
        prompts = [self._encode(conversation) for conversation, _seed in jobs]
        sample_seeds = [job_seed for _conversation, job_seed in jobs]
        flat: list[Completion] = []
        size = self.config.batch_size
        # With adapters loaded but none selected, the base model must answer.
        base_only = bool(self._adapters) and self.adapter_hash is None
        with self.model.disable_adapter() if base_only else contextlib.nullcontext():
            for start in range(0, len(jobs), size):
                flat += self._decode(
                    prompts[start : start + size],
                    sample_seeds[start : start + size],
                    max_tokens,
                    temperature,
                )
        return regroup(flat, n)

    def _decode(
        self, prompts: list[list[int]], seeds: list[int], max_tokens: int, temperature: float
    ) -> list[Completion]:
        import torch

        started = time.monotonic()
        pad = self.tokenizer.pad_token_id
        eos = {self.tokenizer.eos_token_id, *self._extra_stops()} - {None}
        width = max(len(p) for p in prompts)
        input_ids = torch.tensor(
            [[pad] * (width - len(p)) + p for p in prompts], device=self.device
        )
        mask = torch.tensor(
            [[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.device
        )
        generators = [torch.Generator(device=self.device).manual_seed(s) for s in seeds]
        rows = len(prompts)
        tokens: list[list[int]] = [[] for _ in range(rows)]
        reasons = ["length"] * rows
        # Rows still decoding. A finished row leaves the batch (and its KV cache), so
        # the remaining rows stop paying for it: answers end at very different lengths.
        active = list(range(rows))
        past = None
        step_ids, step_mask = input_ids, mask
        with torch.inference_mode():
            for _step in range(max_tokens):
                positions = (step_mask.cumsum(-1) - 1).clamp(min=0)
                if past is not None:
                    positions = positions[:, -1:]
                out = self.model(
                    input_ids=step_ids,
                    attention_mask=step_mask,
                    position_ids=positions,
                    cache=past,
                    use_cache=True,
                    logits_to_keep=1,
                )
                past = out.cache
                logits = out.logits[:, -1, :].float()
                keep, chosen = [], []
                for slot, row in enumerate(active):
                    if temperature <= 0:
                        token = int(torch.argmax(logits[slot]))
                    else:
                        probs = torch.softmax(logits[slot] / temperature, dim=-1)
                        probs = truncated(probs, self.config.min_p, self.config.top_p)
                        token = int(torch.multinomial(probs, 1, generator=generators[row]))
                    if token in eos:
                        reasons[row] = "stop"
                        continue
                    tokens[row].append(token)
                    if "`" in self.tokenizer.decode([token]):
                        text = self.tokenizer.decode(tokens[row], skip_special_tokens=True)
                        if ends_code_block(text):
                            reasons[row] = "stop"
                            continue
                    keep.append(slot)
                    chosen.append(token)
                if not keep:
                    break
                if len(keep) < len(active):
                    index = torch.tensor(keep, device=self.device)
                    past.batch_select_indices(index)
                    step_mask = step_mask[index]
                    active = [active[slot] for slot in keep]
                step_ids = torch.tensor(chosen, device=self.device)[:, None]
                step_mask = torch.cat(
                    [step_mask, torch.ones_like(step_mask[:, :1])],
                    dim=1,
                )
        self.stats["generated_tokens"] += sum(map(len, tokens))
        self.stats["seconds"] += time.monotonic() - started
        return [
            Completion(
                text=self.tokenizer.decode(tokens[r], skip_special_tokens=True),
                tokens=len(tokens[r]),
                finish_reason=reasons[r],
            )
            for r in range(rows)
        ]

    def _extra_stops(self) -> list[int]:
        """End-of-turn tokens of chat templates (e.g. ChatML's <|im_end|>)."""
        stops = []
        for text in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>"):
            token = self.tokenizer.convert_tokens_to_ids(text)
            if isinstance(token, int) and token != self.tokenizer.unk_token_id:
                stops.append(token)
        return stops
