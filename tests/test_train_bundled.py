"""The real default: a few LoRA steps on the bundled SmolLM2 GGUF, dequantized on load."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codeloop import store  # noqa: E402
from codeloop.config import BUNDLED_MODEL, ExportConfig, TrainConfig  # noqa: E402
from codeloop.models import bundled_gguf  # noqa: E402
from codeloop.train.trainer import TrainRequest, run  # noqa: E402
from tests.support.train_models import make_rows, write_dataset  # noqa: E402


@pytest.mark.slow
def test_two_steps_on_the_bundled_smollm2(tmp_path: Path) -> None:
    torch.set_num_threads(2)
    data = write_dataset(tmp_path / "data", make_rows(2))
    output = tmp_path / "adapter"
    outcome = run(
        TrainRequest(
            dataset=data,
            output=output,
            base=BUNDLED_MODEL,
            train=TrainConfig(steps_per_round=2, batch_size=2, gradient_accumulation=1),
            export=ExportConfig(min_examples=4, min_per_language=1, max_length=512),
            languages=["python", "c"],
            seed=3407,
            precision="float32",
            echo=False,
        )
    )
    assert outcome.status == "completed" and outcome.steps == 2
    report = store.read(output / "training.json")
    assert report["base_model"]["kind"] == "gguf"
    assert report["base_model"]["sha256"] == store.sha256_file(bundled_gguf())
    assert report["base_model"]["model_type"] == "llama"
    assert report["base_model"]["parameters"] > 100_000_000
    assert report["lora"]["r"] == 8 and report["lora"]["target_modules"] == "all-linear"
    assert all(math.isfinite(entry["loss"]) for entry in report["loss"])
    config = store.read(output / "adapter_config.json")
    assert config["r"] == 8 and "q_proj" in config["target_modules"]
