"""The import graph of `codeloop` runs one way: no module imports from a higher layer, and
no two modules import each other (directly or round a circle), lazy imports and
`TYPE_CHECKING` imports included. Read from the source with `ast`, nothing imported."""

from __future__ import annotations

import ast
from pathlib import Path

import codeloop

PACKAGE = Path(codeloop.__file__).parent

LAYERS: dict[str, int] = {
    # what every layer may use
    "codeloop": 0,
    "errors": 0,
    "store": 0,
    "config": 0,
    "paths": 0,
    "clock": 0,
    "data": 0,
    "models": 0,
    # checking programs
    "sandbox": 1,
    # problems and prompts
    "tasks": 2,
    "recipe": 2,
    # models: generation and training
    "engines": 3,
    "train": 3,
    # scoring answers
    "evaluate": 4,
    # the loop and the RL reward, built on all of the above
    "reward": 5,
    "loop": 5,
    "serve": 5,  # the sandbox over HTTP (codeloop serve)
    # entry points
    "cli": 6,
    "__main__": 6,
}
"""Each top-level module or package of `codeloop` and its layer (low to high)."""


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports_of(path: Path, known: dict[str, Path]) -> set[str]:
    """The codeloop modules `path` imports anywhere (functions and TYPE_CHECKING too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in known else node.module)
    return {name for name in found if name in known}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(path, known) - {name} for name, path in known.items()}


def layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "codeloop"
    assert top in LAYERS, f"{module}: place its top-level module in LAYERS"
    return LAYERS[top]


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_from_a_higher_layer() -> None:
    upward = sorted(
        f"{source} -> {target}"
        for source, targets in graph().items()
        for target in targets
        if layer(target) > layer(source)
    )
    assert upward == []


def test_the_import_graph_has_no_circle() -> None:
    assert circles(graph()) == []


def test_the_checks_can_fail() -> None:
    """The two checks above find what they look for, on a graph made to have it."""
    edges = {"codeloop.sandbox.a": {"codeloop.loop.b"}, "codeloop.loop.b": {"codeloop.sandbox.a"}}
    assert circles(edges) == [{"codeloop.sandbox.a", "codeloop.loop.b"}]
    assert layer("codeloop.loop.b") > layer("codeloop.sandbox.a")
