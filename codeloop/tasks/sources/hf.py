"""Datasets people train code models on, read with `datasets` from the hub or local files.

One adapter per row schema (CodeContests, TACO, APPS, MBPP, LiveCodeBench) turns
a row into a `Problem`: stdin/stdout rows become stdio tasks in every configured
language with the row's solutions as references; MBPP rows become Python function
tasks. Rows that cannot be used (call-based, no tests) are yielded with a
`skip_reason` so that the pool records why they were left out.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from codeloop.config import HFSource
from codeloop.errors import ConfigError
from codeloop.sandbox.languages import LANGUAGES
from codeloop.tasks.render import stdio_statement
from codeloop.tasks.schema import Case, FunctionSpec, Problem, Program, Provenance, make_task
from codeloop.tasks.sources.common import files_revision, row_sha256

MAX_CASES = 20
"""Hidden cases kept per row: generated tests can number hundreds; 20 reject most bugs."""
MAX_REFERENCES = 3
"""Solutions tried per row; one that passes is enough."""
LICENSES: dict[str, str] = {
    "codecontests": "CC-BY-4.0",
    "taco": "Apache-2.0",
    "apps": "MIT",
    "mbpp": "CC-BY-4.0",
    "livecodebench": "see the dataset card",
}
PYTHON = "python"
"""The language of APPS's and TACO's solutions and of MBPP's tasks: a fact of those
datasets, named once (which languages a task is posed in, and in what order, is the
registry's and the configuration's)."""
_CODECONTESTS_LANGUAGES = {3: PYTHON, 2: "cpp", 4: "java"}
"""CodeContests solution language codes we can run (1 is Python 2, 0 unknown)."""
_ORDER = {name: place for place, name in enumerate(LANGUAGES)}
"""A language's place in the registry: references are tried in that order."""
_LOCAL_SUFFIXES = {".parquet": "parquet", ".jsonl": "json", ".json": "json"}


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise ConfigError(
            "reading Hugging Face datasets needs the `datasets` package (pip install datasets)"
        ) from None
    return datasets


def load_hub(
    dataset: str,
    *,
    name: str | None = None,
    split: str,
    revision: str | None,
    where: str,
    local_hint: str,
) -> Iterator[dict[str, Any]]:
    """Rows of a hub dataset; any failure (offline, unknown id) is a ConfigError with a hint."""
    datasets = _datasets()
    try:
        loaded = datasets.load_dataset(dataset, name, split=split, revision=revision)
    except Exception as error:  # datasets raises many unrelated types; all mean "not readable"
        raise ConfigError(
            f"{where}: could not read {dataset!r} from the Hugging Face hub "
            f"({type(error).__name__}: {str(error)[:300]}). Nothing is downloaded unless the "
            f"hub is reachable; {local_hint}."
        ) from None
    yield from loaded


def local_files(path: Path, where: str) -> tuple[str, list[Path]]:
    """(`datasets` builder, files) of a local parquet/jsonl file or folder."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    kinds = {_LOCAL_SUFFIXES.get(p.suffix) for p in files} - {None}
    usable = [p for p in files if p.suffix in _LOCAL_SUFFIXES]
    if not usable or len(kinds) != 1:
        raise ConfigError(
            f"{where}.dataset: {path} must be one .parquet/.jsonl file or a folder of files of "
            "one of those kinds"
        )
    return kinds.pop(), usable  # type: ignore[return-value]


def _cases(inputs: Sequence[Any], outputs: Sequence[Any]) -> list[Case]:
    return [
        Case(input=str(given), output=str(expected))
        for given, expected in zip(inputs, outputs, strict=False)
        if isinstance(given, str) and isinstance(expected, str)
    ]


def _json_field(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else None
        except json.JSONDecodeError:
            return None
    return value


class _TextOnly(pickle.Unpickler):
    """Unpickles plain data only: a pickle that names any class or function is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a dataset row")


def _livecodebench_tests(value: Any) -> list[dict[str, Any]]:
    """LiveCodeBench private tests: JSON, or base64(zlib(pickle(JSON text)))."""
    parsed = _json_field(value)
    if isinstance(parsed, list):
        return parsed
    if not isinstance(value, str) or not value:
        return []
    try:
        raw = zlib.decompress(base64.b64decode(value))
        text = _TextOnly(io.BytesIO(raw)).load()
        parsed = json.loads(text) if isinstance(text, str) else None
    except Exception:  # a malformed row is skipped with its reason, never fatal
        return []
    return parsed if isinstance(parsed, list) else []


class _Rows:
    """What a schema adapter needs besides the row: languages and provenance."""

    def __init__(self, schema: str, dataset: str, revision: str, languages: Sequence[str]) -> None:
        self.schema = schema
        self.dataset = dataset
        self.revision = revision
        self.languages = list(languages)

    def provenance(self, row: dict[str, Any]) -> Provenance:
        return Provenance(
            dataset=self.dataset,
            revision=self.revision,
            source_row_sha256=row_sha256(row),
            license=LICENSES[self.schema],
        )

    def stdio(
        self,
        row: dict[str, Any],
        key: str,
        text: str,
        hidden: list[Case],
        public: list[Case],
        references: list[Program],
    ) -> Problem:
        family = f"{self.schema}/{key}"
        problem_key = f"{self.schema}:{key}"
        if not text.strip():
            return Problem(key=problem_key, family=family, skip_reason="empty statement")
        if not hidden and not public:
            return Problem(key=problem_key, family=family, skip_reason="no stdin/stdout tests")
        hidden = (hidden or public)[:MAX_CASES]
        public = public[:3]
        provenance = self.provenance(row)
        tasks = [
            make_task(
                family=family,
                language=language,
                kind="stdio",
                statement=stdio_statement(text),
                cases=hidden,
                public_cases=public,
                checker="tokens",
                references=references[:MAX_REFERENCES],
                provenance=provenance,
            )
            for language in self.languages
        ]
        return Problem(key=problem_key, family=family, tasks=tasks)

    def skipped(self, key: str, reason: str) -> Problem:
        return Problem(
            key=f"{self.schema}:{key}", family=f"{self.schema}/{key}", skip_reason=reason
        )


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:80] or "row"


def codecontests(rows: _Rows, row: dict[str, Any], index: int) -> Problem:
    """deepmind/code_contests: description, public/private/generated tests, solutions."""
    key = _slug(row.get("name") or f"row-{index}")

    def tests(name: str) -> list[Case]:
        value = row.get(name) or {}
        return _cases(value.get("input") or [], value.get("output") or [])

    solutions = row.get("solutions") or {}
    pairs = zip(solutions.get("language") or [], solutions.get("solution") or [], strict=False)
    references = sorted(
        (
            Program(language=_CODECONTESTS_LANGUAGES[code], code=text)
            for code, text in pairs
            if code in _CODECONTESTS_LANGUAGES and text.strip()
        ),
        key=lambda program: _ORDER[program.language],
    )
    hidden = tests("private_tests") + tests("generated_tests")
    return rows.stdio(
        row, key, row.get("description") or "", hidden, tests("public_tests"), references
    )


def _apps_like(rows: _Rows, row: dict[str, Any], key: str, text_field: str) -> Problem:
    tests = _json_field(row.get("input_output")) or {}
    if not isinstance(tests, dict):
        return rows.skipped(key, "input_output is not a JSON object")
    if tests.get("fn_name"):
        return rows.skipped(key, "call-based problem (fn_name), not stdin/stdout")
    cases = _cases(tests.get("inputs") or [], tests.get("outputs") or [])
    solutions = _json_field(row.get("solutions")) or []
    references = [
        Program(language=PYTHON, code=code)
        for code in solutions
        if isinstance(code, str) and code.strip()
    ]
    return rows.stdio(row, key, row.get(text_field) or "", cases, cases[:1], references)


def taco(rows: _Rows, row: dict[str, Any], index: int) -> Problem:
    """BAAI/TACO: question, solutions (JSON list), input_output (JSON inputs/outputs)."""
    key = _slug(row.get("name") or row.get("url") or f"row-{index}")
    return _apps_like(rows, row, key, "question")


def apps(rows: _Rows, row: dict[str, Any], index: int) -> Problem:
    """codeparrot/apps: problem_id, question, solutions, input_output."""
    key = str(row.get("problem_id", f"row-{index}"))
    return _apps_like(rows, row, key, "question")


def _mbpp_prompt(code: str, entry: str, text: str, test: str) -> str:
    """A HumanEval-style prompt: the reference's signature with the task and a test as docstring.

    Function tasks are shown to the model as code to complete, so MBPP's prose is put
    where HumanEval puts it; without a signature in the code, the prose is used as is.
    """
    found = re.search(rf"^def\s+{re.escape(entry)}\s*\(.*?\)[^:\n]*:", code, re.M | re.S)
    if not found:
        return f"{text}\n\nYour code should pass this test:\n\n{test}\n"
    return f'{found.group(0)}\n    """{text}\n    >>> {test}\n    """\n'


def mbpp(rows: _Rows, row: dict[str, Any], index: int) -> Problem:
    """mbpp: text, code, test_list (asserts), test_setup_code: a Python function task."""
    key = str(row.get("task_id", f"row-{index}"))
    tests = [test for test in row.get("test_list") or [] if isinstance(test, str)]
    if PYTHON not in rows.languages:
        return rows.skipped(key, "MBPP is Python only and python is not in tasks.languages")
    if not tests:
        return rows.skipped(key, "no test_list")
    found = re.search(r"def\s+(\w+)\s*\(", row.get("code") or "")
    entry = found.group(1) if found else re.findall(r"(\w+)\s*\(", tests[0])[0]
    setup = row.get("test_setup_code") or ""
    hidden = [*tests, *(row.get("challenge_test_list") or [])]
    statement = _mbpp_prompt(
        row.get("code") or "", entry, (row.get("text") or "").strip(), tests[0]
    )
    task = make_task(
        family=f"mbpp/{key}",
        language=PYTHON,
        kind="function",
        statement=statement,
        function=FunctionSpec(
            entry_point=entry,
            tests=(setup + "\n" if setup.strip() else "") + "\n".join(hidden) + "\n",
            public_tests=tests[0] + "\n",
        ),
        references=[Program(language=PYTHON, code=row["code"])] if row.get("code") else [],
        provenance=rows.provenance(row),
    )
    return Problem(key=f"mbpp:{key}", family=f"mbpp/{key}", tasks=[task])


def livecodebench(rows: _Rows, row: dict[str, Any], index: int) -> Problem:
    """livecodebench/code_generation_lite: stdin tests only; it has no solutions."""
    key = _slug(str(row.get("question_id") or f"row-{index}"))
    public_raw = _livecodebench_tests(row.get("public_test_cases"))
    private_raw = _livecodebench_tests(row.get("private_test_cases"))
    everything = public_raw + private_raw
    if any(test.get("testtype") != "stdin" for test in everything if isinstance(test, dict)):
        return rows.skipped(key, "functional (call-based) tests, not stdin/stdout")

    def cases(tests: list[Any]) -> list[Case]:
        good = [test for test in tests if isinstance(test, dict)]
        return _cases([t.get("input") for t in good], [t.get("output") for t in good])

    title = row.get("question_title") or ""
    text = f"{title}\n\n{row.get('question_content') or ''}" if title else ""
    return rows.stdio(row, key, text, cases(private_raw), cases(public_raw), [])


ADAPTERS: dict[str, Callable[[_Rows, dict[str, Any], int], Problem]] = {
    "codecontests": codecontests,
    "taco": taco,
    "apps": apps,
    "mbpp": mbpp,
    "livecodebench": livecodebench,
}


class HFDataset:
    """The `hf` source: one dataset in one of the supported row schemas."""

    kind = "hf"

    def __init__(self, config: HFSource, languages: Sequence[str], where: str) -> None:
        self.config = config
        self.where = where
        self.languages = list(languages)
        self.local = Path(config.dataset).exists()
        self.files: list[Path] = []
        if self.local:
            self.builder, self.files = local_files(Path(config.dataset), where)
            self.revision = files_revision(self.files)
        else:
            self.revision = config.revision or "unpinned"

    def rows(self) -> Iterator[dict[str, Any]]:
        """The dataset's rows (at most `limit`)."""
        if self.local:
            datasets = _datasets()
            datasets.disable_progress_bars()  # a few local rows: the bars would only be noise
            try:
                loaded = datasets.load_dataset(
                    self.builder,
                    data_files={self.config.split: [str(p) for p in self.files]},
                    split=self.config.split,
                )
            except Exception as error:  # a malformed local file
                raise ConfigError(
                    f"{self.where}.dataset: {self.config.dataset} could not be read as "
                    f"{self.builder}: {type(error).__name__}: {str(error)[:300]}"
                ) from None
            rows: Iterator[dict[str, Any]] = iter(loaded)
        else:
            rows = load_hub(
                self.config.dataset,
                split=self.config.split,
                revision=self.config.revision,
                where=self.where,
                local_hint=f"set {self.where}.dataset to a local parquet/jsonl file or folder",
            )
        return islice(rows, self.config.limit)

    def problems(self) -> Iterator[Problem]:
        adapter = ADAPTERS[self.config.schema_]
        dataset = Path(self.config.dataset).name if self.local else self.config.dataset
        shared = _Rows(self.config.schema_, dataset, self.revision, self.languages)
        for index, row in enumerate(self.rows()):
            yield adapter(shared, row, index)

    def manifest(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "config": self.config.model_dump(mode="json", by_alias=True),
            "schema": self.config.schema_,
            "files": [p.name for p in self.files],
            "revision": self.revision,
            "languages": self.languages,
        }
