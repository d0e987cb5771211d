"""Building small real sessions for the loop tests: a tiny model, a pool, saved answers."""

from __future__ import annotations

import json
from pathlib import Path

from codeloop import config as session_config
from codeloop import store
from codeloop.config import BUNDLED_MODEL
from codeloop.models import hf_folder, resolve
from codeloop.tasks.pool import pool_tasks, prepare_batch

CONFIG = """
seed = 11

[engine]
kind = "replay"
replay_path = "{replay}"
max_tokens = 64
batch_size = 4

[sandbox]
workers = 2

[tasks]
languages = ["python", "javascript"]
salt = "loop-test"
batch_size = 64

[[tasks.sources]]
kind = "curriculum"
tiers = [1]
variants = 2

[round]
fresh_tasks = 6
validation_tasks = 3
samples = 1
min_free_disk_gib = 0.1
audit_every = 1
max_phase_restarts = 50

[export]
allow_replay_answers = true
replay_per_language = 8
min_examples = 2
min_per_language = 0
max_length = 1024

[train]
base_model = "{model}"
rank = 4
alpha = 8.0
steps_per_round = 2
batch_size = 1
gradient_accumulation = 1
save_steps = 1
learning_rate = 0.001

[gate]
min_net_gain = 0

[audit]
suites = ["curriculum-test"]
limit = 4
"""


def tiny_model(folder: Path) -> Path:
    """A 2-layer random Llama with SmolLM2's tokenizer, saved as a local HF folder."""
    import torch
    import transformers

    if (folder / "config.json").exists():
        return folder
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        hf_folder(resolve(BUNDLED_MODEL)), local_files_only=True
    )
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=1024,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def fence(language: str, code: str) -> str:
    return f"Here it is.\n```{language}\n{code.rstrip()}\n```\n"


def answers_for(task) -> dict[str, str]:
    """Saved answers: greedy right for half the Python tasks, fixed by correction or sample."""
    right = fence("python", task.references[0].code) if task.references else None
    wrong = {
        "python": fence("python", "print('no idea')"),
        "javascript": fence("javascript", "console.log('no idea');"),
    }[task.language]
    if task.language != "python" or right is None:
        return {"greedy": wrong, "correction": wrong, "sample-0": wrong}
    parity = int(task.id[-1], 16) % 3
    return {
        "greedy": right if parity == 0 else wrong,
        "correction": right if parity == 1 else wrong,
        "sample-0": right,
    }


def make_session(root: Path, model: Path) -> Path:
    """A session folder with its config, a validated pool and a replay file for every task."""
    replay = root / "replay.jsonl"
    text = CONFIG.format(replay=replay, model=model)
    root.mkdir(parents=True, exist_ok=True)
    config = session_config.parse(text, "loop test config")
    store.write_text(root / "config.toml", session_config.dumps(config))
    prepare_batch(root, config)
    lines = []
    for task in pool_tasks(root):
        for attempt, answer in answers_for(task).items():
            lines.append(json.dumps({"task_id": task.id, "attempt": attempt, "answer": answer}))
    replay.write_text("\n".join(lines) + "\n")
    return root


def run_round(session: Path) -> Path:
    """`codeloop run` on the session (its first round, to the end); the session."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "codeloop", "run", "--session", str(session)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return session


def finished_round(root: Path) -> Path:
    """A session (tiny model, replay answers) whose first round ran to the end."""
    return run_round(make_session(root / "session", tiny_model(root / "model")))


def generated_round(root: Path, engine: str = "hf") -> Path:
    """A session whose first round's answers a model really generated: the tiny random
    one on the hf engine, or (`engine="llamacpp"`) the bundled SmolLM2 on llama.cpp.

    Where the model passes nothing the round ends after collect (export not ready), with
    every answer asked of the model: greedy, correction and sampled, in batches."""
    session = root / "session"
    session.mkdir(parents=True, exist_ok=True)
    model = tiny_model(root / "model") if engine == "hf" else None
    text = CONFIG.format(replay=root / "unused.jsonl", model=model or "unused")
    data = session_config.parse(text, "generated round").model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    data["engine"].pop("replay_path")
    if model is not None:
        data["engine"].update(kind="hf", model=str(model), precision="float32")
    else:  # SmolLM2 passes some tasks: more rows than it can write keep export not ready
        data["engine"].update(kind="llamacpp", model=session_config.BUNDLED_MODEL)
        data["train"]["base_model"] = session_config.BUNDLED_MODEL
        data["export"]["min_examples"] = 1000
    config = session_config.validate(data, "generated round")
    store.write_text(session / "config.toml", session_config.dumps(config))
    prepare_batch(session, config)
    return run_round(session)
