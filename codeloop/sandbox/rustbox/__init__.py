"""Rust function tests in two sandboxes: the test and the solution are separate programs.

The solution's crate is the program, as written, inside `mod solution`, plus an
entry that decodes the call's arguments, calls the function and encodes its result,
and a `main` that answers calls (`codeloop_rpc::serve`). The test's crate is the
task's trusted prompt up to the open function (its `use` lines), a proxy with the
function's declared signature that calls across the pipes (`codeloop_rpc::call`),
and the test as written, built with `rustc --test`. Only the test's process prints
the test harness's summary and sets the exit code; no `macro_rules!` shadowing an
assert, `exit(0)` or printed "test result: ok." of the solution reaches it. The
channel's descriptors reach the test in CODELOOP_REQUESTS / CODELOOP_REPLIES (its
arguments belong to the test harness).

Types that cross: integers, floats, bool, char, String and &str, Vec, slices and
references to them, Option, tuples up to 4, HashMap, and `Box<dyn Any>` / `&dyn Any`
holding a scalar, a string or a Vec of them (its concrete type travels with it);
`Vec<&str>` and `HashMap<&str, &str>` arguments are rebuilt from owned strings.
Others (the task's own structs and enums, which the solution defines) keep the
one-process composition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from codeloop.sandbox.signatures import split_top_level

MODULE = "codeloop_rpc.rs"
_STUB = re.compile(
    r"^[ \t]*(?:pub\s+)?fn\s+([A-Za-z_]\w*)\s*(<[^>{}]*>)?\s*\(([^)]*)\)\s*(?:->\s*([^{]+?))?\s*\{",
    re.M,
)
_SCALARS = {
    "i8", "i16", "i32", "i64", "i128", "isize",
    "u8", "u16", "u32", "u64", "u128", "usize",
    "f32", "f64", "bool", "char", "String",
}  # fmt: skip
_LIFETIME = re.compile(r"'\w+\s*")
_DYN_ANY = re.compile(r"Box\s*<\s*dyn\s+Any\s*>")
_FREE_CALL = re.compile(r"(?<![\w.:])([a-z_][A-Za-z0-9_]*)\s*\(")
PRELUDE_FUNCTIONS = frozenset({"drop"})
"""Lower-case functions of Rust's prelude (its variants, `Some`, `Ok`, `Err`, are
capitalised and never match a free call here)."""


def module() -> bytes:
    return resources.files(__name__).joinpath(MODULE).read_bytes()


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    """The declared type, lifetimes removed."""
    owned: str
    """The type decoded from the wire."""
    convert: str
    """Expression turning the decoded value `{v}` into the argument."""


def _owned(kind: str) -> tuple[str, str] | None:
    """(owned type, conversion of a decoded value `{v}` to `kind`), or None when it
    cannot cross."""
    kind = kind.strip()
    if kind in _SCALARS:
        return kind, "{v}"
    if _DYN_ANY.fullmatch(kind):
        return "Box<dyn Any>", "{v}"
    if kind.startswith("&"):
        inner = kind[1:].strip()
        if inner.startswith("mut "):
            return None
        if inner == "str":
            return "String", "&{v}"
        if re.fullmatch(r"dyn\s+Any", inner):
            return "Box<dyn Any>", "&*{v}"
        if inner.startswith("[") and inner.endswith("]"):
            found = _owned(inner[1:-1])
            if found is None or found[1] != "{v}":
                return None
            return f"Vec<{found[0]}>", "&{v}"
        found = _owned(inner)
        if found is None or found[1] != "{v}":
            return None
        return found[0], "&{v}"
    if kind.startswith("(") and kind.endswith(")"):
        parts = [_owned(part) for part in split_top_level(kind[1:-1]) if part.strip()]
        if not parts or any(p is None or p[1] != "{v}" for p in parts):
            return None
        owned = ", ".join(p[0] for p in parts if p is not None)
        return f"({owned},)", "{v}"
    generic = re.fullmatch(r"(Vec|Option|HashMap)\s*<(.*)>", kind, re.S)
    if generic is None:
        return None
    outer, inside = generic.group(1), [part.strip() for part in split_top_level(generic.group(2))]
    if outer == "HashMap":
        if len(inside) != 2:
            return None
        if inside == ["&str", "&str"]:
            return (
                "HashMap<String, String>",
                "{v}.iter().map(|(k, x)| (k.as_str(), x.as_str())).collect()",
            )
        key, value = _owned(inside[0]), _owned(inside[1])
        if key is None or value is None or key[1] != "{v}" or value[1] != "{v}":
            return None
        return f"HashMap<{key[0]}, {value[0]}>", "{v}"
    if len(inside) != 1:
        return None
    if outer == "Vec" and inside[0] == "&str":
        return "Vec<String>", "{v}.iter().map(|x| x.as_str()).collect()"
    found = _owned(inside[0])
    if found is None or found[1] != "{v}":
        return None
    return f"{outer}<{found[0]}>", "{v}"


def _returnable(kind: str) -> bool:
    """Whether the proxy can hand the test a value of `kind` (&str is leaked to 'static)."""
    kind = kind.strip()
    if kind in ("", "()", "&str"):
        return True
    if kind.startswith("&"):
        return False
    generic = re.fullmatch(r"(Vec|Option)\s*<(.*)>", kind, re.S)
    if generic and generic.group(2).strip() == "&str":
        return True
    found = _owned(kind)
    return found is not None and found[1] == "{v}"


@dataclass(frozen=True)
class Signature:
    name: str
    params: list[Param]
    result: str
    """The return type, lifetimes removed ("" for none)."""

    def proxy_declaration(self) -> str:
        """The proxy's signature, rebuilt from checked parts only (never copied text)."""
        params = ", ".join(f"{param.name}: {param.kind}" for param in self.params)
        result = re.sub(r"&\s*str\b", "&'static str", self.result)
        return f"fn {self.name}({params})" + (f" -> {result}" if result else "")


def _parse(stub: re.Match[str]) -> Signature | None:
    generics = stub.group(2) or ""
    if generics and _LIFETIME.sub("", generics).strip("<>, \t"):
        return None  # type parameters, not only lifetimes
    params: list[Param] = []
    for part in split_top_level(stub.group(3)):
        if not part.strip():
            continue
        if ":" not in part:
            return None
        name, kind = part.split(":", 1)
        words = name.split()
        if not words or not re.fullmatch(r"[A-Za-z_]\w*", words[-1]):
            return None
        kind = _LIFETIME.sub("", kind).strip()
        found_type = _owned(kind)
        if found_type is None:
            return None
        params.append(Param(words[-1], kind, found_type[0], found_type[1]))
    result = _LIFETIME.sub("", stub.group(4) or "").strip()
    if not _returnable(result):
        return None
    return Signature(stub.group(1), params, result)


def signatures(
    prompt: str, entry_point: str | None, program: str, test: str
) -> tuple[list[Signature], int] | None:
    """The functions the test process reaches through proxies, and the offset of the
    prompt's open function; None when that function's types cannot cross (then the
    one-process composition is used: a decision made on trusted text only).

    First the function the trusted prompt leaves open. Then every function the
    program defines and the test calls that the prompt does not declare (HumanEval-X
    Rust/10 tests a helper of the solution, Rust/38 calls the solution's encoder):
    their proxies are built from the program's signature, checked like the prompt's;
    one with types that cannot cross gets no proxy, so the test does not compile.
    """
    found = [m for m in _STUB.finditer(prompt) if m.group(1) != "main"]
    found = [m for m in found if entry_point in (None, m.group(1))]
    if not found:
        return None
    stub = found[-1]
    first = _parse(stub)
    if first is None:
        return None
    declared = {m.group(1) for m in _STUB.finditer(prompt[: stub.start()])}
    # Free calls only (no method, no path), and no name of the prelude: a proxy is
    # glob-imported by the test's `use super::*`, which would shadow the prelude's
    # `Some`, `Ok` or `drop` with the solution's function.
    called = set(_FREE_CALL.findall(test)) - PRELUDE_FUNCTIONS
    chosen, seen = [first], {first.name, "main", *declared}
    for match in _STUB.finditer(program):
        name = match.group(1)
        if name in seen or name not in called:
            continue
        seen.add(name)
        extra = _parse(match)
        if extra is not None:
            chosen.append(extra)
    return chosen, stub.start()


def server_source(program: str, sigs: list[Signature]) -> str:
    """The solution's crate: the program in `mod solution`, our entry beside it, our main."""
    lines = [
        "    pub fn codeloop_entry(",
        "        input: &mut crate::codeloop_rpc::Reader,",
        "    ) -> Result<Vec<u8>, String> {",
        "        let called = input.name()?;",
        '        let mut out = b"v".to_vec();',
        "        match called {",
    ]
    for sig in sigs:
        lines.append(f'            "{sig.name}" => {{')
        arguments = []
        for index, param in enumerate(sig.params):
            lines.append(
                f"                let codeloop_{index}: {param.owned} = "
                "crate::codeloop_rpc::Get::get(input)?;"
            )
            arguments.append(param.convert.format(v=f"codeloop_{index}"))
        lines += [
            "                if !input.done() {",
            '                    return Err("codeloop: trailing data".to_string());',
            "                }",
            f"                let result = {sig.name}({', '.join(arguments)});",
            "                crate::codeloop_rpc::Put::put(&result, &mut out);",
            "            }",
        ]
    lines += [
        '            _ => return Err(format!("no function {}", called)),',
        "        }",
        "        Ok(out)",
        "    }",
    ]
    return (
        f'#[path = "{MODULE}"]\nmod codeloop_rpc;\n\n'
        "fn main() {\n    codeloop_rpc::serve(solution::codeloop_entry);\n}\n\n"
        f"mod solution {{\n{program}\n\n" + "\n".join(lines) + "\n}\n"
    )


def test_source(prompt: str, test: str, sigs: list[Signature], at: int) -> str:
    """The test's crate: trusted prompt up to its open function, proxies, the test."""
    proxies = []
    for sig in sigs:
        puts = "".join(f" codeloop_rpc::Put::put(&{p.name}, out);" for p in sig.params)
        proxies.append(
            f"{sig.proxy_declaration()} {{\n"
            f'    codeloop_rpc::call("{sig.name}", |out: &mut Vec<u8>| {{{puts} }})\n}}\n'
        )
    return (
        f'#[path = "{MODULE}"]\nmod codeloop_rpc;\n{prompt[:at]}\n' + "".join(proxies) + f"{test}\n"
    )
