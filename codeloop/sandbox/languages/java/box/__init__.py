"""Java function tests in two sandboxes: the test's Main and the solution are apart.

The solution's `class Solution` is compiled with `CodeloopServer`, which answers
calls by method name, decoding arguments into the declared generic parameter types;
the test's `Main` is compiled apart with a proxy `Solution` (the trusted prompt's
complete methods, and the open one calling across the pipes) and `CodeloopDriver`,
which reads the nonce from stdin, runs `Main.main` and prints the nonce only when it
returned (the vacuous line, `function_tests.vacuous`, when it never called the
solution; a NaN or an infinity the solution returns halts it as a failure). No
`System.exit(0)`, `Runtime.halt`, class shadowing `java.util.Arrays` or printed marker
of the solution reaches the test. Values cross type-tagged (`Codeloop.java.txt`):
booleans, int, long, double, float, char, String, List, Map, Optional (and Object,
decoded by tag).
"""

from __future__ import annotations

import re
from importlib import resources

from codeloop.sandbox.signatures import split_top_level

_STUB = re.compile(
    r"^\s*public\s+([\w<>\[\], ?]+?)\s+([A-Za-z_]\w*)\s*\(([^)]*)\)\s*(?:throws\s+[\w., ]+)?\{\s*$",
    re.M,
)
_BOXED = {
    "int": "Integer",
    "long": "Long",
    "double": "Double",
    "float": "Float",
    "boolean": "Boolean",
    "char": "Character",
    "short": "Short",
    "byte": "Byte",
}
_ALLOWED = {
    "int",
    "long",
    "double",
    "float",
    "boolean",
    "char",
    "Integer",
    "Long",
    "Double",
    "Float",
    "Boolean",
    "Character",
    "String",
    "List",
    "ArrayList",
    "Map",
    "HashMap",
    "Optional",
    "Object",
}


def _read(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text()


def signature(prompt: str, entry_point: str | None) -> tuple[str, str, list[str], str, int] | None:
    """(return type, name, parameter types, throws clause, offset of the stub), or None."""
    found = [m for m in _STUB.finditer(prompt) if entry_point in (None, m.group(2))]
    if not found:
        return None
    stub = found[-1]
    result, name, params = stub.group(1).strip(), stub.group(2), stub.group(3)
    kinds = [part.rsplit(None, 1)[0] for part in split_top_level(params)]
    words = set(re.findall(r"[A-Za-z_]\w*", result + " " + " ".join(kinds)))
    if not words <= _ALLOWED or "[" in result + "".join(kinds):
        return None
    throws = re.search(r"throws\s+([\w., ]+)", stub.group(0))
    return (
        result,
        name,
        kinds,
        (f" throws {throws.group(1).strip()}" if throws else ""),
        stub.start(),
    )


def batch_compiler_source() -> str:
    """`CodeloopJavac`: javac for several argument groups in one JVM (trusted)."""
    return _read("CodeloopJavac.java.txt")


def driver_source(prompt: str, test: str, sig: tuple) -> str:
    """The test's file: trusted prompt with the open method proxied, Main, the driver."""
    result, name, kinds, throws, at = sig
    params = ", ".join(f"{kind} codeloopArg{i}" for i, kind in enumerate(kinds))
    args = "".join(f", codeloopArg{i}" for i in range(len(kinds)))
    call = (
        f'Codeloop.call("{name}", Codeloop.returnType(Solution.class, "{name}", {len(kinds)})'
        f"{args})"
    )
    body = f"return ({_BOXED.get(result, result)}) {call};" if result != "void" else f"{call};"
    proxy = (
        f'    @SuppressWarnings("unchecked")\n'
        f"    public {result} {name}({params}){throws} {{\n        {body}\n    }}\n}}\n"
    )
    return (
        prompt[:at]
        + proxy
        + "\n"
        + test
        + "\n"
        + _read("CodeloopDriver.java.txt")
        + "\n"
        + _read("Codeloop.java.txt")
    )


def server_source(program: str) -> str:
    """The solution's file: the program as written, the server, the codec."""
    return program + "\n" + _read("CodeloopServer.java.txt") + "\n" + _read("Codeloop.java.txt")
