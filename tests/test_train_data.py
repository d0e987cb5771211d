"""Before any weight moves: dataset refusals, answer-only labels, the dropped-row count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop import store
from codeloop.errors import ConfigError, IntegrityError
from codeloop.train import IGNORE_INDEX, check_counts, encode_rows, load_dataset
from codeloop.train.schedule import epoch_permutation, plan
from tests.support.train_models import build_tokenizer, make_row, make_rows, write_dataset


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory):
    return build_tokenizer(tmp_path_factory.mktemp("tokenizer"))


def test_a_valid_dataset_loads_with_its_hash(tmp_path: Path) -> None:
    data = write_dataset(tmp_path, make_rows(3))
    loaded = load_dataset(data)
    assert loaded.sha256 == store.sha256_file(data)
    assert loaded.languages() == {"python": 3, "c": 3}


def test_a_tampered_dataset_is_refused(tmp_path: Path) -> None:
    data = write_dataset(tmp_path, make_rows(3))
    text = data.read_text().replace("adds 1", "adds 7", 1)
    data.write_text(text)
    with pytest.raises(
        IntegrityError, match=r"train\.jsonl: sha256 .* differs from dataset_sha256"
    ):
        load_dataset(data)


def test_the_cli_refuses_a_tampered_dataset_with_one_message(tmp_path: Path) -> None:
    data = write_dataset(tmp_path, make_rows(3))
    data.write_text(data.read_text() + data.read_text().splitlines(keepends=True)[0])
    result = subprocess.run(
        [
            *(sys.executable, "-m", "codeloop", "train", "--dataset", str(data)),
            *("--output", str(tmp_path / "adapter"), "--base", str(tmp_path / "nowhere")),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "differs from dataset_sha256" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "adapter").exists()


def test_a_missing_manifest_is_refused(tmp_path: Path) -> None:
    data = write_dataset(tmp_path, make_rows(2))
    Path(f"{data}.manifest.json").unlink()
    with pytest.raises(IntegrityError, match=r"manifest\.json: required artifact is missing"):
        load_dataset(data)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"split": "dev"}, "field split is 'dev'"),
        ({"split": "test"}, "field split is 'test'"),
        ({"verification": {"kind": "local_execution", "passed": False}}, "field verification"),
        ({"verification": {"kind": "model_judged", "passed": True}}, "field verification"),
        ({"verification": None}, "field verification"),
        ({"messages": [{"role": "user", "content": "hi"}]}, "field messages"),
        (
            {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]},
            "last message must be the assistant",
        ),
        ({"provenance": None}, "field provenance"),
    ],
)
def test_a_row_that_is_not_a_passed_train_execution_is_refused(
    tmp_path: Path, changes: dict, field: str
) -> None:
    rows = make_rows(2)
    rows[3] = make_row(1, "c", **changes)
    data = write_dataset(tmp_path, rows)
    with pytest.raises(IntegrityError) as caught:
        load_dataset(data)
    message = str(caught.value)
    assert f"{data} line 4 (task adds-1-c)" in message
    assert field in message


def test_a_manifest_that_miscounts_rows_is_refused(tmp_path: Path) -> None:
    data = write_dataset(tmp_path, make_rows(2), rows=5)
    with pytest.raises(IntegrityError, match="field rows is 5 but the dataset has 4 rows"):
        load_dataset(data)
    data = write_dataset(tmp_path, make_rows(2), languages={"python": 4})
    with pytest.raises(IntegrityError, match="field languages"):
        load_dataset(data)


def test_a_manifest_of_another_split_is_refused(tmp_path: Path) -> None:
    data = write_dataset(tmp_path, make_rows(2), split="dev")
    with pytest.raises(IntegrityError, match="field split is 'dev'"):
        load_dataset(data)


def test_too_few_rows_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"3 rows, fewer than export\.min_examples = 4"):
        check_counts(
            {"python": 3}, min_examples=4, min_per_language=0, languages=["python"], origin="d"
        )


def test_a_configured_language_under_its_minimum_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"min_per_language = 2.*c 1, go 0"):
        check_counts(
            {"python": 5, "c": 1},
            min_examples=1,
            min_per_language=2,
            languages=["python", "c", "go"],
            origin="d",
        )
    check_counts(
        {"python": 5, "c": 2}, min_examples=1, min_per_language=2, languages=["c"], origin="d"
    )


def test_prompt_tokens_carry_label_minus_100_and_the_answer_is_learned(tokenizer) -> None:
    row = make_row(3, "python")
    encoded = encode_rows(tokenizer, [row], max_length=1000)
    (example,) = encoded.examples
    assert len(example.input_ids) == len(example.labels)
    prompt = tokenizer.apply_chat_template(
        row["messages"][:-1], tokenize=False, add_generation_prompt=True
    )
    prompt_length = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert example.labels[:prompt_length] == [IGNORE_INDEX] * prompt_length
    answer = example.labels[prompt_length:]
    assert IGNORE_INDEX not in answer
    assert answer == example.input_ids[prompt_length:]
    learned = tokenizer.decode(answer)
    assert learned.startswith(row["messages"][-1]["content"])
    assert "<|im_end|>" in learned  # the model learns to stop
    assert "user" not in learned and "You write" not in learned


def test_rows_over_max_length_are_dropped_and_counted(tokenizer) -> None:
    short = make_row(1, "python")
    long = make_row(2, "c")
    long["messages"][-1]["content"] *= 8
    lengths = [
        len(encode_rows(tokenizer, [r], 10_000).examples[0].input_ids) for r in (short, long)
    ]
    limit = (lengths[0] + lengths[1]) // 2
    encoded = encode_rows(tokenizer, [short, long], max_length=limit)
    assert [e.task_id for e in encoded.examples] == ["adds-1-python"]
    assert encoded.dropped == [("adds-2-c", lengths[1])]
    assert f"1 dropped as longer than {limit} tokens" in encoded.report()


def test_the_training_order_depends_only_on_the_seed() -> None:
    first = plan(10, seed=7, rows_per_step=4, max_steps=100, max_epochs=2.0)
    again = plan(10, seed=7, rows_per_step=4, max_steps=100, max_epochs=2.0)
    other = plan(10, seed=8, rows_per_step=4, max_steps=100, max_epochs=2.0)
    assert first == again and first.order != other.order
    assert first.steps == 5 and len(first.order) == 20 and first.epochs == 2.0
    assert sorted(first.order[:10]) == list(range(10))
    assert first.order[:10] == epoch_permutation(10, 7, 0)
    capped = plan(10, seed=7, rows_per_step=4, max_steps=2, max_epochs=2.0)
    assert capped.steps == 2 and capped.order == first.order[:8]


def test_rows_file_is_read_as_json_lines(tmp_path: Path) -> None:
    data = write_dataset(tmp_path, make_rows(1))
    data.write_text(data.read_text() + "{not json\n")
    manifest = Path(f"{data}.manifest.json")
    info = json.loads(manifest.read_text())
    info["dataset_sha256"] = store.sha256_file(data)
    store.write_json(manifest, info)
    with pytest.raises(IntegrityError, match="line 3: not valid JSON"):
        load_dataset(data)
