"""The language registry: one home per language, each a folder beside this file.

A home (`sandbox/languages/<name>/__init__.py`) holds everything the project knows
about its language and exports it as one `HOME` (`sandbox.home.Home`: its `Language`,
prompt parts, function tests, trivial answers, `doctor`'s hello program and the hooks
only some languages need); in `box/`, the trusted files its function tests run with.
`registry.txt` names the homes, one line each, in order; `HOMES` imports them in that
order, and every list and order of languages in the package is read from it (the
session config reads the same file: `config.LANGUAGES`). Adding a language is one new
folder and one line in `registry.txt` (docs/ADDING_A_LANGUAGE.md).
"""

from __future__ import annotations

import importlib

from codeloop.config import LANGUAGES as REGISTERED
from codeloop.sandbox import harness
from codeloop.sandbox.home import Home
from codeloop.sandbox.language import BOX, NODE_MODULES, Language, version_of
from codeloop.sandbox.languages.go.toolchain import GO, GO_PATH, MODERN_GO

HOMES: tuple[Home, ...] = tuple(
    importlib.import_module(f"{__name__}.{name}").HOME for name in REGISTERED
)
"""Every language's home, in the registry's order (`registry.txt`)."""

LANGUAGES: dict[str, Language] = {home.language.name: home.language for home in HOMES}

harness.share_read_only([path for home in HOMES for path in home.language.mounts])

__all__ = [
    "BOX",
    "GO",
    "GO_PATH",
    "HOMES",
    "LANGUAGES",
    "MODERN_GO",
    "NODE_MODULES",
    "Home",
    "Language",
    "get",
    "home",
    "toolchain_version",
]


def home(name: str) -> Home:
    """The home of language `name`; a clear error lists the known languages."""
    for found in HOMES:
        if found.language.name == name:
            return found
    raise ValueError(f"unknown language {name!r}; known: {', '.join(LANGUAGES)}")


def get(name: str) -> Language:
    """The registry entry for `name`; a clear error lists the known languages."""
    return home(name).language


def toolchain_version(name: str) -> str:
    """First line of the toolchain's version output, or 'missing: ...' (cached per process)."""
    return version_of(get(name))
