"""C++ function tests in two sandboxes: the test and the solution are separate programs.

The solution's translation unit is the program plus a `main` that answers calls
(`codeloop::serve`); the test's is the task's trusted prompt (headers, helpers), a
proxy with the entry point's declared signature that calls across the pipes
(`codeloop::call`), and the test as written; before its `main`, `codeloop::drive`
reads the nonce from stdin and registers its printing at exit, which a failed assert
(abort) or a failed call (terminate) never reaches; a test whose main never called the
solution prints the vacuous line (`function_tests.vacuous`) instead. A NaN or an
infinity in a returned value ends the test process (exit 1) as a wrong answer.
The two are compiled separately, so no macro, `#define __assert_fail`, renamed
`main` or `exit(0)` of the solution reaches the test, and they run in two sandboxes
(`harness.run(..., partner=...)`). Values cross type-tagged (`codeloop_rpc.hpp`):
bool, integers, floating point, string, vector, list, map, pair, and `boost::any`
holding one of the scalar types or a string (its exact type travels with it).
Typedefs of the prompt (`typedef std::list<boost::any> list_any;`) are followed.
Entry points with other types (pointers, classes) are refused: no verdict is given.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from codeloop.sandbox.signatures import split_top_level

HEADER = "codeloop_rpc.hpp"
IMPL = "codeloop_rpc_impl.hpp"
"""The header's type-independent functions (the header includes it unless a check links
the library)."""
LIBRARY_SOURCE = "codeloop_rpc_lib.cpp"
"""What the sandbox compiles once into the library (see headers.cpp_rpc_library)."""
LIBRARY_OBJECT = "codeloop_rpc.o"
_WORD = re.compile(r"[A-Za-z_]\w*")
SUPPORTED_WORDS = {
    "int",
    "long",
    "short",
    "unsigned",
    "signed",
    "float",
    "double",
    "bool",
    "char",
    "string",
    "vector",
    "map",
    "pair",
    "list",
    "boost",
    "any",
    "size_t",
    "const",
    "std",
}
_TYPEDEF = re.compile(r"^\s*typedef\s+([^;]+?)\s+([A-Za-z_]\w*)\s*;", re.M)
_BOOST_ANY = re.compile(r"#\s*include\s*<boost/any\.hpp>")
_STUB = re.compile(r"^([A-Za-z_][\w:<>, \*&]*?)\s+([A-Za-z_]\w*)\s*\(([^)]*)\)\s*\{\s*$", re.M)


def header() -> bytes:
    return resources.files(__name__).joinpath(HEADER).read_bytes()


@functools.cache
def box_files() -> dict[str, str]:
    """Our files a C++ check's box holds: the header and its definitions."""
    folder = resources.files(__name__)
    return {name: folder.joinpath(name).read_text() for name in (HEADER, IMPL)}


@functools.cache
def library_files() -> dict[str, str]:
    """The sources of the library: the box's files and the unit that instantiates them."""
    source = resources.files(__name__).joinpath(LIBRARY_SOURCE).read_text()
    return {**box_files(), LIBRARY_SOURCE: source}


@functools.cache
def standard_headers() -> tuple[str, ...]:
    """The standard headers our codec header includes, in its order."""
    return tuple(re.findall(r"^#include <([^>]+)>", header().decode(), re.MULTILINE))


def signature(
    prompt: str, entry_point: str | None
) -> tuple[str, str, list[tuple[str, str]], int] | None:
    """(return type, name, [(type, name)], offset of the stub line) of the function the
    prompt leaves open, or None when it is absent or has types that cannot cross."""
    found = [m for m in _STUB.finditer(prompt) if entry_point in (None, m.group(2))]
    if not found:
        return None
    stub = found[-1]
    result, name, params = stub.group(1).strip(), stub.group(2), stub.group(3)
    typed = []
    for index, param in enumerate(split_top_level(params)):
        words = _WORD.findall(param)
        if len(words) >= 2 and words[-1] not in SUPPORTED_WORDS:
            kind = param[: param.rfind(words[-1])].strip()
        else:
            kind = param
        typed.append((kind, f"codeloop_arg{index}"))
    words = set(_WORD.findall(result)) | {w for kind, _ in typed for w in _WORD.findall(kind)}
    aliases = {alias: kind for kind, alias in _TYPEDEF.findall(prompt[: stub.start()])}
    used: set[str] = set()
    for _ in range(4):  # typedefs of typedefs
        used |= words & aliases.keys()
        words = {part for word in words for part in _WORD.findall(aliases.get(word, word))}
    texts = [result, *(kind for kind, _ in typed), *(aliases[word] for word in used)]
    if not words <= SUPPORTED_WORDS or any("*" in text for text in texts):
        return None
    if "any" in words and not _BOOST_ANY.search(prompt[: stub.start()]):
        return None
    return result, name, typed, stub.start()


def _prefix(prompt: str, library: bool) -> str:
    """What goes before our header: boost::any support where the prompt uses it; whether
    the header's functions come from the library (linked) or are compiled in."""
    text = "#define CODELOOP_RPC_LIBRARY 1\n" if library else ""
    if _BOOST_ANY.search(prompt):
        text += "#include <boost/any.hpp>\n#define CODELOOP_BOOST_ANY 1\n"
    return text


_UNOPTIMIZED = '#pragma GCC push_options\n#pragma GCC optimize ("O0")\n'
"""Our codec in the solution's translation unit compiles at -O0 (about a sixth less
compile time): it is trusted code whose speed does not matter next to a pipe's."""


def server_source(
    prompt: str, program: str, sig: tuple, quick_codec: bool = False, library: bool = False
) -> str:
    """The solution's translation unit: our main first, then the program as written.

    `quick_codec`: our header and main are compiled unoptimized; the optimization
    options return to the command line's before the program's first line. `library`:
    the unit is linked with the library (`LIBRARY_OBJECT`) instead of compiling it in.
    """
    result, name, typed, _at = sig
    setup = "".join(
        line + "\n"
        for line in prompt.splitlines()
        if re.match(r"\s*#\s*include\b|\s*using\s+namespace\b|\s*typedef\b", line)
    )
    params = ", ".join(f"{kind} {arg}" for kind, arg in typed)
    # The exact overload: a name like `unique` or `search` is also std's.
    pointer = f"static_cast<{result} (*)({', '.join(kind for kind, _ in typed)})>(&{name})"
    codec = f'#include "{HEADER}"\n'
    main = (
        "int main(int argc, char** argv) {\n"
        "  return codeloop::serve(argc, argv, [](codeloop::Reader& in) -> std::string {\n"
        "    std::string called = in.until('(');\n"
        f'    if (called == "{name}") return codeloop::answer({pointer}, in);\n'
        '    throw std::runtime_error("no function " + called);\n'
        "  });\n}\n"
    )
    if quick_codec:
        # Not around `setup`: a header the prompt includes there is the program's too.
        codec, main = (f"{_UNOPTIMIZED}{part}#pragma GCC pop_options\n" for part in (codec, main))
    return (
        f"{_prefix(prompt, library)}{codec}{setup}{result} {name}({params});\n{main}"
        f'#line 1 "main.cpp"\n{program}\n'
    )


def test_source(prompt: str, test: str, sig: tuple, library: bool = False) -> str:
    """The test's translation unit: trusted prompt, a proxy, the test with main renamed."""
    result, name, typed, at = sig
    params = ", ".join(f"{kind} {arg}" for kind, arg in typed)
    args = "".join(f", {arg}" for _kind, arg in typed)
    return (
        f'{_prefix(prompt, library)}#include "{HEADER}"\n{prompt[:at]}\n'
        f"{result} {name}({params}) {{\n"
        f'  return codeloop::call<{result}>("{name}"{args});\n}}\n'
        "__attribute__((constructor)) static void codeloop_drive(int argc, char** argv) {\n"
        "  codeloop::drive(argc, argv);\n}\n"
        f'#line 1 "test.cpp"\n{test}\n'
    )
