"""Pool batches, built with the real sandbox: validation, drops, freshness, and tamper refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop import store
from codeloop.config import SessionConfig
from codeloop.errors import ConfigError, IntegrityError
from codeloop.tasks.pool import load_pool, pool_tasks, prepare_batch, read_batch

FIXTURES = Path(__file__).parent / "fixtures" / "tasks"


def session_config(sources: list[dict], **tasks: object) -> SessionConfig:
    return SessionConfig.model_validate(
        {"seed": 5, "tasks": {"sources": sources, "salt": "unit", **tasks}}
    )


CURRICULUM = [{"kind": "curriculum", "tiers": [1], "variants": 2}]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One session with two curriculum batches (about 50 tier-1 sandbox checks)."""
    session = tmp_path_factory.mktemp("session")
    config = session_config(CURRICULUM, languages=["python", "c", "rust"])
    prepare_batch(session, config, n=45)
    prepare_batch(session, config, n=45)
    return session


def copy_session(built: Path, tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "copy"
    shutil.copytree(built, target)
    return target


def test_batches_are_validated_fresh_and_bound(built: Path) -> None:
    first, second = load_pool(built)
    assert [b.folder.name for b in (first, second)] == ["batch-000001", "batch-000002"]
    assert len(first.tasks) == len(second.tasks) == 45
    assert not {t.id for t in first.tasks} & {t.id for t in second.tasks}
    manifest = first.manifest
    assert manifest["tasks_sha256"] == store.sha256_file(first.folder / "tasks.json")
    assert manifest["source_manifest_sha256"] == store.sha256_file(first.folder / "sources.json")
    assert manifest["problems"]["dropped"] == 0
    assert manifest["validation"]["verified_problems"] == manifest["problems"]["accepted"] == 15
    assert manifest["validation"]["sandbox_checks"] == 15  # once per problem, not per language
    sources = store.read(first.folder / "sources.json")
    assert sources["seed"] == 5 and sources["salt"] == "unit"
    assert sources["sources"][0]["kind"] == "curriculum" and sources["sources"][0]["revision"]
    document = store.read(first.folder / "tasks.json")
    assert set(document) == {"schema_version", "tasks"}
    assert all(task.split in {"train", "dev", "test"} for task in first.tasks)


def test_one_changed_byte_in_tasks_json_is_refused(built: Path, tmp_path: Path) -> None:
    session = copy_session(built, tmp_path)
    path = session / "pool" / "batch-000002" / "tasks.json"
    data = bytearray(path.read_bytes())
    index = data.index(b'"statement": "') + len(b'"statement": "')
    data[index] = ord("X") if data[index] != ord("X") else ord("Y")
    path.write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match=r"batch-000002/tasks.json: changed after"):
        load_pool(session)
    with pytest.raises(IntegrityError, match=r"tasks.json: changed after"):
        prepare_batch(session, session_config(CURRICULUM), n=3)


def test_one_changed_byte_in_the_source_manifest_is_refused(built: Path, tmp_path: Path) -> None:
    session = copy_session(built, tmp_path)
    path = session / "pool" / "batch-000001" / "sources.json"
    path.write_bytes(path.read_bytes().replace(b'"seed": 5', b'"seed": 6'))
    with pytest.raises(IntegrityError, match=r"batch-000001/sources.json: changed after"):
        read_batch(path.parent)


def test_an_edited_manifest_hash_is_refused(built: Path, tmp_path: Path) -> None:
    session = copy_session(built, tmp_path)
    path = session / "pool" / "batch-000001" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["tasks_sha256"] = "0" * 64
    path.write_text(json.dumps(manifest))
    with pytest.raises(IntegrityError, match="tasks_sha256"):
        load_pool(session)


def test_interrupted_batch_is_rebuilt_and_sources_run_dry(built: Path, tmp_path: Path) -> None:
    session = copy_session(built, tmp_path)
    (session / "pool" / "batch-000002" / "manifest.json").unlink()
    assert len(pool_tasks(session)) == 45
    config = session_config(CURRICULUM, languages=["python", "c", "rust"])
    batch = prepare_batch(session, config)  # everything left: the 2 x 24 x 3 minus batch 1
    assert batch.folder.name == "batch-000002"
    assert len(pool_tasks(session)) == 2 * 24 * 3
    with pytest.raises(ConfigError, match="no fresh task left"):
        prepare_batch(session, config)


def test_a_changed_salt_is_refused_before_it_puts_a_family_in_two_splits(
    built: Path, tmp_path: Path
) -> None:
    session = copy_session(built, tmp_path)
    config = session_config(CURRICULUM, languages=["python", "c", "rust", "go"], salt="other")
    with pytest.raises(ConfigError, match=r'salt: "unit" -> "other".*languages'):
        prepare_batch(session, config, n=60)


def test_a_changed_source_is_refused_with_what_changed(built: Path, tmp_path: Path) -> None:
    session = copy_session(built, tmp_path)
    changed = [{"kind": "curriculum", "tiers": [1], "variants": 3}]
    config = session_config(changed, languages=["python", "c", "rust"])
    with pytest.raises(ConfigError, match=r"sources\[0\]\.config\.variants: 2 -> 3"):
        prepare_batch(session, config, n=10)
    # The recorded code revision of the curriculum binds too.
    sources_file = session / "pool" / "batch-000001" / "sources.json"
    from codeloop import store
    from codeloop.tasks.pool import MANIFEST_FILE, check_sources, read_batch

    assert (session / "pool" / "batch-000001" / MANIFEST_FILE).exists()
    recorded = store.read(sources_file)
    newer = {**recorded, "sources": [{**recorded["sources"][0], "revision": "0" * 16}]}
    with pytest.raises(ConfigError, match=r"sources\[0\]\.revision"):
        check_sources([read_batch(session / "pool" / "batch-000001")], newer)


def test_failing_references_are_dropped_with_a_reason(tmp_path: Path) -> None:
    config = session_config([{"kind": "jsonl", "path": str(FIXTURES / "own.jsonl")}])
    batch = prepare_batch(tmp_path, config)
    assert {task.family for task in batch.tasks} == {"own/double", "own/echo"}
    (dropped,) = batch.manifest["dropped"]
    assert dropped["family"] == "own/triple"
    assert dropped["reason"].startswith("reference failed: wrong_answer")
    (unverified,) = batch.manifest["unverified"]
    assert unverified["family"] == "own/echo"
    assert "no runnable reference" in unverified["reason"]
    # a dropped problem is not drawn again, and nothing else is fresh
    with pytest.raises(ConfigError, match="no fresh task left"):
        prepare_batch(tmp_path, config)


def test_tasks_a_trivial_program_passes_are_refused(tmp_path: Path) -> None:
    """Hidden cases passed by printing nothing, echoing, or printing a public example's
    output would reward an answer that solves nothing: such problems never enter a pool."""

    def row(family: str, cases: list[tuple[str, str]], public: list[tuple[str, str]]) -> str:
        return json.dumps(
            {
                "family": family,
                "language": "python",
                "kind": "stdio",
                "statement": "Read the input and print the answer.",
                "cases": [{"input": i, "output": o} for i, o in cases],
                "public_cases": [{"input": i, "output": o} for i, o in public],
                "references": [{"language": "python", "code": "print(input())\n"}],
                "provenance": {
                    "dataset": "own-fixture",
                    "revision": "1",
                    "source_row_sha256": family[-1] * 64,
                    "license": "Apache-2.0",
                },
            }
        )

    rows = [
        row("own/silent-a", [("1\n", "\n"), ("2\n", "")], []),
        row("own/echoing-b", [("x\n", "x\n"), ("y z\n", "y z\n")], []),
        row("own/constant-c", [("1\n", "YES\n"), ("2\n", "YES\n")], [("3\n", "YES\n")]),
        row("own/honest-d", [("1\n", "1\n"), ("2\n", "2\n")], [("3\n", "3\n")]),
    ]
    path = tmp_path / "trivial.jsonl"
    path.write_text("\n".join(rows) + "\n")
    # own/honest-d is an echo task too: it must be refused, whatever its reference says
    batch = prepare_batch(tmp_path / "s", session_config([{"kind": "jsonl", "path": str(path)}]))
    reasons = {item["family"]: item["reason"] for item in batch.manifest["dropped"]}
    assert reasons == {
        "own/silent-a": "refused: the empty program passes every hidden case",
        "own/echoing-b": "refused: a program that echoes its input passes every hidden case",
        "own/constant-c": "refused: a program printing public example 1's output passes "
        "every hidden case",
        "own/honest-d": "refused: a program that echoes its input passes every hidden case",
    }
    assert batch.tasks == []


def test_dataset_rows_need_a_passing_solution(tmp_path: Path) -> None:
    sources = [
        {"kind": "hf", "dataset": str(FIXTURES / "codecontests.jsonl"), "schema": "codecontests"},
        {"kind": "hf", "dataset": str(FIXTURES / "mbpp.jsonl"), "schema": "mbpp"},
        {"kind": "humaneval-x", "path": str(FIXTURES / "humaneval-x")},
    ]
    config = session_config(sources, languages=["python", "cpp"])
    batch = prepare_batch(tmp_path, config)
    reasons = {entry["key"]: entry["reason"] for entry in batch.manifest["dropped"]}
    assert reasons["codecontests:1000_B.-Broken-Max"].startswith("reference failed: wrong_answer")
    assert reasons["humaneval-x:Python/1"].startswith("reference failed")
    families = {task.family for task in batch.tasks}
    assert {"codecontests/1000_A.-Add-Two-Numbers", "mbpp/901", "mbpp/902"} <= families
    benchmark = [task for task in batch.tasks if task.family.startswith("humaneval/")]
    assert benchmark and all(task.split == "test" for task in benchmark)
    # C++ function tests are run when the sandbox can compose them, else kept as unverified
    assert {"humaneval-x:CPP/0", "humaneval-x:CPP/1"}.isdisjoint(reasons)
    assert {task.language for task in benchmark} == {"python", "cpp"}
    unverified = {entry["key"] for entry in batch.manifest["unverified"]}
    assert unverified <= {"humaneval-x:CPP/0", "humaneval-x:CPP/1"}


SUM_TWO = {
    "javascript": (
        "const t = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
        "console.log(t[0] + t[1]);\n"
    ),
    "c": (
        '#include <stdio.h>\nint main(void) { long a, b; scanf("%ld %ld", &a, &b);\n'
        '  printf("%ld\\n", a + b); return 0; }\n'
    ),
}


@pytest.mark.parametrize("language", sorted(SUM_TWO))
def test_rendered_tasks_are_solvable_in_their_language(language: str) -> None:
    """The statement's contract and the sandbox agree: a right program passes, a wrong one not."""
    from codeloop.sandbox import check_program
    from codeloop.tasks.curriculum import family_by_name, render_problem

    for variant in (0, 1):  # both input layouts: one line and two lines
        (task,) = render_problem(family_by_name("sum-two"), variant, 3, [language]).tasks
        cases = [case.model_dump() for case in [*task.cases, *task.public_cases]]
        assert check_program(language, SUM_TWO[language], cases, checker=task.checker).passed
    wrong = SUM_TWO[language].replace("t[0] + t[1]", "t[0] - t[1]").replace("a + b", "a - b")
    assert wrong != SUM_TWO[language]
    assert not check_program(language, wrong, cases, checker=task.checker).passed


def test_a_stop_during_validation_writes_no_batch_and_the_next_call_draws_the_same(
    built: Path, tmp_path: Path
) -> None:
    import shutil

    from codeloop.sandbox import Interrupted

    session = copy_session(built, tmp_path)
    second = session / "pool" / "batch-000002"
    expected = store.read(second / "tasks.json")
    shutil.rmtree(second)
    config = session_config(CURRICULUM, languages=["python", "c", "rust"])
    asked: list[int] = []

    def stop() -> bool:  # stop once two checks have been started
        asked.append(1)
        return len(asked) > 2

    with pytest.raises(Interrupted) as stopped:
        prepare_batch(session, config, n=45, stop=stop)
    assert 1 <= len(stopped.value.done) < 15  # 15 problems: most never started
    assert not second.exists() and len(pool_tasks(session)) == 45
    batch = prepare_batch(session, config, n=45)
    assert batch.folder.name == "batch-000002"
    assert store.read(batch.folder / "tasks.json") == expected


def test_function_tasks_a_trivial_program_passes_are_refused(tmp_path: Path) -> None:
    """The same for function tasks, whose trivial answers run in the sandbox: returning
    the zero value, the first argument, or a public example's value. Before, all four
    of these entered the pool (their references pass)."""

    def row(family: str, language: str, prompt: str, body: str, tests: str) -> dict:
        return {
            "family": family,
            "language": language,
            "kind": "function",
            "statement": prompt,
            "function": {"entry_point": "f", "tests": tests},
            "references": [{"language": language, "code": prompt + body}],
            "provenance": {
                "dataset": "own-fixture",
                "revision": "1",
                "source_row_sha256": family[-1] * 64,
                "license": "Apache-2.0",
            },
        }

    def python(family: str, doc: str, body: str, asserts: list[str]) -> dict:
        prompt = f'def f(x):\n    """{doc}"""\n'
        tests = "def check(f):\n" + "".join(f"    assert {a}\n" for a in asserts) + "check(f)\n"
        return row(family, "python", prompt, body, tests)

    cpp_prompt = "#include <vector>\nusing namespace std;\nint f(int x){\n"
    rows = [
        python("own/nothing-a", "Logs x.", "    print(x)\n", ["f(1) is None", "f(2) is None"]),
        python("own/same-b", "Returns x.", "    return x\n", ["f(3) == 3", "f('a') == 'a'"]),
        python(
            "own/always-c",
            "Says yes.\n    >>> f(1)\n    'YES'\n    ",
            "    return 'YES'\n",
            ["f(2) == 'YES'", "f(7) == 'YES'"],
        ),
        python(
            "own/honest-d",
            "Adds one.\n    >>> f(1)\n    2\n    ",
            "    return x + 1\n",
            ["f(5) == 6", "f(0) == 1"],
        ),
        row(
            "own/cpp-same-e",
            "cpp",
            cpp_prompt,
            "    return x;\n}\n",
            "#include <cassert>\nint main(){ assert(f(4) == 4); assert(f(9) == 9); }\n",
        ),
        row(
            "own/cpp-honest-f",
            "cpp",
            cpp_prompt,
            "    return 2 * x;\n}\n",
            "#include <cassert>\nint main(){ assert(f(4) == 8); assert(f(0) == 0); }\n",
        ),
    ]
    path = tmp_path / "trivial.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = session_config([{"kind": "jsonl", "path": str(path)}], languages=["python", "cpp"])
    batch = prepare_batch(tmp_path / "s", config)
    reasons = {item["family"]: item["reason"] for item in batch.manifest["dropped"]}
    assert reasons == {
        "own/nothing-a": "refused: the empty program passes every hidden case",
        "own/same-b": "refused: a program that echoes its input passes every hidden case",
        "own/always-c": "refused: a program returning public example 1's output passes "
        "every hidden case",
        "own/cpp-same-e": "refused: a program that echoes its input passes every hidden case",
    }
    assert sorted(task.family for task in batch.tasks) == ["own/cpp-honest-f", "own/honest-d"]
