"""The session config: presets validate, every field is documented, bad configs name the field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop import config
from codeloop.errors import ConfigError


def test_both_presets_exist_and_validate() -> None:
    assert {"cpu-demo", "gpu"} <= set(config.preset_names())
    demo = config.load_preset("cpu-demo")
    gpu = config.load_preset("gpu")
    assert demo.engine.kind == "llamacpp" and demo.engine.model == config.BUNDLED_MODEL
    assert demo.tasks.sources[0].kind == "curriculum"
    assert gpu.engine.kind == "vllm"
    assert set(demo.tasks.languages) == set(config.LANGUAGES)


def test_values_replaced_in_a_config_are_validated_again() -> None:
    demo = config.load_preset("cpu-demo")
    hf = config.with_values(demo, {"engine": {"kind": "hf"}}, "--engine")
    assert hf.engine.kind == "hf" and hf.engine.batch_size == demo.engine.batch_size
    assert demo.engine.kind == "llamacpp"  # the original is untouched
    with pytest.raises(ConfigError, match=r"engine\.kind") as error:
        config.with_values(demo, {"engine": {"kind": "gpt"}}, "--engine")
    assert "--engine" in str(error.value)


@pytest.mark.parametrize("name", config.preset_names())
def test_dump_and_parse_round_trip(name: str) -> None:
    loaded = config.load_preset(name)
    assert config.parse(config.dumps(loaded), "round trip") == loaded


def test_every_field_is_documented() -> None:
    rows = config.field_docs()
    undocumented = [name for name, _default, description in rows if not description.strip()]
    assert undocumented == []
    names = {name for name, _default, _description in rows}
    assert {"engine.kind", "sandbox.limits.time_s", "tasks.sources[kind=hf].schema"} <= names


def _problems(text: str, tmp_path: Path) -> str:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        config.load(path)
    message = str(raised.value)
    assert str(path) in message
    return message


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ('[engine]\nkind = "gpt"\n', "engine.kind", "'hf', 'llamacpp'"),
        ("[round]\nfresh_tasks = -3\n", "round.fresh_tasks", "greater than 0"),
        ('seed = "abc"\n', "seed", "valid integer"),
        ("[sandbox.limits]\ntime_seconds = 3\n", "sandbox.limits.time_seconds", "unknown key"),
        ("[tasks.splits]\ntrain = 0.9\n", "tasks.splits", "must be 1"),
        ('[[tasks.sources]]\nkind = "jsonl"\n', "tasks.sources.0.path", "required"),
        ('[[tasks.sources]]\nkind = "kaggle"\n', "tasks.sources.0", "kaggle"),
        ('[engine]\nkind = "openai"\n', "engine", "base_url"),
        ('[tasks]\nlanguages = ["go", "cobol"]\n', "tasks.languages.1", "cobol"),
    ],
)
def test_a_bad_config_names_the_wrong_field(
    tmp_path: Path, text: str, field: str, reason: str
) -> None:
    message = _problems(text, tmp_path)
    assert f"- {field}: " in message
    line = next(line for line in message.splitlines() if f"- {field}: " in line)
    assert reason in line


def test_all_problems_are_listed_at_once(tmp_path: Path) -> None:
    message = _problems('seed = "x"\n[engine]\ntemperature = 0.2\n[train]\nrank = 0\n', tmp_path)
    assert "3 problems" in message
    for field in ("seed", "engine.temperature", "train.rank"):
        assert f"- {field}: " in message


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    message = _problems("[engine\nkind = 'hf'\n", tmp_path)
    assert "not valid TOML" in message and "line 1" in message


def test_missing_file_and_unknown_preset() -> None:
    with pytest.raises(ConfigError, match="not found"):
        config.load("/nonexistent/config.toml")
    with pytest.raises(ConfigError, match="cpu-demo"):
        config.load_preset("laptop")


def test_resolve_defaults_to_cpu_demo_and_refuses_both(tmp_path: Path) -> None:
    assert config.resolve(None, None) == config.load_preset("cpu-demo")
    path = tmp_path / "config.toml"
    path.write_text("seed = 7\n")
    assert config.resolve(path, None).seed == 7
    with pytest.raises(ConfigError, match="not both"):
        config.resolve(path, "gpu")


def test_assignment_is_validated() -> None:
    loaded = config.load_preset("cpu-demo")
    with pytest.raises(ValueError):
        loaded.round.samples = -1


def test_importing_codeloop_leaves_the_environment_untouched() -> None:
    """A user's TRL script imports `codeloop.reward`: nothing in its process changes.
    The training entry points set MKL's settings themselves (`use_reproducible_math`)."""
    probe = (
        "import json, os, sys\n"
        "before = dict(os.environ)\n"
        "import codeloop, codeloop.cli, codeloop.reward, codeloop.reward.grpo, codeloop.loop.phases\n"
        "from codeloop.train import trainer\n"
        "changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))\n"
        "print(json.dumps({'changed': changed, 'torch': 'torch' in sys.modules}))\n"
    )
    clean = {
        k: v for k, v in os.environ.items() if k not in ("MKL_CBWR", "MKL_DYNAMIC", "OMP_DYNAMIC")
    }
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=clean, timeout=120
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found == {"changed": [], "torch": False}, found
    # ...and the training entry points do set them, where the user has not.
    setter = (
        "import os\nfrom codeloop.train.determinism import use_reproducible_math\n"
        "use_reproducible_math()\n"
        "print(os.environ['MKL_DYNAMIC'], os.environ['OMP_DYNAMIC'], bool(os.environ['MKL_CBWR']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", setter], capture_output=True, text=True, env=clean, timeout=120
    )
    assert result.stdout.split() == ["FALSE", "FALSE", "True"], result.stderr
