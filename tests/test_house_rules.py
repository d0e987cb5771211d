"""Rules of the house that a reviewer would otherwise count by hand: no function of the
package runs over 80 lines (docs/ARCHITECTURE.md, "Conventions"), and no test module
imports another (shared helpers live in tests/support/)."""

from __future__ import annotations

import ast
from pathlib import Path

import codeloop

PACKAGE = Path(codeloop.__file__).parent
TESTS = Path(__file__).parent
MAX_FUNCTION_LINES = 80


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """(name, lines) of every function or method in `source` longer than `limit` lines,
    from its `def` (decorators excluded) to its last line."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                found.append((node.name, length))
    return found


def test_long_functions_finds_a_long_one_and_passes_a_short_one() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(85))
    source = f"def long():\n{body}\n\n\ndef short():\n    return 1\n"
    assert long_functions(source) == [("long", 86)]


def test_no_function_of_the_package_runs_over_80_lines() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 100
    found = {
        str(path.relative_to(PACKAGE)): names
        for path in modules
        if (names := long_functions(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_no_test_module_imports_another() -> None:
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests.test_"):
                found.append(f"{path.name}: {node.module}")
            if isinstance(node, ast.Import):
                found += [
                    f"{path.name}: {a.name}" for a in node.names if a.name.startswith("tests.test_")
                ]
    assert found == []
