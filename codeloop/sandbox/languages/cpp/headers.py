"""C++ builds shared by every check: the precompiled common headers and the codec library."""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeloop.sandbox import harness
from codeloop.sandbox.cache import compile_key, locked, shared_folder
from codeloop.sandbox.language import BOX, Language, version_of
from codeloop.sandbox.languages.cpp import box
from codeloop.sandbox.testbuild import (
    BuildHost,
    build_once,
    failed_archives,
    switched_off,
)
from codeloop.store import sha256_json

CPP_COMMON_HEADERS = (
    "stdlib.h",
    "algorithm",
    "math.h",
    "stdio.h",
    "vector",
    "string",
    "climits",
    "cstring",
    "iostream",
)
"""The headers HumanEval-X's official harness adds to every C++ program."""
_CPP_PCH_NAME = "codeloop_common.h"
_CPP_PCH_MOUNT = "/fnpch"
_CPP_RPC_MOUNT = "/cpprpc"
_CPP_TEST_PCH_MOUNT = "/fnpch-test"


@functools.cache
def _cpp_common_header(with_codec_headers: bool = True) -> str:
    """What both halves include before anything else: HumanEval-X's common headers,
    then the standard headers our codec header includes. Both halves include the codec
    header before the program's text, so the second list changes nothing the program
    sees; it only moves their parsing into the precompiled header."""
    names = list(CPP_COMMON_HEADERS)
    if with_codec_headers:
        names += [name for name in box.standard_headers() if name not in names]
    return "".join(f"#include <{name}>\n" for name in names)


@dataclass(frozen=True)
class SharedBuilds:
    """The one-time builds a C++ function test compiles against (None: not built)."""

    library: Path | None
    """The codec library's folder (`cpp_rpc_library`)."""
    solution_pch: Path | None
    """The common headers precompiled with the solution's flags (`cpp_common_pch`)."""
    test_pch: Path | None
    """The same with the test half's flags."""


_known_builds: dict[tuple, SharedBuilds] = {}
"""What `shared_builds` found, per worker process: a check asks for them every time."""


def shared_builds(
    sandbox: BuildHost,
    language: Language,
    solution_flags: Sequence[str],
    test_flags: Sequence[str],
    quick: bool,
) -> SharedBuilds:
    """The codec library and both halves' precompiled headers, built once by whichever
    worker first needs them and looked up once per worker process after that (while
    their folders are still there), so that a check does not hash and stat them anew."""
    key = (
        sandbox.backend.compile_uid,
        language.compile,
        tuple(solution_flags),
        tuple(test_flags),
        quick,
        os.environ.get("CODELOOP_CPP_RPC_LIB"),
        os.environ.get("CODELOOP_CACHE"),
    )
    known = _known_builds.get(key)
    folders = () if known is None else (known.library, known.solution_pch, known.test_pch)
    if known is not None and all((f / ".done").exists() for f in folders if f is not None):
        return known
    built = SharedBuilds(
        library=cpp_rpc_library(sandbox, language),
        solution_pch=cpp_common_pch(sandbox, language, solution_flags, quick),
        test_pch=cpp_common_pch(sandbox, language, test_flags, quick),
    )
    _known_builds[key] = built
    return built


def cpp_rpc_library(sandbox: BuildHost, language: Language) -> Path | None:
    """`box`'s codec compiled once per compiler as an object both halves link (None if
    that failed, or with CODELOOP_CPP_RPC_LIB=off: each half compiles it in).

    Its type-independent functions and its put/get for the types most signatures use
    (`CODELOOP_RPC_COMMON_TYPES`) were most of a test half's compile; compiled with the
    language's own -O and -std flags, so the ABI is the halves' own.
    """
    if switched_off("CODELOOP_CPP_RPC_LIB") or language.compile is None:
        return None
    flags = [flag for flag in language.compile[1:] if flag.startswith(("-O", "-std="))]
    files = box.library_files()
    key = sha256_json({"g++": version_of(language), "flags": flags, "files": files})
    if key in failed_archives:
        return None
    argv = [language.compile[0], *flags, "-c", f"{BOX}/{box.LIBRARY_SOURCE}"]
    argv += ["-o", f"{BOX}/{box.LIBRARY_OBJECT}"]
    try:
        return build_once(sandbox, "cpp-rpc", key[:16], files, argv, {}, "*.o")
    except ValueError:
        failed_archives.add(key)
        return None


def cpp_common_pch(
    sandbox: BuildHost,
    language: Language,
    flags: Sequence[str] | None = None,
    with_codec_headers: bool = True,
) -> Path | None:
    """The common headers precompiled once per compiler and flags (None if that failed).

    `flags`: the -O and -std options of the compile that will use it (default: the
    language's). GCC uses the .gch only when they match and silently parses the header
    otherwise, so a stale or missing archive costs time, never correctness.
    """
    if language.compile is None:
        return None
    if flags is None:
        flags = [flag for flag in language.compile if flag.startswith(("-O", "-std="))]
    flags = [flag for flag in flags if flag.startswith(("-O", "-std="))]
    header = _cpp_common_header(with_codec_headers)
    key = sha256_json({"g++": version_of(language), "flags": flags, "h": header})
    if key in failed_archives:
        return None
    argv = [language.compile[0], *flags, "-x", "c++-header", f"{BOX}/{_CPP_PCH_NAME}"]
    argv += ["-o", f"{BOX}/{_CPP_PCH_NAME}.gch"]
    try:
        return build_once(
            sandbox,
            "cpp-common-pch",
            key[:16],
            {_CPP_PCH_NAME: header},
            argv,
            {},
            f"{_CPP_PCH_NAME}*",
        )
    except ValueError:
        failed_archives.add(key)
        return None


def stdcxx_pch(sandbox: BuildHost, language: Language, limits: harness.RunLimits) -> Path | None:
    """Build <bits/stdc++.h> once per toolchain and flags, shared by all workers."""
    assert language.compile is not None
    flags = [flag for flag in language.compile if flag.startswith(("-O", "-std="))]
    key = compile_key("cpp-pch", version_of(language), flags, {})[:16]
    folder = shared_folder("pch", sandbox.backend.compile_uid) / key
    target = folder / "bits" / "stdc++.h.gch"
    if target.exists():
        return folder
    with locked("pch"):
        if target.exists():
            return folder
        box = harness.prepare_box(sandbox.scratch, sandbox.backend.compile_uid)
        try:
            (box / "stdcxx.h").write_text("#include <bits/stdc++.h>\n")
            argv = [
                "/usr/bin/g++",
                *flags,
                "-x",
                "c++-header",
                "/box/stdcxx.h",
                "-o",
                "/box/stdc++.h.gch",
            ]
            run = harness.run(
                sandbox.backend,
                argv,
                box=box,
                compile_step=True,
                limits=limits,
            )
            built = box / "stdc++.h.gch"
            if run.exit_code != 0 or not built.exists():
                return None
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.with_suffix(".tmp")
            shutil.copyfile(built, temp)
            temp.chmod(0o644)
            temp.replace(target)
        finally:
            harness.remove_box(box)
    return folder
