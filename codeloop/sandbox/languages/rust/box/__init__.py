"""Rust function tests in two sandboxes: the test and the solution are separate programs.

The solution's crate is the program, as written, inside `mod solution`, plus an
entry that decodes the call's arguments, calls the function and encodes its result,
and a `main` that answers calls (`codeloop_rpc::serve`). The test's crate is the
task's trusted prompt up to the open function (its `use` lines), a proxy with the
function's declared signature that calls across the pipes (`codeloop_rpc::call`),
a trusted copy of each helper the test calls that HumanEval-X's Rust prompt leaves
out (`TRUSTED_HELPERS`), and the test as written, built with `rustc --test`. Only the
test's process prints the test harness's summary and sets the exit code; no
`macro_rules!` shadowing an assert, `exit(0)` or printed "test result: ok." of the
solution reaches it. The channel's descriptors reach the test in CODELOOP_REQUESTS /
CODELOOP_REPLIES (its arguments belong to the test harness). The verdict is a nonce on
the test's stdin (never the solution's, and never in the environment, which both
sides get): read before main by an `.init_array` entry of the test's crate
(`_DRIVE`), printed at exit only when the process exits with 0, after every test
passed; the vacuous line (`function_tests.vacuous`) instead when no test called the
solution (tests commented out: "0 passed"). A NaN or an infinity the solution returns
ends the test process with 1 (a wrong answer, whatever the test's comparison says).

Types that cross: integers, floats, bool, char, String and &str, Vec, slices and
references to them, Option, tuples up to 4, HashMap, and `Box<dyn Any>` / `&dyn Any`
holding a scalar, a string or a Vec of them (its concrete type travels with it);
`Vec<&str>` and `HashMap<&str, &str>` arguments are rebuilt from owned strings.
An enum the solution defines and the signature uses (HumanEval-X Rust/137's
`RtnType`) crosses when it is plain: only derives from an allowlist, type parameters
without bounds, tuple or unit variants whose fields are its type parameters or types
that cross. The test's crate gets a copy rebuilt from those checked parts (never the
solution's text), so its derived `PartialEq` is the compiler's, and both sides get
generated codecs. Other types (structs, enums with impls of their own that matter,
trait objects other than `dyn Any`) are refused: no verdict is given.
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
_ENUM = re.compile(
    r"((?:#\[derive\([\w\s,]*\)\]\s*)*)(?:pub(?:\([\w\s]*\))?\s+)?enum\s+([A-Z]\w*)\s*"
    r"(<[^<>{}]*>)?\s*\{([^{}]*)\}"
)
_DERIVES = frozenset({"Debug", "PartialEq", "Eq", "Clone", "Copy", "PartialOrd", "Ord", "Hash"})
_VARIANT = re.compile(r"([A-Z]\w*)\s*(?:\((.*)\))?", re.S)
PRELUDE_FUNCTIONS = frozenset({"drop"})
"""Lower-case functions of Rust's prelude (its variants, `Some`, `Ok`, `Err`, are
capitalised and never match a free call here)."""

_ENCODE_CYCLIC = """\
fn encode_cyclic(s: &str) -> String {
    // returns encoded string by cycling groups of three characters.
    // split string to groups. Each of length 3.
    let l = s.len();
    let num = (l + 2) / 3;
    let mut output = String::new();
    for i in 0..num {
        let group = &s[i * 3..std::cmp::min(l, (i + 1) * 3)];
        // cycle elements in each group. Unless group has fewer elements than 3.
        if group.len() == 3 {
            let x = format!("{}{}{}", &group[1..2], &group[2..3], &group[0..1]);
            output.push_str(&x);
        } else {
            output.push_str(group);
        }
    }
    output
}
"""
TRUSTED_HELPERS: dict[str, dict[str, str]] = {"decode_cyclic": {"encode_cyclic": _ENCODE_CYCLIC}}
"""Helpers a test trusts that HumanEval-X's Rust prompts leave out, by the function the
prompt leaves open: {helper: its definition}. HumanEval/38's test decodes what the
task's encoder made; the other five languages' prompts define that encoder, Rust/38's
does not (its canonical solution does, in these words, as `pub fn`). Without this copy the test's
crate called the solution's own encoder, and an answer that made it the identity and
decoded by returning its input passed. Rust/50 (`encode_shift`) and Rust/32 (`poly`)
leave the helper itself open and give no verdict as shipped (a rand 0.7 test, refused;
a test commented out, vacuous), so they need no entry."""


def module() -> bytes:
    return resources.files(__name__).joinpath(MODULE).read_bytes()


LIBRARY = "codeloop_rpc_lib"
"""The crate name of `MODULE` compiled once as a library (`rustc --crate-type rlib`)."""


def _module_item(linked: bool) -> str:
    """The crate's `codeloop_rpc` module: the library's items where it is `linked` (its
    type checking and borrow checking, most of a test half's compile, done once), else
    the module's source compiled into the crate."""
    if linked:
        return f"mod codeloop_rpc {{\n    pub use ::{LIBRARY}::*;\n}}\n"
    return f'#[path = "{MODULE}"]\nmod codeloop_rpc;\n'


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    """The declared type, lifetimes removed."""
    owned: str
    """The type decoded from the wire."""
    convert: str
    """Expression turning the decoded value `{v}` into the argument."""


@dataclass(frozen=True)
class Enum:
    """A plain enum of the solution's, as checked parts (see the module's docstring)."""

    name: str
    generics: tuple[str, ...]
    derives: tuple[str, ...]
    variants: tuple[tuple[str, tuple[str, ...] | None], ...]
    """(name, field types); None for a unit variant, () for `Name()`."""

    def _head(self, bound: str) -> tuple[str, str]:
        params = ", ".join(f"{g}: {bound}" for g in self.generics)
        args = ", ".join(self.generics)
        return (f"<{params}>" if params else ""), (f"<{args}>" if args else "")

    def definition(self) -> str:
        """The enum rebuilt from its checked parts."""
        derive = f"#[derive({', '.join(self.derives)})]\n" if self.derives else ""
        generics = f"<{', '.join(self.generics)}>" if self.generics else ""
        body = "".join(
            f"    {name},\n" if fields is None else f"    {name}({', '.join(fields)}),\n"
            for name, fields in self.variants
        )
        return f"{derive}#[allow(dead_code)]\npub enum {self.name}{generics} {{\n{body}}}\n"

    def codec(self, rpc: str) -> str:
        """Put and Get for the enum; `rpc` is the path of the codeloop_rpc module."""
        params, args = self._head(f"{rpc}::Put")
        arms = []
        for index, (name, fields) in enumerate(self.variants):
            count = len(fields or ())
            binds = [f"f{i}" for i in range(count)]
            pattern = f"{self.name}::{name}" + ("" if fields is None else f"({', '.join(binds)})")
            puts = "".join(f" {rpc}::Put::put(f{i}, out);" for i in range(count))
            arms.append(
                f"            {pattern} => {{ {rpc}::put_variant(out, {index}, {count});{puts} }}"
            )
        put = (
            f"impl{params} {rpc}::Put for {self.name}{args} {{\n"
            "    fn put(&self, out: &mut Vec<u8>) {\n        match self {\n"
            + "\n".join(arms)
            + "\n        }\n    }\n}\n"
        )
        params, args = self._head(f"{rpc}::Get")
        arms = []
        for index, (name, fields) in enumerate(self.variants):
            count = len(fields or ())
            gets = ", ".join(f"{rpc}::Get::get(input)?" for _ in range(count))
            value = f"{self.name}::{name}" + ("" if fields is None else f"({gets})")
            arms.append(f"            ({index}, {count}) => Ok({value}),")
        get = (
            f"impl{params} {rpc}::Get for {self.name}{args} {{\n"
            f"    fn get(input: &mut {rpc}::Reader) -> Result<Self, String> {{\n"
            f"        match {rpc}::get_variant(input)? {{\n"
            + "\n".join(arms)
            + '\n            _ => Err("codeloop: a variant of another enum".to_string()),'
            "\n        }\n    }\n}\n"
        )
        return put + get


def plain_enums(program: str) -> dict[str, Enum]:
    """The enums of `program` that may cross, by name (see the module's docstring)."""
    code = re.sub(r"/\*.*?\*/", " ", re.sub(r"//[^\n]*", "", program), flags=re.S)
    found: dict[str, Enum] = {}
    for match in _ENUM.finditer(code):
        derives = [
            word.strip()
            for attribute in re.findall(r"derive\(([\w\s,]*)\)", match.group(1))
            for word in attribute.split(",")
            if word.strip()
        ]
        generics = [g.strip() for g in (match.group(3) or "<>")[1:-1].split(",") if g.strip()]
        if not set(derives) <= _DERIVES or not all(re.fullmatch(r"[A-Z]\w*", g) for g in generics):
            continue
        variants: list[tuple[str, tuple[str, ...] | None]] = []
        for part in split_top_level(match.group(4)):
            if not part.strip():
                continue
            variant = _VARIANT.fullmatch(part.strip())
            if variant is None:
                break
            fields = None
            if variant.group(2) is not None:
                fields = tuple(f.strip() for f in split_top_level(variant.group(2)) if f.strip())
                if not all(f in generics or _owned(f) == (f, "{v}") for f in fields):
                    break
            variants.append((variant.group(1), fields))
        else:
            name = match.group(2)
            if variants and name not in found:
                found[name] = Enum(name, tuple(generics), tuple(derives), tuple(variants))
    return found


def _enum_type(kind: str, enums: dict[str, Enum]) -> bool:
    """Whether `kind` names a plain enum of `enums`, with type arguments that cross."""
    match = re.fullmatch(r"([A-Z]\w*)\s*(?:<(.*)>)?", kind.strip(), re.S)
    if match is None or match.group(1) not in enums:
        return False
    arguments = [a.strip() for a in split_top_level(match.group(2) or "") if a.strip()]
    if len(arguments) != len(enums[match.group(1)].generics):
        return False
    return all(_owned(a) == (a, "{v}") for a in arguments)


def _owned(kind: str, enums: dict[str, Enum] | None = None) -> tuple[str, str] | None:
    """(owned type, conversion of a decoded value `{v}` to `kind`), or None when it
    cannot cross."""
    kind = kind.strip()
    if kind in _SCALARS:
        return kind, "{v}"
    if enums and _enum_type(kind, enums):
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


def _returnable(kind: str, enums: dict[str, Enum] | None = None) -> bool:
    """Whether the proxy can hand the test a value of `kind` (&str is leaked to 'static)."""
    kind = kind.strip()
    if enums and _enum_type(kind, enums):
        return True
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
    enums: tuple[Enum, ...] = ()
    """The solution's plain enums its types name (rebuilt and given codecs)."""

    def proxy_declaration(self) -> str:
        """The proxy's signature, rebuilt from checked parts only (never copied text)."""
        params = ", ".join(f"{param.name}: {param.kind}" for param in self.params)
        result = re.sub(r"&\s*str\b", "&'static str", self.result)
        return f"fn {self.name}({params})" + (f" -> {result}" if result else "")


def _parse(stub: re.Match[str], enums: dict[str, Enum] | None = None) -> Signature | None:
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
        found_type = _owned(kind, enums)
        if found_type is None:
            return None
        params.append(Param(words[-1], kind, found_type[0], found_type[1]))
    result = _LIFETIME.sub("", stub.group(4) or "").strip()
    if not _returnable(result, enums):
        return None
    words = set(re.findall(r"\w+", result + " " + " ".join(p.kind for p in params)))
    used = tuple(enum for name, enum in (enums or {}).items() if name in words)
    return Signature(stub.group(1), params, result, used)


_STD_TYPES = frozenset(
    {"Vec", "Option", "HashMap", "HashSet", "BTreeMap", "BTreeSet", "String", "Box", "Any"}
)


def solution_types(prompt: str, entry_point: str | None) -> list[str]:
    """Types the open function's signature names that the trusted prompt does not define
    (so the solution must): decided on trusted text only. A check whose solution does
    not define them as plain enums is a failure, never the one-process composition."""
    found = [m for m in _STUB.finditer(prompt) if m.group(1) != "main"]
    found = [m for m in found if entry_point in (None, m.group(1))]
    if not found:
        return []
    stub = found[-1]
    named = set(re.findall(r"\b[A-Z]\w*", f"{stub.group(3)} {stub.group(4) or ''}"))
    defined = set(re.findall(r"\b(?:enum|struct|type|trait)\s+([A-Z]\w*)", prompt))
    return sorted(named - _STD_TYPES - defined - set(_generic_names(stub.group(2))))


def _generic_names(generics: str | None) -> list[str]:
    return re.findall(r"\b[A-Z]\w*", _LIFETIME.sub("", generics or ""))


def trusted_helpers(open_function: str, prompt: str, test: str) -> dict[str, str]:
    """The helpers of `TRUSTED_HELPERS` the test's crate carries for a prompt whose open
    function is `open_function`: those the test calls, where the prompt has no definition
    of its own (which, in the test's crate already, comes first). Decided on trusted
    text only, so no answer changes which helper its test calls."""
    called = set(_FREE_CALL.findall(test))
    defined = {m.group(1) for m in _STUB.finditer(prompt)}
    helpers = TRUSTED_HELPERS.get(open_function, {})
    return {name: text for name, text in helpers.items() if name in called - defined}


def signatures(
    prompt: str, entry_point: str | None, program: str, test: str
) -> tuple[list[Signature], int] | None:
    """The functions the test process reaches through proxies, and the offset of the
    prompt's open function; None when that function's types cannot cross (then the
    check is refused: a decision made on trusted text only).

    First the function the trusted prompt leaves open. Then every function the
    program defines and the test calls that neither the prompt declares nor the test's
    crate carries a trusted copy of (`trusted_helpers`; HumanEval-X Rust/10 tests a
    helper of the solution): their proxies are built from the program's signature,
    checked like the prompt's; one with types that cannot cross gets no proxy, so the
    test does not compile.
    """
    found = [m for m in _STUB.finditer(prompt) if m.group(1) != "main"]
    found = [m for m in found if entry_point in (None, m.group(1))]
    if not found:
        return None
    stub = found[-1]
    # The solution's own plain enums (a name the trusted prompt defines is not one).
    trusted = set(re.findall(r"\b(?:enum|struct|type)\s+([A-Z]\w*)", prompt))
    enums = {name: e for name, e in plain_enums(program).items() if name not in trusted}
    first = _parse(stub, enums)
    if first is None:
        return None
    declared = {m.group(1) for m in _STUB.finditer(prompt[: stub.start()])}
    declared |= trusted_helpers(first.name, prompt, test).keys()
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
        extra = _parse(match, enums)
        if extra is not None:
            chosen.append(extra)
    return chosen, stub.start()


def server_source(program: str, sigs: list[Signature], linked: bool = False) -> str:
    """The solution's crate: the program in `mod solution`, our entry beside it, our main.

    `linked`: the codec comes from the `LIBRARY` crate (see `_module_item`)."""
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
    codecs = "".join(enum.codec("crate::codeloop_rpc") for enum in _enums(sigs))
    return (
        f"{_module_item(linked)}\n"
        "fn main() {\n    codeloop_rpc::serve(solution::codeloop_entry);\n}\n\n"
        f"mod solution {{\n{program}\n\n" + "\n".join(lines) + f"\n{codecs}}}\n"
    )


def _enums(sigs: list[Signature]) -> list[Enum]:
    found: dict[str, Enum] = {}
    for sig in sigs:
        for enum in sig.enums:
            found.setdefault(enum.name, enum)
    return list(found.values())


def test_source(
    prompt: str, test: str, sigs: list[Signature], at: int, linked: bool = False
) -> str:
    """The test's crate: trusted prompt up to its open function, the trusted helpers
    the prompt leaves out (`trusted_helpers`), proxies, the test.

    `linked`: the codec comes from the `LIBRARY` crate (see `_module_item`)."""
    proxies = []
    for sig in sigs:
        puts = "".join(f" codeloop_rpc::Put::put(&{p.name}, out);" for p in sig.params)
        proxies.append(
            f"{sig.proxy_declaration()} {{\n"
            f'    codeloop_rpc::call("{sig.name}", |out: &mut Vec<u8>| {{{puts} }})\n}}\n'
        )
    enums = "".join(e.definition() + e.codec("codeloop_rpc") for e in _enums(sigs))
    helpers = "".join(trusted_helpers(sigs[0].name, prompt, test).values())
    return (
        f"{_module_item(linked)}{prompt[:at]}\n"
        + helpers
        + enums
        + "".join(proxies)
        + _DRIVE
        + f"{test}\n"
    )


_DRIVE = (
    "#[used]\n"
    '#[link_section = ".init_array"]\n'
    'static CODELOOP_DRIVE: extern "C" fn() = {\n'
    '    extern "C" fn codeloop_drive() {\n'
    "        codeloop_rpc::drive();\n"
    "    }\n"
    "    codeloop_drive\n"
    "};\n"
)
"""The test crate's entry in `.init_array`: `codeloop_rpc::drive` reads the nonce from
stdin before the test harness's main and registers its printing at exit (in this crate,
never the library's: the linker may leave out a library object nothing refers to)."""
