"""Go source handling: which packages a program uses, and the test file both halves build."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


_GO_STD = (
    "bufio",
    "bytes",
    "container/heap",
    "container/list",
    "crypto/md5",
    "crypto/sha256",
    "encoding/hex",
    "errors",
    "fmt",
    "math",
    "math/big",
    "math/bits",
    "math/rand",
    "os",
    "reflect",
    "regexp",
    "sort",
    "strconv",
    "strings",
    "time",
    "unicode",
    "unicode/utf8",
)
"""Standard packages imported when used but not declared (HumanEval-X's prompts miss
some; the official harness adds a smaller list of this kind)."""
_GO_TOKENS = re.compile(
    r"//[^\n]*|/\*.*?\*/|`[^`]*`|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S
)
_GO_PACKAGE = re.compile(r"^\s*package\s+\w+\s*;?\s*$", re.M)
_GO_IMPORT_BLOCK = re.compile(r"^\s*import\s*\((.*?)\)\s*;?\s*$", re.M | re.S)
_GO_IMPORT_LINE = re.compile(r"^\s*import\s+((?:[\w.]+\s+)?\"[^\"]+\")\s*;?\s*$", re.M)
_GO_SPEC = re.compile(r"(?:([\w.]+)\s+)?\"([^\"]+)\"")


def _go_code_only(source: str) -> str:
    """`source` without comments and literals, so `fmt.` inside a string is not a use."""
    return _GO_TOKENS.sub(lambda m: " " if m.group(0).startswith("/") else '""', source)


def go_split_imports(source: str) -> tuple[str, dict[str, str]]:
    """Remove package clauses and import declarations; return (body, {name: path}).

    Only the code's own declarations are returned; names are aliases where given,
    else the last path element. Blank and dot imports are dropped.
    """
    declared: dict[str, str] = {}

    def collect(specs: str) -> None:
        for alias, path in _GO_SPEC.findall(specs):
            if alias in ("_", "."):
                continue
            declared.setdefault(alias or path.rsplit("/", 1)[-1], path)

    def block(match: re.Match[str]) -> str:
        collect(match.group(1))
        return ""

    def line(match: re.Match[str]) -> str:
        collect(match.group(1))
        return ""

    body = _GO_PACKAGE.sub("", source)
    body = _GO_IMPORT_BLOCK.sub(block, body)
    body = _GO_IMPORT_LINE.sub(line, body)
    return body, declared


def go_test_file(program: str, test: str) -> str:
    """One `package main` test file importing exactly the packages the code uses."""
    program_body, program_imports = go_split_imports(program)
    test_body, test_imports = go_split_imports(test)
    body = program_body.strip("\n") + "\n\n" + test_body.strip("\n") + "\n"
    code = _go_code_only(body)
    candidates = {path.rsplit("/", 1)[-1]: path for path in _GO_STD}
    candidates.update(
        {"testing": "testing", "assert": "github.com/stretchr/testify/assert"},
    )
    candidates.update(program_imports)
    candidates.update(test_imports)
    used = []
    for name, path in sorted(candidates.items(), key=lambda item: item[1]):
        if re.search(rf"(?<![\w.]){re.escape(name)}\s*\.", code):
            alias = "" if path.rsplit("/", 1)[-1] == name else f"{name} "
            used.append(f'    {alias}"{path}"\n')
    imports = "import (\n" + "".join(used) + ")\n\n" if used else ""
    return "package main\n\n" + imports + body
