"""Go function tests in two sandboxes: the test binary and the solution are apart.

The solution is built with a `main` that answers calls by name (reflection decodes
the arguments into the declared parameter types; `codeloop_codec.go` is the
type-strict encoding both sides share, interface{} values included, with their
dynamic types); the test binary holds the task's
trusted prompt, a proxy with the entry point's declared signature, the test, and a
`main` that reads the nonce from stdin, runs the test's functions with
`testing.Main` and prints the nonce only when every test passed (the vacuous line,
`function_tests.vacuous`, when it has no test function or none called the solution;
a NaN or an infinity the solution returns ends it as a failure). One `go build`
makes both binaries. No `PASS` printed by the solution, `syscall.Exit`, `TestMain`
of its own or patched package state reaches the test binary. Signatures with types that cannot
cross as plain values (error and other non-empty interfaces, func, chan, structs,
pointers, variadics) are refused: no verdict is given.
"""

from __future__ import annotations

import re
from importlib import resources

from codeloop.sandbox.signatures import split_top_level

_STUB = re.compile(r"^func\s+([A-Za-z_]\w*)\s*\((.*)\)\s*(.*?)\s*\{\s*$", re.M)
_UNSUPPORTED = re.compile(r"interface(?!\s*\{\s*\})|error|func|chan|struct|\*|\.\.\.")


def _read(name: str) -> bytes:
    return resources.files(__name__).joinpath(name).read_bytes()


def _types(params: str) -> list[str] | None:
    """Go parameter types in order ("a, b int, c []string" -> int, int, []string)."""
    found: list[str] = []
    pending = 0
    for part in split_top_level(params):
        words = part.split(None, 1)
        if len(words) == 1:
            pending += 1  # a name whose type comes later (or an unnamed type)
            continue
        found += [words[1]] * (pending + 1)
        pending = 0
    if pending:  # unnamed parameters: every part was a type
        return split_top_level(params) if not found else None
    return found


def signature(prompt: str, entry_point: str | None) -> tuple[str, list[str], list[str], int] | None:
    """(name, parameter types, result types, offset of the stub line), or None."""
    found = [m for m in _STUB.finditer(prompt) if entry_point in (None, m.group(1))]
    if not found:
        return None
    stub = found[-1]
    name, params, results = stub.group(1), stub.group(2), stub.group(3).strip()
    inputs = _types(params)
    single = [results] if results else []
    outputs = _types(results[1:-1]) if results.startswith("(") else single
    if inputs is None or outputs is None or _UNSUPPORTED.search(params + results):
        return None
    return name, inputs, outputs, stub.start()


def proxy(sig: tuple) -> str:
    name, inputs, outputs, _at = sig
    params = ", ".join(f"codeloopArg{i} {kind}" for i, kind in enumerate(inputs))
    args = ", ".join(f"&codeloopArg{i}" for i in range(len(inputs)))
    lines = [f"func {name}({params}) ({', '.join(outputs)}) {{"]
    lines += [f"\tvar codeloopResult{i} {kind}" for i, kind in enumerate(outputs)]
    pointers = "".join(f", &codeloopResult{i}" for i in range(len(outputs)))
    lines.append(f'\tcodeloopCall("{name}", []interface{{}}{{{args}}}{pointers})')
    if outputs:
        lines.append("\treturn " + ", ".join(f"codeloopResult{i}" for i in range(len(outputs))))
    lines.append("}")
    return "\n".join(lines) + "\n"


def server_main(sig: tuple) -> str:
    name = sig[0]
    return f'\nfunc main() {{\n\tcodeloopServe(map[string]interface{{}}{{"{name}": {name}}})\n}}\n'


_TEST_FUNC = re.compile(r"^func\s+(Test(?![a-z])\w*)\s*\(\s*\w+\s+\*testing\.T\s*\)", re.M)
"""A test function as `go test` finds one: `Test` alone or followed by no lower-case
letter, taking only a `*testing.T`."""


def test_names(test_code: str) -> list[str]:
    """The test functions of a (trusted) test, in source order; `test_code` has its
    comments and literals blanked, so a commented-out test is not one."""
    return _TEST_FUNC.findall(test_code)


def tests_file(names: list[str]) -> bytes:
    """`codeloop_tests.go`: the list `testing.Main` runs in the test process."""
    rows = "".join(f'\t{{Name: "{name}", F: {name}}},\n' for name in names)
    return (
        'package main\n\nimport "testing"\n\n'
        f"var codeloopTests = []testing.InternalTest{{\n{rows}}}\n"
    ).encode()


def files(names: list[str], library: bool = False) -> dict[str, bytes]:
    """The trusted Go files of both sides (in `drv/` and `srv/`) for a test whose test
    functions are `names`: frames, codec, the test's main, the server.

    `library`: the codec and frames come from the package `LIBRARY_IMPORT` (see
    `library_files`), through a small file of forwarding functions per side, instead
    of being compiled into both binaries with every check.
    """
    if library:
        shared = {"codeloop_rpc.go": _FORWARDERS.encode()}
    else:
        shared = {
            "codeloop_frame.go": _read("codeloop_frame.go.txt"),
            "codeloop_codec.go": _read("codeloop_codec.go.txt"),
        }
    return {
        **{f"drv/{name}": text for name, text in shared.items()},
        "drv/codeloop_driver.go": _read("codeloop_driver.go.txt"),
        "drv/codeloop_tests.go": tests_file(names),
        **{f"srv/{name}": text for name, text in shared.items()},
        "srv/codeloop_server.go": _read("codeloop_server.go.txt"),
    }


LIBRARY_IMPORT = "codeloop/rpc"
"""The import path of the codec and frames as a package of their own (GOPATH mode)."""
_SIGNATURES = {
    "Encode": ("v reflect.Value, depth int", "(interface{}, error)", "v, depth"),
    "Decode": ("x interface{}, t reflect.Type, depth int", "(reflect.Value, error)", "x, t, depth"),
    "Frame": ("w io.Writer, payload []byte", "error", "w, payload"),
    "Read": ("r *bufio.Reader", "([]byte, error)", "r"),
}
"""What the test's and the solution's programs call: codeloop<Name> in package main."""


def _functions(prefix: str, target: str) -> str:
    return "".join(
        f"func {prefix}{name}({params}) {results} {{ return {target}{name}({args}) }}\n"
        for name, (params, results, args) in _SIGNATURES.items()
    )


_IMPORTS = 'import (\n\t"bufio"\n\t"io"\n\t"reflect"\n'
_FORWARDERS = (
    "package main\n\n// The codec and frames come from the package codeloop/rpc, compiled once "
    f'into the shared build cache.\n\n{_IMPORTS}\n\trpc "{LIBRARY_IMPORT}"\n)\n\n'
    + _functions("codeloop", "rpc.")
)


def library_files() -> dict[str, bytes]:
    """The package `LIBRARY_IMPORT`, as files under a GOPATH root: the same codec and
    frames, in `package rpc`, with exported entry points."""
    folder = f"src/{LIBRARY_IMPORT}"
    found = {}
    for name in ("codeloop_codec.go", "codeloop_frame.go"):
        text = _read(f"{name}.txt").decode().replace("package main\n", "package rpc\n", 1)
        found[f"{folder}/{name}"] = text.encode()
    api = f"package rpc\n\n{_IMPORTS})\n\n" + _functions("", "codeloop")
    found[f"{folder}/codeloop_api.go"] = api.encode()
    return found
