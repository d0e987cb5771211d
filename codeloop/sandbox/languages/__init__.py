"""The language registry: one home per language, each a folder beside this file.

A home (`sandbox/languages/<name>/__init__.py`) holds everything the project knows
about its language: `LANGUAGE` (toolchain, mounts, stdio build and run, limits),
`compose_test` (how a function test is composed and run, or None for stdio-only
languages) and, in `box/`, the trusted files its function tests run with. Adding a
language is one new folder and one line in `HOMES` (docs/ADDING_A_LANGUAGE.md).
"""

from __future__ import annotations

from types import ModuleType

from codeloop.sandbox.language import BOX, NODE_MODULES, Language, version_of
from codeloop.sandbox.languages import c, cpp, go, java, javascript, python, rust, typescript
from codeloop.sandbox.languages.go.toolchain import GO, GO_PATH, MODERN_GO

HOMES: tuple[ModuleType, ...] = (python, javascript, typescript, c, cpp, java, rust, go)
"""Every language's home, in the order languages are listed."""

LANGUAGES: dict[str, Language] = {home.LANGUAGE.name: home.LANGUAGE for home in HOMES}

__all__ = [
    "BOX",
    "GO",
    "GO_PATH",
    "HOMES",
    "LANGUAGES",
    "MODERN_GO",
    "NODE_MODULES",
    "Language",
    "get",
    "home",
    "toolchain_version",
]


def home(name: str) -> ModuleType:
    """The home of language `name`; a clear error lists the known languages."""
    for module in HOMES:
        if module.LANGUAGE.name == name:
            return module
    raise ValueError(f"unknown language {name!r}; known: {', '.join(LANGUAGES)}")


def get(name: str) -> Language:
    """The registry entry for `name`; a clear error lists the known languages."""
    return home(name).LANGUAGE


def toolchain_version(name: str) -> str:
    """First line of the toolchain's version output, or 'missing: ...' (cached per process)."""
    return version_of(get(name))
