"""Rust: rustc, and function tests as two crates in two sandboxes (`box`): the test crate
built with `rustc --test`, linking rand, regex and md5 prebuilt once from Debian's
cargo registry (`crates`), with cargo test's debug checks kept on.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from codeloop.sandbox.home import Home
from codeloop.sandbox.language import BOX, Composed, HumanEvalX, Language
from codeloop.sandbox.languages.rust import box
from codeloop.sandbox.languages.rust.crates import (
    _CRATES_MOUNT,
    _RPC_MOUNT,
    _RUST_FLAGS,
    rust_crates,
    rust_rpc_library,
    uses_rand_07_api,
)
from codeloop.sandbox.languages.rust.trivial import trivial_programs
from codeloop.sandbox.testbuild import (
    BuildHost,
    TaskRefused,
    TestBuild,
    TestContext,
    TrustedHalf,
    fast_link,
    make_nonce,
    refuse_unsafe,
    vacuous,
)

LANGUAGE = Language(
    debug_compile_without=("-O",),
    name="rust",
    canary='fn main() { println!("1"); }\n',
    source="main.rs",
    compile=(
        "/usr/bin/rustc",
        "--edition",
        "2021",
        "-O",
        "-o",
        "{box}/main",
        "{box}/main.rs",
    ),
    run=("{box}/main",),
    version=("/usr/bin/rustc", "--version"),
    tools=("/usr/bin/rustc",),
    install="apt-get install rustc-web cargo-web",
    out_of_memory=("memory allocation of",),
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
    if uses_rand_07_api(test):
        raise TaskRefused(
            "the test calls the rand 0.7 API gen_range(low, high); only rand 0.8 (Debian's "
            "librust-rand-dev) is available offline, so it cannot be compiled here"
        )
    folder, crates = rust_crates(sandbox, language)
    externs: list[str] = []
    for name, rlib in sorted(crates.items()):
        externs += ["--extern", f"{name}={_CRATES_MOUNT}/{rlib}"]
    found = (
        box.signatures(context.prompt, context.entry_point, program, test)
        if context.prompt
        else None
    )
    if found is not None:
        return _rpc_build(sandbox, language, program, test, context, folder, externs, found)
    missing = box.solution_types(context.prompt, context.entry_point) if context.prompt else []
    if missing:
        # The signature names a type only the solution can define (Rust/137's RtnType),
        # and this solution does not define it as a plain enum: a failure, decided
        # without falling back to the one-process composition the program could forge.
        message = (
            f"the test uses {', '.join(missing)}, which the solution must define as a plain "
            "enum (derives only, type parameters without bounds, tuple or unit variants "
            "of types that cross between processes)"
        )
        return TestBuild(
            files={},
            compile=["/bin/sh", "-c", f"echo {shlex.quote(message)} >&2; exit 1"],
            run=["/bin/false"],
        )
    raise refuse_unsafe("rust", "references to user-defined types, trait objects")


def _rpc_build(
    sandbox: BuildHost,
    language: Language,
    program: str,
    test: str,
    context: TestContext,
    folder: Path,
    externs: list[str],
    found: tuple[list[box.Signature], int],
) -> TestBuild:
    """The two-process build: the solution a server crate in a sandbox of its own, the
    test a crate of its own that calls it over two pipes (`box`), the codec either the
    prebuilt RPC library or compiled with each side."""
    sigs, at = found
    binds = [(str(folder), _CRATES_MOUNT, False)]
    library = rust_rpc_library(sandbox, language)
    with_library = library is not None
    if library is not None:
        binds.append((str(library), _RPC_MOUNT, False))
        externs += ["--extern", f"{box.LIBRARY}={_RPC_MOUNT}/lib{box.LIBRARY}.rlib"]
    linked = ["-L", f"dependency={_CRATES_MOUNT}", *externs]
    linked += [arg for flag in fast_link() for arg in ("-C", f"link-arg={flag}")]
    server_flags = [flag for flag in _RUST_FLAGS if flag != "--test"]
    # The verdict: a nonce on the test's stdin (the solution's is /dev/null; the
    # environment reaches both sides), printed by the test crate's own exit handler
    # only when the harness exits 0 (see `box`); "test result: ok." alone is
    # also printed by a run of no test at all.
    nonce = make_nonce()
    server = ["/usr/bin/rustc", *server_flags, *linked, "-o", f"{BOX}/server"]
    tester = ["/usr/bin/rustc", *_RUST_FLAGS, *linked, "-o", f"{BOX}/main"]
    codec = {} if with_library else {box.MODULE: box.module()}
    tests = box.test_source(context.prompt, test, sigs, at, with_library)
    return TestBuild(
        files={"server.rs": box.server_source(program, sigs, with_library).encode(), **codec},
        compile=[*server, f"{BOX}/server.rs"],
        # The test's crate depends on the task (and on the helpers of the program
        # that the test calls, by their signatures): compiled once per such text.
        trusted=TrustedHalf(
            files={
                "main.rs": tests.encode(),
                **codec,
            },
            compile=[*tester, f"{BOX}/main.rs"],
            from_task=False,
        ),
        run=[f"{BOX}/main", "--test-threads=1"],
        partner=[f"{BOX}/server", "{requests}", "{replies}"],
        solution_files=("server",),
        env={
            **language.env,
            "CODELOOP_REQUESTS": "{requests}",
            "CODELOOP_REPLIES": "{replies}",
        },
        binds=binds,
        success_marker=nonce,
        vacuous_marker=vacuous(nonce),
        stdin=(nonce + "\n").encode(),
    )


EMPTY_MAIN = "\nfn main(){ \n } \n"
"""The `main` HumanEval-X's Rust programs open with (the tests are a `#[cfg(test)]` module)."""


def _humaneval_x(row: dict[str, Any], generation: str) -> Composed:
    """An empty `main`, the declaration (its `use`s and the signature the prompt leaves
    out), the prompt, then the generation: the official harness's order."""
    trusted = EMPTY_MAIN + row["declaration"]
    return Composed(trusted + row["prompt"] + generation, row["test"], trusted)


HOME = Home(
    language=LANGUAGE,
    title="Rust",
    fences=("rust", "rs"),
    worked_answer=(
        "use std::io::Read;\n"
        "\n"
        "fn main() {\n"
        "    let mut input = String::new();\n"
        "    std::io::stdin().read_to_string(&mut input).unwrap();\n"
        "    let v: Vec<i64> = input.split_whitespace().map(|x| x.parse().unwrap()).collect();\n"
        '    println!("{}", 2 * v[0] + v[1]);\n'
        "}\n"
    ),
    hello=(
        "fn main(){let mut s=String::new();std::io::stdin().read_line(&mut s).unwrap();"
        'println!("{}",s.trim());}\n'
    ),
    humaneval_x=HumanEvalX(
        "rust",
        "Rust",
        position=5,
        entry_point=r"fn\s+(\w+)\s*[<(]",
        compose=_humaneval_x,
        signature_in_declaration=True,
    ),
    compose_test=compose_test,
    trivial_programs=trivial_programs,
)
