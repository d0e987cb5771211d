"""The sandbox as an RL reward: TRL's calling convention (and a real GRPOTrainer), verl's.

Programs run in the real sandbox; the GRPO run uses a tiny random Llama built here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.errors import SandboxEnvironmentError
from codeloop.reward import CodeReward, compute_score
from tests.loop_fixtures import fence

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
        0.0,
    ]


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
    from codeloop.evaluate.task_suites import suite_tasks

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
    from tests.test_eval_tasks import DOUBLE_CASES, SLOW_DOUBLE, kill_workers_mid_check

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
    from codeloop.grpo import train
    from tests.loop_fixtures import tiny_model

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
    assert all(entry["reward"] == 0.0 for entry in report["rewards"])  # random weights
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
