"""Rust crates the tests link (rand, regex, md5), built once offline, and our codec library."""

from __future__ import annotations

import re
from pathlib import Path

from codeloop.sandbox.language import BOX, Language, version_of
from codeloop.sandbox.languages.rust import box
from codeloop.sandbox.testbuild import (
    BuildHost,
    build_once,
    failed_archives,
    switched_off,
)
from codeloop.store import sha256_json

CARGO_REGISTRY = "/usr/share/cargo/registry"
RUST_CRATES = {
    "rand": 'rand = "0.8"',
    "regex": 'regex = { version = "1", default-features = false, features = ["std", "unicode"] }',
    "md5": 'md5 = "0.7"',
}
"""The crates HumanEval-X's Rust declarations `use`, as Debian packages them."""
_CRATES_MOUNT = "/crates"
_RUST_FLAGS = (
    "--edition",
    "2021",
    "--test",
    "-A",
    "warnings",
    "-C",
    "opt-level=0",
    "-C",
    "overflow-checks=on",
    "-C",
    "debug-assertions=on",
    "-C",
    "strip=debuginfo",
)
"""Like `cargo test`'s debug profile (no optimization, overflow checks and debug
assertions on) but without debug info, which compiles faster and keeps the cached
binaries small."""
_RAND_07 = re.compile(r"\bgen_range\s*\(")
_RUST_CHAR = re.compile(r"'(\\.|[^\\'])'")


def rust_without_comments(source: str) -> str:
    """`source` with its comments blanked (block comments nest in Rust); literals are kept."""
    out: list[str] = []
    index, length = 0, len(source)
    while index < length:
        if source.startswith("//", index):
            end = source.find("\n", index)
            index = length if end < 0 else end
        elif source.startswith("/*", index):
            depth, index = 1, index + 2
            while index < length and depth:
                if source.startswith("/*", index):
                    depth, index = depth + 1, index + 2
                elif source.startswith("*/", index):
                    depth, index = depth - 1, index + 2
                else:
                    index += 1
            out.append(" ")
        elif source[index] == '"':
            end = index + 1
            while end < length and source[end] != '"':
                end += 2 if source[end] == "\\" else 1
            out.append(source[index : end + 1])
            index = end + 1
        elif source[index] == "'" and (literal := _RUST_CHAR.match(source, index)):
            out.append(literal.group(0))
            index = literal.end()
        else:
            out.append(source[index])
            index += 1
    return "".join(out)


def uses_rand_07_api(source: str) -> bool:
    """Whether `source` calls `gen_range(low, high)` (rand 0.7); rand 0.8 takes a range.

    Commented-out code does not count (Rust/32's whole test module is a comment).
    """
    source = rust_without_comments(source)
    for match in _RAND_07.finditer(source):
        depth, index = 1, match.end()
        while index < len(source) and depth:
            char = source[index]
            if char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
            elif char == "," and depth == 1:
                return True
            index += 1
    return False


def _crate_manifest() -> str:
    dependencies = "\n".join(RUST_CRATES.values())
    return (
        '[package]\nname = "codeloop_crates"\nversion = "0.0.0"\nedition = "2021"\n\n'
        '[lib]\npath = "src/lib.rs"\n\n'
        f"[dependencies]\n{dependencies}\n\n[profile.release]\ndebug = false\n"
    )


def _cargo_config() -> str:
    return (
        '[source.crates-io]\nreplace-with = "debian"\n\n'
        f'[source.debian]\ndirectory = "{CARGO_REGISTRY}"\n\n'
        '[net]\noffline = true\n\n[build]\nrustc = "/usr/bin/rustc"\n'
    )


def rust_crates(sandbox: BuildHost, language: Language) -> tuple[Path, dict[str, str]]:
    """Build rand, regex and md5 once per toolchain; return (folder, {crate: rlib}).

    cargo reads Debian's registry as a directory source (no network); the rlibs land
    in a shared cache folder that every worker links against read-only.
    """
    missing = [path for path in ("/usr/bin/cargo", CARGO_REGISTRY) if not Path(path).exists()]
    if missing:
        raise ValueError(
            f"rust tests need {', '.join(missing)}: apt-get install cargo "
            "librust-rand-dev librust-regex-dev librust-md5-dev"
        )
    key = sha256_json(
        {"rustc": version_of(language), "manifest": _crate_manifest(), "flags": _RUST_FLAGS}
    )[:16]
    folder = build_once(
        sandbox,
        "rust-crates",
        key,
        {
            "Cargo.toml": _crate_manifest(),
            "src/lib.rs": "",
            ".cargo/config.toml": _cargo_config(),
        },
        ["/usr/bin/cargo", "build", "--offline", "--release", "--quiet"],
        {
            "CARGO_HOME": f"{BOX}/.cargo-home",
            "RUSTC": "/usr/bin/rustc",
            "CARGO_TARGET_DIR": f"{BOX}/target",
        },
        "target/release/deps/*.rlib",
    )
    crates: dict[str, str] = {}
    for rlib in sorted(folder.glob("*.rlib")):
        crate = rlib.name[3:].rsplit("-", 1)[0]
        if crate in RUST_CRATES:
            crates[crate] = rlib.name
    if set(crates) != set(RUST_CRATES):
        raise ValueError(f"the rust crate build in {folder} holds only {sorted(crates)}")
    return folder, crates


_RPC_MOUNT = "/rpclib"


def rust_rpc_library(sandbox: BuildHost, language: Language) -> Path | None:
    """`box`'s codec compiled once per toolchain as an rlib (None if that failed).

    A test half is a few dozen lines beside our 400-line codec, whose type and borrow
    checking took most of its compile. Built with the test halves' own flags, so the
    codec behaves as when it is compiled into each crate; `CODELOOP_RUST_RPC_LIB=off`
    compiles it into each crate (benches).
    """
    if switched_off("CODELOOP_RUST_RPC_LIB"):
        return None
    flags = [flag for flag in _RUST_FLAGS if flag != "--test"]
    source = box.module().decode()
    key = sha256_json({"rustc": version_of(language), "flags": flags, "source": source})
    if key in failed_archives:
        return None
    output = f"{BOX}/lib{box.LIBRARY}.rlib"
    argv = ["/usr/bin/rustc", *flags, "--crate-type", "rlib", "--crate-name", box.LIBRARY]
    argv += ["-o", output, f"{BOX}/{box.MODULE}"]
    try:
        return build_once(sandbox, "rust-rpc", key[:16], {box.MODULE: source}, argv, {}, "*.rlib")
    except ValueError:
        failed_archives.add(key)
        return None
