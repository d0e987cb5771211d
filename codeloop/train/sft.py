"""Building TRL's SFTTrainer for a codeloop run: PEFT model, pre-encoded rows, fixed order.

Why these settings:
- rows arrive tokenized with labels (`encode_rows`), so TRL's dataset preparation
  is skipped (`skip_prepare_dataset`): the answer-only mask is codeloop's, tested
  in codeloop, and cannot change with a TRL release;
- the rows are laid out in the planned order and read sequentially
  (`train_sampling_strategy="sequential"`), so a resumed run sees the same rows;
- no mixed precision flags: the model is loaded in the run's dtype (float32 on
  CPU), and TRL's default bf16 autocast would make CPU runs slow and inexact;
- gradient checkpointing is off unless asked for: it recomputes every layer's
  activations in the backward pass, and with a 135M model memory is not the limit.
This module imports torch, transformers, peft and trl at the top; only `run` imports it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from datasets import Dataset as HFDataset
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import PrinterCallback, set_seed
from trl import SFTConfig, SFTTrainer

from codeloop.errors import ConfigError
from codeloop.train.control import RunControl
from codeloop.train.encode import Encoded
from codeloop.train.model import ModelSource, load_model, resolve_dtype
from codeloop.train.schedule import Plan


class CodeloopSFTTrainer(SFTTrainer):
    """SFTTrainer without the model card it writes into the output at every checkpoint.

    The output folder is the adapter artifact; files in it are written by codeloop's
    atomic store, and a README regenerated on every save is not one of them.
    """

    def create_model_card(self, *args: Any, **kwargs: Any) -> None:
        return None


@contextmanager
def quiet_library_warnings() -> Iterator[None]:
    """Silence two library warnings that say nothing about the run.

    PEFT 0.21 reads a property transformers 5 renamed (a FutureWarning), and on
    every save it looks for a `config.json` beside the base model, which a GGUF
    file has none of, to guess whether the vocabulary changed (it did not).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated")
        warnings.filterwarnings("ignore", message="Could not find a config file in")
        yield


def peft_model(model: Any, request: Any) -> Any:
    """Wrap `model` with a fresh LoRA adapter, or with the parent adapter made trainable.

    A parent adapter keeps its own rank and alpha (its weights have that shape); a
    config asking for another rank is refused rather than silently ignored.
    """
    train = request.train
    if request.initial_adapter is None:
        config = LoraConfig(
            r=train.rank,
            lora_alpha=train.alpha,
            lora_dropout=train.dropout,
            target_modules=train.target_modules,
            bias="none",
            task_type="CAUSAL_LM",
        )
        with quiet_library_warnings():
            return get_peft_model(model, config)
    with quiet_library_warnings():
        wrapped = PeftModel.from_pretrained(model, str(request.initial_adapter), is_trainable=True)
    parent = wrapped.peft_config["default"]
    if parent.r != train.rank or float(parent.lora_alpha) != float(train.alpha):
        raise ConfigError(
            f"{request.initial_adapter}: the parent adapter has rank {parent.r} and alpha "
            f"{parent.lora_alpha}, but train.rank = {train.rank} and train.alpha = {train.alpha}; "
            "a round continues its parent, so keep the parent's LoRA shape"
        )
    return wrapped


def build_trainer(
    request: Any,
    source: ModelSource,
    tokenizer: Any,
    encoded: Encoded,
    plan: Plan,
    control: RunControl,
) -> CodeloopSFTTrainer:
    """A ready SFTTrainer whose `train()` runs exactly `plan.steps` optimizer steps."""
    train = request.train
    dtype = resolve_dtype(request.precision)
    # Seeded before the adapter exists: LoRA A matrices are drawn at creation.
    set_seed(request.seed)
    model = peft_model(load_model(source, dtype), request)
    rows = [encoded.examples[index] for index in plan.order]
    data = HFDataset.from_dict(
        {"input_ids": [r.input_ids for r in rows], "labels": [r.labels for r in rows]}
    )
    args = SFTConfig(
        output_dir=str(request.output),
        max_steps=plan.steps,
        num_train_epochs=1,
        per_device_train_batch_size=train.batch_size,
        gradient_accumulation_steps=train.gradient_accumulation,
        learning_rate=train.learning_rate,
        lr_scheduler_type="linear",
        warmup_steps=0,
        logging_steps=1,
        save_strategy="steps",
        save_steps=train.save_steps,
        save_total_limit=2,
        seed=request.seed,
        data_seed=request.seed,
        train_sampling_strategy="sequential",
        dataset_kwargs={"skip_prepare_dataset": True},
        max_length=request.export.max_length,
        bf16=False,
        fp16=False,
        activation_checkpointing=request.gradient_checkpointing,
        use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0,
        # TensorBoard gets a fixed folder (the callback's default holds a timestamp and
        # the host name); W&B and MLflow come through the trainer's own hooks.
        report_to=[name for name in train.report_to if name != "tensorboard"] or "none",
        disable_tqdm=True,
        log_level="warning",
    )
    trainer = CodeloopSFTTrainer(
        model=model,
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
        callbacks=[control],
    )
    trainer.remove_callback(PrinterCallback)
    if "tensorboard" in train.report_to and trainer.is_world_process_zero():
        from torch.utils.tensorboard import SummaryWriter
        from transformers.integrations import TensorBoardCallback

        writer = SummaryWriter(log_dir=str(request.output / "tensorboard"))
        trainer.add_callback(TensorBoardCallback(tb_writer=writer))
    return trainer
