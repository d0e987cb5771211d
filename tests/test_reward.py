"""The sandbox as an RL reward: TRL's calling convention (and a real GRPOTrainer), verl's.

Programs run in the real sandbox; the GRPO run uses a tiny random Llama built here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.errors import ConfigError, SandboxEnvironmentError
from codeloop.reward import CodeReward, compute_score
from tests.support.loop_fixtures import fence

pytestmark = pytest.mark.timeout(900)

CASES = [{"input": "2 3\n", "output": "5\n"}, {"input": "10 -4\n", "output": "6\n"}]
RIGHT = fence("python", "a, b = map(int, input().split())\nprint(a + b)")
FIRST_ONLY = fence("python", "print(5)")
HUMANEVAL_PROMPT = 'def add(a, b):\n    """Return a + b."""\n'
HUMANEVAL_TEST = (
    "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"
)
FUNCTION_RIGHT = fence("python", "def add(a, b):\n    return a + b")
# wrong answers that try to be judged passed without being right
FUNCTION_FORGERIES = [
    fence("python", "import sys\nsys.exit(0)\ndef add(a, b):\n    return 0"),
    fence(
        "python",
        "class Same:\n    def __eq__(self, other):\n        return True\n"
        "def add(a, b):\n    return Same()",
    ),
    fence("python", "def add(a, b):\n    print('PASSED')\n    return 0\nassert True"),
]


def stdio_columns(count: int) -> dict[str, list]:
    return {"language": ["python"] * count, "cases": [json.dumps(CASES)] * count}


def test_trl_convention_stdio_scores_pass_format_and_fraction() -> None:
    completions = [RIGHT, FIRST_ONLY, "no code at all", fence("python", "print(6)")]
    reward = CodeReward(format_score=-0.5)
    assert reward.__name__ == "codeloop_pass"
    assert reward(prompts=["p"] * 4, completions=completions, **stdio_columns(4)) == [
        1.0,
        0.0,
        -0.5,
        0.0,
    ]
    fraction = CodeReward(scoring="fraction")
    assert fraction(prompts=["p"] * 4, completions=completions, **stdio_columns(4)) == [
        1.0,
        0.5,  # the first of two cases
        0.0,
        0.5,  # the second: every case runs, not the prefix before the first failure
    ]


def test_the_contract_term_pays_a_program_that_runs_never_as_much_as_a_right_one() -> None:
    crash = fence("python", "a, b = map(int, input().split())\nprint(a // 0)")
    unparsable = fence("python", "print(")
    empty = fence("python", "pass")  # format alone: runs, prints nothing
    completions = [RIGHT, FIRST_ONLY, crash, unparsable, empty, "no code at all"]
    columns = stdio_columns(len(completions))
    assert CodeReward(contract_score=0.1, format_score=-0.2)(
        completions=completions, **columns
    ) == pytest.approx([1.0, 0.1, 0.0, 0.0, 0.1, -0.2])
    # with fraction scoring the cases passed fill the rest: 0.2 + 0.8 * 1/2
    assert CodeReward(scoring="fraction", contract_score=0.2)(
        completions=completions, **columns
    ) == pytest.approx([1.0, 0.6, 0.0, 0.0, 0.2, 0.0])
    # a function test's wrong answer honours the interface; forgeries still earn no pass
    wrong = fence("python", "def add(a, b):\n    return a - b")
    function = CodeReward(contract_score=0.1)(
        completions=[FUNCTION_RIGHT, wrong, *FUNCTION_FORGERIES],
        language=["python"] * 5,
        test=[HUMANEVAL_TEST + "\ncheck(add)\n"] * 5,
        prompt=[HUMANEVAL_PROMPT] * 5,
        entry_point=["add"] * 5,
    )
    assert function[:2] == pytest.approx([1.0, 0.1])
    assert all(value < 1.0 for value in function[2:])
    for bad in (1.0, -0.1):
        with pytest.raises(ConfigError, match="contract_score"):
            CodeReward(contract_score=bad)


def test_conversational_completions_and_function_tests_resist_forgery() -> None:
    texts = [FUNCTION_RIGHT, *FUNCTION_FORGERIES]
    completions = [[{"role": "assistant", "content": text}] for text in texts]
    n = len(texts)
    columns = {
        "language": ["python"] * n,
        "test": [HUMANEVAL_TEST + "\ncheck(add)\n"] * n,
        "prompt": [HUMANEVAL_PROMPT] * n,
        "entry_point": ["add"] * n,
    }
    rewards = CodeReward()(
        prompts=[[{"role": "user", "content": "x"}]] * n, completions=completions, **columns
    )
    assert rewards == [1.0] + [0.0] * len(FUNCTION_FORGERIES)


def test_a_codeloop_task_row_is_scored_like_the_loop() -> None:
    from codeloop.config import load_preset
    from codeloop.evaluate.suites import suite_tasks

    task = next(
        t for t in suite_tasks(load_preset("cpu-demo"), "curriculum-test") if t.language == "python"
    )
    right = fence("python", task.references[0].code)
    rewards = CodeReward()(completions=[right, RIGHT], task=[json.dumps(task.to_json())] * 2)
    assert rewards[0] == 1.0 and rewards[1] == 0.0


def test_an_environment_error_is_never_a_zero() -> None:
    # no toolchain (or known-good program) exists for this language: the machine cannot check
    columns = {"language": ["cobol"], "cases": [json.dumps(CASES)]}
    completion = [fence("cobol", "DISPLAY '5'.")]
    with pytest.raises(SandboxEnvironmentError, match="known-good"):
        CodeReward()(completions=completion, **columns)
    assert CodeReward(on_environment_error="none")(completions=completion, **columns) == [None]


def test_a_worker_dying_during_an_honest_check_is_never_a_zero() -> None:
    """The worker is killed during the right program's check, twice (the pool's own retry
    dies too): the evaluator re-runs it on a fresh worker and the reward is 1.0 (before,
    the probe passed and the completion got 0.0 as 'imitating a sandbox error')."""
    from codeloop.config import SandboxConfig
    from codeloop.sandbox.pool import get_pool
    from tests.support.worker_kills import DOUBLE_CASES, SLOW_DOUBLE, kill_workers_mid_check

    reward = CodeReward(sandbox=SandboxConfig(workers=1))
    columns = {"language": ["python"], "cases": [json.dumps(DOUBLE_CASES)]}
    watcher, killed = kill_workers_mid_check(get_pool("bwrap", 1), 2)
    assert reward(completions=[fence("python", SLOW_DOUBLE)], **columns) == [1.0]
    watcher.join(timeout=5)
    assert len(killed) == 2


def test_a_task_error_gets_no_reward_value() -> None:
    """A row whose own test cannot give a verdict (`task_error`) is never 0: it raises, or
    is None for TRL."""
    from codeloop.sandbox import Check, CheckRequest

    request = CheckRequest(language="python", program="x = 1\n", test="pass\n")
    check = Check(status="environment_error", feedback="never called", task_error=True)
    with pytest.raises(SandboxEnvironmentError, match="cannot give a verdict"):
        CodeReward()._value(request, check)
    assert CodeReward(on_environment_error="none")._value(request, check) is None


def test_verl_compute_score_single_and_batched() -> None:
    truth = {"language": "python", "cases": CASES}
    assert compute_score("codeloop", RIGHT, json.dumps(truth)) == 1.0
    assert compute_score("codeloop", FIRST_ONLY, truth, {"index": 0}) == 0.0
    assert compute_score("codeloop", [RIGHT, FIRST_ONLY], [truth, truth]) == [1.0, 0.0]


def test_grpo_trainer_runs_two_steps_with_the_sandbox_reward(tmp_path: Path) -> None:
    """The real GRPOTrainer calls our reward (tiny model, CPU); the recipe records rewards."""
    from codeloop import store
    from codeloop.config import load_preset
    from codeloop.reward.grpo import train
    from tests.support.loop_fixtures import tiny_model

    config = load_preset("cpu-demo")
    config.tasks.languages = ["python"]
    model = tiny_model(tmp_path / "model")
    report = train(
        config,
        str(model),
        tmp_path / "grpo",
        steps=2,
        num_generations=2,
        prompts_per_step=1,
        max_completion_length=16,
        save_steps=1,
    )
    assert report["steps"] == 2
    assert [entry["step"] for entry in report["rewards"]] == [1, 2]
    # random weights never answer: every group's rewards are equal, so no advantage
    assert all(entry["reward"] == 0.0 for entry in report["rewards"])
    assert all(entry["zero_std"] == 1.0 for entry in report["rewards"])
    assert store.read(tmp_path / "grpo" / "grpo.json")["rewards"] == report["rewards"]
    assert (tmp_path / "grpo" / "adapter_model.safetensors").is_file()
    resumed = train(
        config,
        str(model),
        tmp_path / "grpo",
        steps=3,
        num_generations=2,
        prompts_per_step=1,
        max_completion_length=16,
        save_steps=1,
        resume=True,
    )
    assert resumed["resumed_from"] == "checkpoint-2" and resumed["steps"] == 3


def test_grpo_learns_from_groups_whose_rewards_differ(tmp_path: Path) -> None:
    """A tiny model taught to answer one task, sampled hot, sometimes solves it: the
    sandbox's rewards then differ within a group, and GRPO moves the adapter (its
    lora_B matrices start at zero and stay there without an advantage)."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from codeloop.config import load_preset
    from codeloop.reward.grpo import train
    from tests.support.train_models import build_model

    folder = build_model(tmp_path / "model")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    prompt = [{"role": "user", "content": "Write a program that adds 1."}]
    answer = fence("python", "print(1)")

    def tokens(messages: list[dict[str, str]], **options: bool) -> list[int]:
        text = tokenizer.apply_chat_template(messages, tokenize=False, **options)
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    asked = tokens(prompt, add_generation_prompt=True)
    whole = tokens([*prompt, {"role": "assistant", "content": answer}])
    ids = torch.tensor([whole])
    labels = ids.clone()
    labels[0, : len(asked)] = -100  # learn the answer only
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(120):  # enough that hot samples are sometimes right, not always
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.save_pretrained(tmp_path / "taught")
    tokenizer.save_pretrained(tmp_path / "taught")

    config = load_preset("cpu-demo")
    row = {"prompt": prompt, "language": "python", "cases": '[{"input": "", "output": "1\\n"}]'}

    def grpo(folder: str, steps: int, adapter: Path | None = None) -> dict:
        return train(
            config,
            str(tmp_path / "taught"),
            tmp_path / folder,
            steps=steps,
            num_generations=8,
            prompts_per_step=1,
            max_completion_length=len(whole) - len(asked) + 8,
            learning_rate=1e-2,
            temperature=1.0,
            save_steps=10,
            rows=[row] * 8,
            adapter=adapter,
        )

    report = grpo("grpo", steps=3)
    assert any(entry["zero_std"] < 1.0 for entry in report["rewards"]), report["rewards"]
    assert any(0.0 < entry["reward"] < 1.0 for entry in report["rewards"]), report["rewards"]
    weights = load_file(tmp_path / "grpo" / "adapter_model.safetensors")
    moved = [
        name for name, tensor in weights.items() if "lora_B" in name and tensor.abs().sum() > 0
    ]
    assert moved, "no lora_B matrix moved from zero"

    # RL after expert iteration: GRPO continues from an adapter instead of a new one
    again = grpo("again", steps=2, adapter=tmp_path / "grpo")
    assert again["adapter"] == str(tmp_path / "grpo")
    continued = load_file(tmp_path / "again" / "adapter_model.safetensors")
    assert set(continued) == set(weights)  # the same adapter's matrices, trained further
    assert any(entry["zero_std"] < 1.0 for entry in again["rewards"]), again["rewards"]
    assert any(not torch.equal(continued[name], weights[name]) for name in weights)


def test_the_async_reward_is_awaited_by_trl_and_scores_as_the_sync_one() -> None:
    import asyncio

    from trl.trainer.utils import is_async_callable

    from codeloop.reward import AsyncCodeReward

    assert is_async_callable(AsyncCodeReward()) and not is_async_callable(CodeReward())
    completions = [RIGHT, FIRST_ONLY, "no code at all"]
    columns = stdio_columns(3)
    sync = CodeReward(scoring="fraction", format_score=-1.0)(completions=completions, **columns)
    reward = AsyncCodeReward(scoring="fraction", format_score=-1.0)
    assert asyncio.run(reward(completions=completions, **columns)) == sync == [1.0, 0.5, -1.0]
