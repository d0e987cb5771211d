"""`codeloop grpo`: a small GRPO recipe, TRL's GRPOTrainer rewarded by the sandbox.

The round's expert iteration (train on verified answers) stays codeloop's default;
this recipe is for people who train with RL and want the verifier as their reward.
It draws the curriculum's train-split tasks (never a validation or test family),
asks them through the same prompt recipe as a round, scores each group of
completions with `codeloop.reward.CodeReward`, and updates a LoRA adapter.
Resumable like the trainer: checkpoints every `save_steps`, and `--resume`
continues from the last one. `grpo.json` records the mean reward of each step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from codeloop import recipe, store
from codeloop.config import SessionConfig
from codeloop.errors import ConfigError
from codeloop.reward import CodeReward
from codeloop.tasks import curriculum
from codeloop.tasks.splits import assign_split


def curriculum_rows(config: SessionConfig, tiers: list[int], variants: int) -> list[dict[str, Any]]:
    """Prompts and specs of the curriculum's train-split tasks, in every configured language."""
    salt, fractions = config.tasks.salt, config.tasks.splits
    rows = []
    for family in curriculum.families():
        if family.tier not in tiers:
            continue
        if assign_split(f"curriculum/{family.name}", salt, fractions) != "train":
            continue
        for variant in range(variants):
            languages = config.tasks.languages
            problem = curriculum.render_problem(family, variant, config.seed, languages)
            for task in problem.tasks:
                rows.append(
                    {
                        "prompt": recipe.messages(task.with_split("train")),
                        "task": json.dumps(task.with_split("train").to_json()),
                    }
                )
    if not rows:
        raise ConfigError("grpo: no curriculum train task in the configured tiers and languages")
    return rows


def train(
    config: SessionConfig,
    model_path: str,
    output: Path,
    *,
    steps: int,
    num_generations: int = 4,
    prompts_per_step: int = 2,
    max_completion_length: int = 192,
    learning_rate: float = 1e-5,
    temperature: float = 0.8,
    save_steps: int = 2,
    tiers: tuple[int, ...] = (1,),
    variants: int = 2,
    resume: bool = False,
    scoring: str = "pass",
    contract_score: float = 0.0,
    rows: list[dict[str, Any]] | None = None,
    adapter: Path | None = None,
) -> dict[str, Any]:
    """Run `steps` GRPO steps; write the adapter and `grpo.json` to `output`.

    `rows` replaces the curriculum's train tasks (each a `prompt` plus the reward's spec
    columns). `adapter` starts from a LoRA adapter (say, the one expert iteration kept:
    first expert iteration, then RL, as published pipelines do) instead of a new one.
    Per step, `grpo.json` records the mean reward, its spread within groups
    (`reward_std`) and the share of groups whose rewards were all equal (`zero_std`):
    such a group has no advantage, so GRPO learns nothing from it.
    """
    from datasets import Dataset
    from trl import GRPOTrainer

    rows = rows if rows is not None else curriculum_rows(config, list(tiers), variants)
    dataset = Dataset.from_list(rows).shuffle(seed=config.seed)
    tokenizer, model = _load(model_path, adapter)
    hyper = {  # also recorded in grpo.json
        "num_generations": num_generations,
        "prompts_per_step": prompts_per_step,
        "learning_rate": learning_rate,
        "temperature": temperature,
    }
    args = _arguments(config, output, steps, max_completion_length, save_steps, **hyper)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=CodeReward(  # type: ignore[arg-type]
            scoring=scoring, contract_score=contract_score, sandbox=config.sandbox
        ),
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=None if adapter is not None else _lora(config),
    )
    last = _last_checkpoint(output) if resume else None
    trainer.train(resume_from_checkpoint=str(last) if last else None)
    trainer.save_model(str(output))
    report = {
        "steps": trainer.state.global_step,
        "rewards": _step_rewards(trainer.state.log_history),
        # TRL's per-step wall times, restored with the state: the training time of every
        # step, across resumed runs too
        "step_seconds": round(
            sum(float(entry.get("step_time", 0.0)) for entry in trainer.state.log_history), 1
        ),
        "tasks": len(rows),
        **hyper,
        "model": model_path,
        "seed": config.seed,
        "scoring": scoring,
        "contract_score": contract_score,
        "resumed_from": last.name if last else None,
        "adapter": str(adapter) if adapter is not None else None,
    }
    store.write_json(output / "grpo.json", report)
    return report


def _last_checkpoint(output: Path) -> Path | None:
    """The last whole checkpoint in `output`: one the Trainer wrote its
    trainer_state.json in (its last file)."""
    from codeloop.train import checkpoints

    whole = [
        folder
        for _step, folder in checkpoints.checkpoint_folders(output)
        if (folder / "trainer_state.json").is_file()
    ]
    return whole[-1] if whole else None


def _arguments(
    config: SessionConfig,
    output: Path,
    steps: int,
    max_completion_length: int,
    save_steps: int,
    *,
    num_generations: int,
    prompts_per_step: int,
    learning_rate: float,
    temperature: float,
) -> Any:
    """TRL's GRPOConfig for this recipe: a batch is `prompts_per_step` groups of
    `num_generations` completions; a log line per step, checkpoints every `save_steps`
    (two kept), float32 on CPU unless CUDA is there."""
    import torch
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(output),
        max_steps=steps,
        per_device_train_batch_size=num_generations * prompts_per_step,
        num_generations=num_generations,
        max_completion_length=max_completion_length,
        learning_rate=learning_rate,
        temperature=temperature,
        save_steps=save_steps,
        logging_steps=1,
        save_strategy="steps",
        save_total_limit=2,
        seed=config.seed,
        report_to=[name for name in config.train.report_to if name != "tensorboard"] or "none",
        use_cpu=not torch.cuda.is_available(),
        bf16=False,
        disable_tqdm=True,
    )


def _lora(config: SessionConfig) -> Any:
    """A new adapter's LoRA settings: the session's rank and alpha on every linear layer."""
    from peft import LoraConfig

    return LoraConfig(
        r=config.train.rank,
        lora_alpha=config.train.alpha,
        lora_dropout=0.0,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )


def _load(model_path: str, adapter: Path | None) -> tuple[Any, Any]:
    """The tokenizer (padding with EOS where it has no pad token) and the model in
    float32, with `adapter` loaded trainable when one is given."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path, local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(
        model_path, local_files_only=True, dtype=torch.float32
    )
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
    return tokenizer, model


def _step_rewards(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per logged step of TRL's history: its mean reward, spread, and zero-spread share."""
    return [
        {
            "step": entry["step"],
            "reward": entry["reward"],
            "reward_std": entry.get("reward_std"),
            "zero_std": entry.get("frac_reward_zero_std"),
        }
        for entry in log_history
        if "reward" in entry
    ]


def grpo_command(
    output: Path = typer.Option(..., "--output", help="Adapter folder to write (and grpo.json)."),
    steps: int = typer.Option(4, "--steps", min=1, help="GRPO optimizer steps."),
    model: str | None = typer.Option(
        None, "--model", help="Base model: bundled name or HF folder (default: engine.model)."
    ),
    num_generations: int = typer.Option(
        4, "--num-generations", min=2, help="Completions per prompt (the group GRPO compares)."
    ),
    prompts_per_step: int = typer.Option(2, "--prompts-per-step", min=1),
    max_completion_length: int = typer.Option(192, "--max-completion-length", min=8),
    learning_rate: float = typer.Option(1e-5, "--learning-rate"),
    scoring: str = typer.Option("pass", "--scoring", help="pass (1/0) or fraction (of cases)."),
    contract_score: float = typer.Option(
        0.0, "--contract-score", help="Reward share for a program that runs (codeloop.reward)."
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue from the last checkpoint."),
    config: Path | None = typer.Option(None, "--config", "-c", help="Session config TOML file."),
    preset: str | None = typer.Option(None, "--preset", "-p", help="Bundled preset."),
) -> None:
    """GRPO on the curriculum's train tasks with TRL, rewarded by the sandbox (a small recipe)."""
    from codeloop import config as session_config
    from codeloop.models import hf_folder, resolve

    settings = session_config.resolve(config, preset)
    path = str(hf_folder(resolve(model or settings.engine.model)))
    report = train(
        settings,
        path,
        output,
        steps=steps,
        num_generations=num_generations,
        prompts_per_step=prompts_per_step,
        max_completion_length=max_completion_length,
        learning_rate=learning_rate,
        resume=resume,
        scoring=scoring,
        contract_score=contract_score,
    )
    for entry in report["rewards"]:
        zero = entry["zero_std"]
        spread = "" if zero is None else f", groups without spread {zero:.0%}"
        typer.echo(f"step {entry['step']}: mean reward {entry['reward']:.3f}{spread}")
    typer.echo(f"wrote {output} and {output / 'grpo.json'}")
