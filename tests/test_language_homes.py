"""Every language's home gives one `HOME` that meets the `Home` contract (each field of
the declared type), and the registry is the only list of languages the rest of the code
reads."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import os
import re
import types
import typing
from collections.abc import Callable
from pathlib import Path

import pytest

import codeloop
from codeloop import config, recipe
from codeloop.evaluate import data, humaneval
from codeloop.sandbox import function_tests, harness
from codeloop.sandbox.home import Home
from codeloop.sandbox.language import Language
from codeloop.sandbox.languages import HOMES, LANGUAGES, get, home
from codeloop.tasks.sources import hf, humaneval_x
from codeloop.tasks.sources.humaneval_x import FILE_CODES

FOLDER = Path(function_tests.__file__).parent / "languages"
SANDBOX = FOLDER.parent


def conforms(value: object, hint: object) -> bool:
    """Whether `value` is of the type `hint`, as far as runtime can tell: a callable for a
    `Callable` (its signature is the type checker's), element by element for tuples."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is Callable:
        return callable(value)
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(item, args[0]) for item in value)
        return len(args) == len(value) and all(map(conforms, value, args))
    if origin is dict:
        key, item = typing.get_args(hint)
        assert isinstance(value, dict)
        return all(conforms(k, key) and conforms(v, item) for k, v in value.items())
    return isinstance(value, origin or hint)


def mistyped(instance: object) -> list[str]:
    """The fields of a dataclass instance whose value is not of the declared type."""
    hints = typing.get_type_hints(type(instance))
    return [
        f"{field.name}: {getattr(instance, field.name)!r} is not {hints[field.name]}"
        for field in dataclasses.fields(instance)  # type: ignore[arg-type]
        if not conforms(getattr(instance, field.name), hints[field.name])
    ]


@pytest.mark.parametrize("found", HOMES, ids=lambda found: found.language.name)
def test_every_home_meets_the_contract(found: Home) -> None:
    language = found.language
    module = importlib.import_module(f"codeloop.sandbox.languages.{language.name}")
    assert module.HOME is found  # folder name = language name, one HOME per home
    assert found.__file__ == module.__file__ and found.folder == Path(module.__file__).parent
    assert isinstance(found, Home) and isinstance(language, Language)
    assert mistyped(found) == []
    assert mistyped(language) == []
    if found.humaneval_x is not None:
        assert mistyped(found.humaneval_x) == []
    assert found.title and found.fences and found.fences[0]
    assert found.worked_answer.endswith("\n") and found.hello.endswith("\n")
    if found.compose_test is not None:
        # a language with function tests has its trusted files and trivial answers too;
        # HumanEval-X naming is optional (a language HumanEval-X lacks may have tasks)
        assert (found.folder / "box" / "__init__.py").is_file()
        assert found.trivial_programs is not None


def test_the_contract_catches_a_field_of_the_wrong_type() -> None:
    python = home("python")
    assert mistyped(dataclasses.replace(python, fences="python")) != []
    assert mistyped(dataclasses.replace(python, compose_test="not a function")) != []
    assert mistyped(dataclasses.replace(python.language, mounts=["/etc"])) != []


def test_a_language_without_humaneval_x_may_have_function_tests() -> None:
    python = home("python")
    assert mistyped(dataclasses.replace(python, humaneval_x=None)) == []


def test_humaneval_x_keeps_its_own_order() -> None:
    """Each HumanEval-X language has its own place in HumanEval-X's list (a suite's
    default order), whatever the registry's order."""
    positions = sorted(h.humaneval_x.position for h in HOMES if h.humaneval_x is not None)
    assert positions == list(range(len(FILE_CODES)))
    assert list(data.HUMANEVAL_X_FILES) == ["python", "javascript", "cpp", "java", "go", "rust"]
    assert sorted(data.HUMANEVAL_X_FILES.items()) == sorted(FILE_CODES.items())


def test_the_datasets_name_registered_languages() -> None:
    """The few languages a dataset fixes (CodeContests' codes, the Python-only sets) are
    languages the registry knows."""
    assert {hf.PYTHON, *hf._CODECONTESTS_LANGUAGES.values()} <= set(LANGUAGES)


def test_the_registry_is_every_folder_and_the_config_list() -> None:
    folders = sorted(path.name for path in FOLDER.iterdir() if (path / "__init__.py").is_file())
    assert folders == sorted(LANGUAGES)
    assert tuple(LANGUAGES) == config.LANGUAGES  # both read from registry.txt
    lines = [line for line in (FOLDER / "registry.txt").read_text().splitlines() if line.strip()]
    assert [line for line in lines if not line.startswith("#")] == list(LANGUAGES)
    assert [get(name) for name in LANGUAGES] == [found.language for found in HOMES]
    assert [home(name) for name in LANGUAGES] == list(HOMES)
    with pytest.raises(ValueError, match="unknown language 'cobol'; known: python"):
        home("cobol")


def test_tables_elsewhere_are_views_of_the_homes() -> None:
    assert {h.language.name: h.worked_answer for h in HOMES} == recipe.WORKED_ANSWERS
    assert {h.language.name: h.fences[0] for h in HOMES} == recipe.FENCE_TAGS
    assert {
        h.language.name: h.humaneval_x.file_code for h in HOMES if h.humaneval_x is not None
    } == FILE_CODES
    assert function_tests.supported() == sorted(
        h.language.name for h in HOMES if h.compose_test is not None
    )
    assert recipe.fenced("x = 1\n", "cpp").startswith("```cpp\n")


READERS = (humaneval, data, humaneval_x, hf)
"""Modules outside the sandbox that read languages from the registry: HumanEval-X's
composition and naming, and the datasets' language lists and orders."""


def branched_on(source: str) -> list[str]:
    """The language names `source` tests for, keys a table on or lists: quoted names in a
    comparison, a dict key, a subscript, a match case, a tuple, list or set literal, or a
    positional argument (`home("rust")`). A name given as a value (a constant's, a
    keyword argument's, a dict's) is a dataset's fact, not a branch."""
    names = set(LANGUAGES)
    found: list[str] = []

    def note(*nodes: ast.expr | None) -> None:
        for node in nodes:
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(node.value)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            note(node.left, *node.comparators)
        elif isinstance(node, ast.Dict):
            note(*node.keys)
        elif isinstance(node, ast.Subscript):
            note(node.slice)
        elif isinstance(node, ast.MatchValue):
            note(node.value)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            note(*node.elts)
        elif isinstance(node, ast.Call):
            note(*node.args)
    return found


def test_no_generic_sandbox_module_names_a_language() -> None:
    """What one language needs is its home's (a field or a hook): the sandbox's own
    modules never test for a language by name, nor do the modules that read the registry
    (HumanEval-X's composition, the datasets' lists) branch on one or keep their own."""
    names = "|".join(re.escape(name) for name in LANGUAGES)
    quoted = re.compile(rf"""["']({names})["']""")
    found = {
        path.name: quoted.findall(path.read_text())
        for path in SANDBOX.glob("*.py")
        if quoted.search(path.read_text())
    }
    assert found == {}
    readers = {
        module.__name__: branched_on(Path(module.__file__ or "").read_text()) for module in READERS
    }
    assert readers == {module.__name__: [] for module in READERS}


def test_no_module_outside_the_homes_branches_on_a_language() -> None:
    """The whole package, not only the sandbox: what a language needs is its home's, and
    the list of languages is the registry's (`registry.txt`, which config.py reads as a
    file). No exception. A dataset's own language (HumanEval's Python) is a value of its
    module, not a branch."""
    package = Path(codeloop.__file__).parent
    homes = package / "sandbox" / "languages"
    modules = [path for path in sorted(package.rglob("*.py")) if homes not in path.parents]
    assert len(modules) > 100 and package / "config.py" in modules
    found = {
        str(path.relative_to(package)): names
        for path in modules
        if (names := branched_on(path.read_text()))
    }
    assert found == {}


def test_branched_on_finds_a_branch_a_key_and_a_list() -> None:
    source = (
        'if language == "rust": pass\n'
        'table = {"go": 1}\n'
        'order = ("python", "cpp")\n'
        'naming = home("java")\n'
        "fixed = Program(language=\"python\", code='')\n"
        'codes = {3: "python"}\n'
    )
    assert branched_on(source) == ["rust", "go", "python", "cpp", "java"]


def test_every_language_mount_is_read_only_in_every_sandbox(tmp_path: Path) -> None:
    """A language's own host folders (`Language.mounts`: the JVM's configuration) are bound
    as the system folders are: read-only, in every sandbox, as before they moved into
    the language's home."""
    limits = harness.RunLimits(
        wall_s=1, cpu_s=1, memory_mib=64, output_bytes=1, processes=1, workdir_mib=1
    )
    args = harness.bind_args(tmp_path, False, limits, [], {}, "/")
    triples = list(zip(args, args[1:], args[2:], strict=False))
    pairs = [(m, m) if isinstance(m, str) else m for h in HOMES for m in h.language.mounts]
    for source, target in [(source, target) for source, target in pairs if os.path.exists(source)]:
        assert ("--ro-bind", source, target) in triples
        assert ("--bind", source, target) not in triples
