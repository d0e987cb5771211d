"""C++: g++, and function tests as two programs in two sandboxes (`box`): the test half
at -O0 against a precompiled header of the official harness's common headers, the
solution's half at the language's -O2, both linking our codec (`headers`).
"""

from __future__ import annotations

import re
from typing import Any

from codeloop.config import SandboxLimits
from codeloop.sandbox.home import Home
from codeloop.sandbox.language import BOX, BRACED_FUNCTION, Composed, HumanEvalX, Language
from codeloop.sandbox.languages.cpp import box
from codeloop.sandbox.languages.cpp.headers import (
    _CPP_PCH_MOUNT,
    _CPP_PCH_NAME,
    _CPP_RPC_MOUNT,
    _CPP_TEST_PCH_MOUNT,
    _cpp_common_header,
    shared_builds,
    stdcxx_pch,
)
from codeloop.sandbox.languages.cpp.trivial import trivial_programs
from codeloop.sandbox.testbuild import (
    BuildHost,
    TestBuild,
    TestContext,
    TrustedHalf,
    fast_link,
    make_nonce,
    refuse_unsafe,
    switched_off,
    vacuous,
)

LANGUAGE = Language(
    # A debug build (`/run_code`) compiles as SandboxFusion does, without optimisation:
    # a program with undefined behaviour (MBCPP/150 and /340 read uninitialised
    # variables) then does there what it does here (docs/CONFORMANCE.md).
    debug_compile_without=("-O2",),
    name="cpp",
    canary="#include <iostream>\nint main() { std::cout << 1 << std::endl; return 0; }\n",
    source="main.cpp",
    compile=(
        "/usr/bin/g++",
        "-O2",
        "-std=gnu++17",
        "-o",
        "{box}/main",
        "{box}/main.cpp",
        "-lcrypto",
        "-lssl",
    ),
    run=("{box}/main",),
    version=("/usr/bin/g++", "--version"),
    tools=("/usr/bin/g++", "/usr/include/openssl/md5.h", "/usr/include/boost/version.hpp"),
    install="apt-get install g++ libssl-dev libboost-dev",
    out_of_memory=("std::bad_alloc",),
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
    sig = box.signature(context.prompt, context.entry_point) if context.prompt else None
    if sig is None or language.compile is None:
        raise refuse_unsafe("cpp", "pointers, references to classes, user-defined types")
    nonce = make_nonce()
    vacuous_marker = vacuous(nonce)
    link = fast_link()
    quick = not switched_off("CODELOOP_CPP_QUICK_TEST")
    prompt = context.prompt
    # The solution's half is compiled with the language's own flags (-O2): what the
    # program does, undefined behaviour included, is what a plain compile gives.
    # The test's half is trusted code that only calls and compares: -O0 compiles it
    # in about half the time, and SSE arithmetic gives the same values at any -O.
    flags = [part for part in language.compile[1:] if part.startswith(("-O", "-std="))]
    test_flags = flags
    if quick:
        test_flags = [part for part in flags if not part.startswith("-O")] + ["-O0"]
    libraries = [part for part in language.compile if part.startswith("-l")]
    builds = shared_builds(sandbox, language, flags, test_flags, quick)
    binds: list[tuple[str, str, bool]] = []
    if builds.library is not None:
        binds.append((str(builds.library), _CPP_RPC_MOUNT, False))
        libraries = [f"{_CPP_RPC_MOUNT}/{box.LIBRARY_OBJECT}", *libraries]
    linked = builds.library is not None
    steps, common = [], []
    for half, half_flags, mount, folder in (
        ("server", flags, _CPP_PCH_MOUNT, builds.solution_pch),
        ("main", test_flags, _CPP_TEST_PCH_MOUNT, builds.test_pch),
    ):
        include = _cpp_common_header(quick)
        if folder is not None:
            # The same headers, parsed once per compiler and flags: half of a compile.
            include = f"#include <{_CPP_PCH_NAME}>\n"
            half_flags = [f"-I{mount}", *half_flags]
            binds.append((str(folder), mount, False))
        common.append(include)
        output = ["-o", f"{BOX}/{half}", f"{BOX}/{half}.cpp"]
        steps.append([language.compile[0], *half_flags, *link, *output, *libraries])
    server = box.server_source(prompt, program, sig, quick_codec=quick, library=linked)
    tester = box.test_source(prompt, test, sig, library=linked)
    codec = {name: text.encode() for name, text in box.box_files().items()}
    return TestBuild(
        files={"server.cpp": (common[0] + server).encode(), **codec},
        compile=steps[0],
        # The test's half depends on the task only: compiled once per task.
        trusted=TrustedHalf(
            files={"main.cpp": (common[1] + tester).encode(), **codec}, compile=steps[1]
        ),
        run=[f"{BOX}/main", "{requests}", "{replies}"],
        partner=[f"{BOX}/server", "{requests}", "{replies}"],
        solution_files=("server",),
        env=dict(language.env),
        binds=binds,
        success_marker=nonce,
        vacuous_marker=vacuous_marker,
        stdin=(nonce + "\n").encode(),
    )


_STDCXX = re.compile(r"#\s*include\s*<bits/stdc\+\+\.h>")


def compile_setup(
    sandbox: BuildHost, language: Language, source: str, argv: list[str]
) -> tuple[list[str], list[tuple[str, str, bool]], dict[str, str]]:
    """A program that includes <bits/stdc++.h> compiles against that header precompiled
    once per toolchain and flags (shared by all workers): most of its compile time."""
    if not _STDCXX.search(source):
        return argv, [], {}
    pch = stdcxx_pch(sandbox, language, sandbox.compile_limits(SandboxLimits()))
    if pch is None:
        return argv, [], {}
    return [argv[0], "-I/pch", *argv[1:]], [(str(pch), "/pch", False)], {}


INCLUDE_HELPER = (
    "#include<stdlib.h>",
    "#include<algorithm>",
    "#include<math.h>",
    "#include<stdio.h>",
    "#include<vector>",
    "#include<string>",
    "#include<climits>",
    "#include<cstring>",
    "#include<iostream>",
)
"""HumanEval-X's C++ include helper."""


def _humaneval_x(row: dict[str, Any], generation: str) -> Composed:
    """The helper's includes the prompt lacks, the prompt, then the generation."""
    prompt = row["prompt"]
    helper = "".join(line + "\n" for line in INCLUDE_HELPER if line not in prompt)
    trusted = helper + "\n" + prompt
    return Composed(trusted + generation, row["test"], trusted)


HOME = Home(
    language=LANGUAGE,
    title="C++",
    fences=("cpp", "c++", "cxx"),
    worked_answer=(
        "#include <iostream>\n"
        "\n"
        "int main() {\n"
        "    long long a, b;\n"
        "    std::cin >> a >> b;\n"
        "    std::cout << 2 * a + b << std::endl;\n"
        "    return 0;\n"
        "}\n"
    ),
    hello="#include <iostream>\nint main(){std::string s;std::cin>>s;std::cout<<s<<'\\n';}\n",
    humaneval_x=HumanEvalX(
        "cpp", "CPP", position=2, entry_point=BRACED_FUNCTION, compose=_humaneval_x
    ),
    compose_test=compose_test,
    trivial_programs=trivial_programs,
    compile_setup=compile_setup,
)
