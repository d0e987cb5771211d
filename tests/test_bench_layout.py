"""bench/ holds maintained benchmarks (importable as the `bench` package, functions of 80
lines at most, no `sys.path` edits and no imports from tests/) and, under
bench/experiments/, finished experiments, each named in its README (bench/README.md)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _maintained() -> list[Path]:
    return sorted(BENCH.glob("*.py"))


def test_maintained_benches_have_no_function_over_80_lines() -> None:
    found = []
    for path in _maintained():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 80:
                    found.append(f"{path.name}: {node.name} ({length})")
    assert found == []


def test_maintained_benches_import_without_path_edits_or_tests() -> None:
    found = []
    for path in _maintained():
        text = path.read_text(encoding="utf-8")
        if "sys.path" in text:
            found.append(f"{path.name}: sys.path")
        for node in ast.walk(ast.parse(text)):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            found += [f"{path.name}: {name}" for name in names if name.startswith("tests")]
    assert found == []


def test_every_bench_and_experiment_is_documented() -> None:
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    experiments = (BENCH / "experiments" / "README.md").read_text(encoding="utf-8")
    missing = [
        p.name for p in _maintained() if not p.stem.startswith("__") and f"`{p.stem}" not in readme
    ]
    missing += [
        f"experiments/{p.name}"
        for p in sorted((BENCH / "experiments").glob("*.py"))
        if p.stem != "__init__" and not re.search(rf"^\| `{p.stem}\.py`", experiments, re.M)
    ]
    assert missing == []


def test_the_quick_run_names_only_maintained_benches() -> None:
    from bench.__main__ import BENCHES

    assert {bench.name for bench in BENCHES} <= {p.stem for p in _maintained()}
