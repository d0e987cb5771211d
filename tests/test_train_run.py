"""Training a tiny real model: loss falls, SIGKILL + resume repeats an uninterrupted run,
a pause file or SIGTERM checkpoints and exits 0, a parent adapter is continued.

The model is a 2-layer Llama built in the test (see tests/support/train_models.py); every run
uses one torch thread, here and in the CLI subprocesses, so the runs compare exactly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codeloop import store  # noqa: E402
from codeloop.engines.base import adapter_sha256  # noqa: E402
from codeloop.errors import ConfigError, IntegrityError  # noqa: E402
from codeloop.train import checkpoints  # noqa: E402
from codeloop.train.trainer import TrainRequest, run  # noqa: E402
from tests.support.train_models import build_model, make_rows, settings, write_dataset  # noqa: E402

SEED = 11
STEPS = 8


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("train")
    return {
        "root": root,
        "model": build_model(root / "model"),
        "data": write_dataset(root / "data", make_rows(6)),
    }


def request(world: dict[str, Path], output: Path, **changes) -> TrainRequest:
    train, export = settings(steps_per_round=STEPS)
    values = dict(
        dataset=world["data"],
        output=output,
        base=str(world["model"]),
        train=train,
        export=export,
        languages=["python", "c"],
        seed=SEED,
        precision="float32",
        echo=False,
    )
    values.update(changes)
    return TrainRequest(**values)


def cli_args(world: dict[str, Path], output: Path, *extra: str) -> list[str]:
    """The CLI spelling of `request(world, output)`: same settings, same binding."""
    train, export = settings(steps_per_round=STEPS)
    return [
        sys.executable, "-m", "codeloop", "train",
        "--dataset", str(world["data"]), "--output", str(output),
        "--base", str(world["model"]), "--seed", str(SEED), "--threads", "1",
        "--precision", "float32", "--languages", "python,c",
        "--rank", str(train.rank), "--alpha", str(train.alpha), "--dropout", str(train.dropout),
        "--learning-rate", str(train.learning_rate), "--max-steps", str(train.steps_per_round),
        "--max-epochs", str(train.max_epochs), "--batch-size", str(train.batch_size),
        "--gradient-accumulation", str(train.gradient_accumulation),
        "--save-steps", str(train.save_steps), "--max-length", str(export.max_length),
        "--min-examples", str(export.min_examples),
        "--min-per-language", str(export.min_per_language),
        *extra,
    ]  # fmt: skip


def weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter_model.safetensors"))


def assert_same_weights(a: Path, b: Path) -> None:
    left, right = weights(a), weights(b)
    assert left.keys() == right.keys() and left
    for name in left:
        assert torch.allclose(left[name], right[name], rtol=1e-5, atol=1e-6), name


def wait_for(predicate, process: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"trainer exited early ({process.returncode}):\n{out}\n{err}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("trainer did not get there in time")
        time.sleep(0.01)


@pytest.fixture(scope="module")
def reference(world: dict[str, Path]) -> Path:
    """One uninterrupted run that the interrupted ones must reproduce."""
    output = world["root"] / "reference"
    outcome = run(request(world, output))
    assert outcome.status == "completed" and outcome.steps == STEPS
    return output


def test_loss_falls_and_the_adapter_and_report_are_written(
    world: dict[str, Path], reference: Path
) -> None:
    report = store.read(reference / "training.json")
    losses = [entry["loss"] for entry in report["loss"]]
    assert [entry["step"] for entry in report["loss"]] == list(range(1, STEPS + 1))
    assert sum(losses[-2:]) / 2 < losses[0] - 0.05, losses
    assert report["steps"] == STEPS and report["seed"] == SEED
    assert report["dataset_sha256"] == store.sha256_file(world["data"])
    assert report["examples"] == STEPS * 4 and report["epochs"] == pytest.approx(32 / 12)
    assert report["tokens"] > report["answer_tokens"] > 0
    assert report["tokens_per_s"] > 0 and report["train_seconds"] > 0
    assert report["base_model"]["model_type"] == "llama"
    assert report["lora"]["r"] == 4 and report["dataset"]["dropped_too_long"] == 0
    assert report["adapter_sha256"] == store.sha256_file(reference / "adapter_model.safetensors")
    assert (reference / "adapter_config.json").is_file()
    assert not checkpoints.checkpoint_folders(reference)  # removed once the adapter is final
    # the same loss curve went to TensorBoard (train.report_to's default)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(reference / "tensorboard"))
    events.Reload()
    logged = events.Scalars("train/loss")
    assert [event.step for event in logged] == list(range(1, STEPS + 1))
    assert [event.value for event in logged] == pytest.approx(losses, rel=1e-4)


def test_a_finished_run_is_recognised_not_repeated(world: dict[str, Path], reference: Path) -> None:
    before = store.sha256_file(reference / "adapter_model.safetensors")
    outcome = run(request(world, reference))
    assert outcome.status == "already-done"
    assert store.sha256_file(reference / "adapter_model.safetensors") == before


def test_a_run_killed_by_sigkill_resumes_to_the_same_weights(
    world: dict[str, Path], reference: Path, tmp_path: Path
) -> None:
    output = tmp_path / "adapter"
    process = subprocess.Popen(
        cli_args(world, output), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    marker = output / "checkpoint-4" / checkpoints.MARKER
    wait_for(marker.exists, process)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    assert not (output / "training.json").exists(), "the run finished before it was killed"

    with pytest.raises(IntegrityError, match="pass --resume"):
        run(request(world, output))
    with pytest.raises(IntegrityError, match="differ: seed"):
        run(request(world, output, resume=True, seed=SEED + 1))
    latest = checkpoints.latest_complete(output)
    assert latest is not None and 4 <= latest[1]["step"] < STEPS
    halfway = weights(latest[0])
    stale = output / ".adapter-killed"  # as a kill while the adapter was written leaves it
    stale.mkdir()
    (stale / "adapter_config.json").write_text("{}")
    outcome = run(request(world, output, resume=True))
    assert not stale.exists()
    assert outcome.status == "completed" and outcome.steps == STEPS
    report = store.read(output / "training.json")
    final = weights(output)
    assert any(not torch.equal(halfway[name], final[name]) for name in final)
    assert Path(report["resumed_from"]).name.startswith("checkpoint-")
    assert int(Path(report["resumed_from"]).name.split("-")[1]) >= 4
    assert [e["step"] for e in report["loss"]] == list(range(1, STEPS + 1))
    assert_same_weights(output, reference)


def test_a_pause_file_checkpoints_exits_0_and_the_resumed_run_finishes(
    world: dict[str, Path], reference: Path, tmp_path: Path
) -> None:
    output = tmp_path / "adapter"
    pause = tmp_path / "PAUSE"
    pause.touch()
    result = subprocess.run(
        cli_args(world, output, "--pause-file", str(pause)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "paused at step 1/8" in result.stdout
    assert (output / "checkpoint-1" / checkpoints.MARKER).is_file()
    assert not (output / "training.json").exists()

    pause.unlink()
    outcome = run(request(world, output, resume=True, pause_file=pause))
    assert outcome.status == "completed" and outcome.steps == STEPS
    assert_same_weights(output, reference)


def test_sigterm_checkpoints_and_exits_0(world: dict[str, Path], tmp_path: Path) -> None:
    output = tmp_path / "adapter"
    process = subprocess.Popen(
        cli_args(world, output), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    wait_for((output / "progress.json").exists, process)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "paused at step" in out and "SIGTERM" in out
    latest = checkpoints.latest_complete(output)
    assert latest is not None and latest[1]["step"] < STEPS
    assert not (output / "training.json").exists()


def test_training_continues_from_a_parent_adapter(
    world: dict[str, Path], reference: Path, tmp_path: Path
) -> None:
    train, _ = settings(steps_per_round=2)
    child = tmp_path / "child"
    outcome = run(request(world, child, initial_adapter=reference, train=train))
    assert outcome.status == "completed"
    report = store.read(child / "training.json")
    assert report["initial_adapter"]["sha256"] == adapter_sha256(reference)
    parent, trained = weights(reference), weights(child)
    assert parent.keys() == trained.keys()
    assert any(not torch.equal(parent[name], trained[name]) for name in parent)
    # the child started from the parent, not from scratch: it stays close to it
    moved = sum((parent[n] - trained[n]).abs().sum() for n in parent)
    scale = sum(parent[n].abs().sum() for n in parent)
    assert moved < scale

    wider, _ = settings(steps_per_round=2, rank=8)
    with pytest.raises(ConfigError, match="parent adapter has rank 4"):
        run(request(world, tmp_path / "wider", initial_adapter=reference, train=wider))


def test_the_cli_trains_with_config_and_flags(world: dict[str, Path], tmp_path: Path) -> None:
    output = tmp_path / "adapter"
    config = tmp_path / "config.toml"
    config.write_text(
        '[engine]\nprecision = "float32"\n[tasks]\nlanguages = ["python", "c"]\n'
        "[export]\nmin_examples = 4\nmax_length = 256\n"
        "[train]\nrank = 2\nalpha = 4.0\nsteps_per_round = 2\nbatch_size = 2\n"
        "gradient_accumulation = 1\nsave_steps = 1\n"
    )
    args = ["--dataset", str(world["data"]), "--output", str(output), "--config", str(config)]
    args += ["--base", str(world["model"]), "--threads", "1", "--learning-rate", "0.001"]
    result = subprocess.run(
        [sys.executable, "-m", "codeloop", "train", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert result.returncode == 0, result.stderr
    report = store.read(output / "training.json")
    assert report["steps"] == 2 and report["lora"]["r"] == 2
    assert report["train_config"]["learning_rate"] == 0.001
    bad = subprocess.run(
        [sys.executable, "-m", "codeloop", "train", *args, "--rank", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1 and "train.rank" in bad.stderr and "Traceback" not in bad.stderr


def test_torchrun_with_two_processes_gives_the_one_process_adapter(
    world: dict[str, Path], tmp_path: Path
) -> None:
    """Two CPU processes (gloo) with half the accumulation each train the same adapter."""
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    common = [
        "-m", "codeloop", "train", "--dataset", str(world["data"]), "--base", str(world["model"]),
        "--seed", str(SEED), "--threads", "1", "--precision", "float32",
        "--languages", "python,c", "--rank", "4", "--alpha", "8", "--dropout", "0",
        "--learning-rate", "0.01", "--max-steps", "4", "--max-epochs", "100",
        "--batch-size", "1", "--save-steps", "2", "--max-length", "256",
        "--min-examples", "4", "--min-per-language", "1",
    ]  # fmt: skip
    one = subprocess.run(
        [sys.executable, *common, "--gradient-accumulation", "4", "--output", str(tmp_path / "one")],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    two = subprocess.run(
        [
            torchrun, "--standalone", "--nproc_per_node", "2", *common,
            "--gradient-accumulation", "2", "--output", str(tmp_path / "two"),
        ],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert two.returncode == 0, two.stdout + two.stderr
    left, right = weights(tmp_path / "one"), weights(tmp_path / "two")
    assert left.keys() == right.keys() and left
    for name in left:
        assert torch.allclose(left[name], right[name], rtol=1e-4, atol=1e-6), name
    report = store.read(tmp_path / "two" / "training.json")
    assert report["steps"] == 4 and report["examples"] == 16
