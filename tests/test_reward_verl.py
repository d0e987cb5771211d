"""`compute_score` as verl calls it: through verl's own reward managers, on a DataProto.

verl 0.9.1 does not install beside this project's pins (it would upgrade
transformers), so `scripts/setup.sh` installs the reward managers' import closure
(verl, tensordict, pyvers, cloudpickle, omegaconf; no dependencies) into a folder
of its own, `.venv/verl-pkgs`, and this test runs verl from there in a subprocess.
Both managers are pinned: "naive" calls `compute_score(data_source=...,
solution_str=..., ground_truth=..., extra_info=...)` once per completion, "batch"
calls it once with `data_sources`, `solution_strs`, `ground_truths`, `extra_infos`.
The programs run in the real sandbox.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VERL = Path(sys.prefix) / "verl-pkgs"

SCRIPT = r"""
import json, sys
import numpy as np
import torch
import transformers
from verl import DataProto
from verl.workers.reward_manager.batch import BatchRewardManager
from verl.workers.reward_manager.naive import NaiveRewardManager

from codeloop.config import BUNDLED_MODEL
from codeloop.models import hf_folder, resolve
from codeloop.reward import SandboxEnvironmentError, compute_score

tokenizer = transformers.AutoTokenizer.from_pretrained(
    hf_folder(resolve(BUNDLED_MODEL)), local_files_only=True
)
rows = json.loads(sys.stdin.read())


def batch(rows):
    prompts = [tokenizer.encode(row["prompt"]) for row in rows]
    answers = [tokenizer.encode(row["completion"]) for row in rows]
    width_p = max(map(len, prompts))
    width_r = max(map(len, answers))
    pad = tokenizer.pad_token_id or 0
    prompt_ids, response_ids, mask = [], [], []
    for prompt, answer in zip(prompts, answers):
        # verl's layout: prompts left-padded, responses right-padded
        prompt_ids.append([pad] * (width_p - len(prompt)) + prompt)
        response_ids.append(answer + [pad] * (width_r - len(answer)))
        mask.append([0] * (width_p - len(prompt)) + [1] * (len(prompt) + len(answer))
                    + [0] * (width_r - len(answer)))
    return DataProto.from_dict(
        tensors={
            "prompts": torch.tensor(prompt_ids),
            "responses": torch.tensor(response_ids),
            "attention_mask": torch.tensor(mask),
        },
        non_tensors={
            "data_source": np.array(["codeloop"] * len(rows), dtype=object),
            "reward_model": np.array(
                [{"ground_truth": row["ground_truth"]} for row in rows], dtype=object
            ),
            "extra_info": np.array([{"index": i} for i in range(len(rows))], dtype=object),
        },
    )


def last_rewards(tensor, data):
    lengths = data.batch["attention_mask"][:, data.batch["prompts"].shape[-1]:].sum(-1)
    return [float(tensor[i, lengths[i] - 1]) for i in range(len(lengths))] + [
        float(tensor.sum())
    ]


out = {}
data = batch(rows["scored"])
naive = NaiveRewardManager(tokenizer, num_examine=0, compute_score=compute_score)
out["naive"] = last_rewards(naive(data), data)
data = batch(rows["scored"])
batched = BatchRewardManager(tokenizer, num_examine=0, compute_score=compute_score)
out["batch"] = last_rewards(batched(data), data)
for name, manager in (("naive", naive), ("batch", batched)):
    try:
        manager(batch(rows["no_verdict"]))
        out[name + "_no_verdict"] = "returned"
    except SandboxEnvironmentError as error:
        out[name + "_no_verdict"] = "raised: " + str(error)[:200]
print(json.dumps(out))
"""


def _fenced(code: str) -> str:
    return f"Here it is:\n```python\n{code}```\n"


CASES = [{"input": "2 3\n", "output": "5\n"}, {"input": "10 -4\n", "output": "6\n"}]
SUM = {"language": "python", "cases": CASES}
NO_VERDICT = {  # a function test that never calls the solution: no verdict at all
    "language": "python",
    "prompt": "def add(a, b):\n",
    "test": "def check(candidate):\n    pass\n\ncheck(add)\n",
    "entry_point": "add",
}


@pytest.mark.skipif(
    not VERL.is_dir(), reason=f"verl's reward managers are not installed in {VERL} (make test)"
)
def test_verl_reward_managers_call_compute_score() -> None:
    rows = {
        "scored": [
            {
                "prompt": "Read two integers and print their sum.",
                "completion": _fenced("a, b = map(int, input().split())\nprint(a + b)\n"),
                "ground_truth": json.dumps(SUM),
            },
            {
                "prompt": "Read two integers and print their sum.",
                "completion": _fenced("print(5)\n"),
                "ground_truth": SUM,
            },
            {
                "prompt": "Read two integers and print their sum.",
                "completion": _fenced("import sys\nsys.exit(0)\n"),
                "ground_truth": json.dumps(SUM),
            },
        ],
        "no_verdict": [
            {
                "prompt": "Write add(a, b).",
                "completion": _fenced("def add(a, b):\n    return a + b\n"),
                "ground_truth": json.dumps(NO_VERDICT),
            }
        ],
    }
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(VERL)])}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        input=json.dumps(rows),
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    # The reward sits on each response's last valid token, nowhere else: right 1, wrong 0,
    # an early exit 0 (no output is no pass).
    assert out["naive"] == [1.0, 0.0, 0.0, 1.0]
    assert out["batch"] == out["naive"]
    # No verdict is never a 0 in verl's reward tensor: compute_score raises, and both
    # managers let it through to the trainer.
    for name in ("naive", "batch"):
        assert out[f"{name}_no_verdict"].startswith("raised:"), out
        assert "cannot give a verdict" in out[f"{name}_no_verdict"]
