"""Every language's home provides every part of the `Language` interface, and the registry
is the only list of languages the rest of the code reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop import config, recipe
from codeloop.sandbox import function_tests
from codeloop.sandbox.language import HumanEvalX, Language
from codeloop.sandbox.languages import HOMES, LANGUAGES, get, home
from codeloop.tasks.sources.humaneval_x import FILE_CODES

FOLDER = Path(function_tests.__file__).parent / "languages"


@pytest.mark.parametrize("module", HOMES, ids=lambda module: module.LANGUAGE.name)
def test_every_home_provides_every_part(module) -> None:
    language = module.LANGUAGE
    assert isinstance(language, Language)
    assert module.__name__.rsplit(".", 1)[-1] == language.name  # folder name = language name
    assert isinstance(module.NAME, str) and module.NAME
    assert isinstance(module.FENCES, tuple) and module.FENCES and module.FENCES[0]
    assert isinstance(module.WORKED_ANSWER, str) and module.WORKED_ANSWER.endswith("\n")
    assert module.HUMANEVAL_X is None or isinstance(module.HUMANEVAL_X, HumanEvalX)
    assert module.compose_test is None or callable(module.compose_test)
    assert module.trivial_programs is None or callable(module.trivial_programs)
    assert module.compile_setup is None or callable(module.compile_setup)
    if module.compose_test is not None:
        # a language with function tests has its trusted files and trivial answers too
        assert (FOLDER / language.name / "box" / "__init__.py").is_file()
        assert module.trivial_programs is not None
        assert module.HUMANEVAL_X is not None


def test_the_registry_is_every_folder_and_the_config_list() -> None:
    folders = sorted(path.name for path in FOLDER.iterdir() if (path / "__init__.py").is_file())
    assert folders == sorted(LANGUAGES)
    assert tuple(LANGUAGES) == config.LANGUAGES  # config validates names before import
    assert [get(name) for name in LANGUAGES] == [module.LANGUAGE for module in HOMES]
    with pytest.raises(ValueError, match="unknown language 'cobol'; known: python"):
        home("cobol")


def test_tables_elsewhere_are_views_of_the_homes() -> None:
    assert {m.LANGUAGE.name: m.WORKED_ANSWER for m in HOMES} == recipe.WORKED_ANSWERS
    assert {m.LANGUAGE.name: m.FENCES[0] for m in HOMES} == recipe.FENCE_TAGS
    assert {
        m.LANGUAGE.name: m.HUMANEVAL_X.file_code for m in HOMES if m.HUMANEVAL_X is not None
    } == FILE_CODES
    assert function_tests.supported() == sorted(
        m.LANGUAGE.name for m in HOMES if m.compose_test is not None
    )
    assert recipe.fenced("x = 1\n", "cpp").startswith("```cpp\n")
