"""testify for Go tests: Debian's copy, its `assert` without the HTTP helpers unless needed."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from codeloop.sandbox.cache import (
    locked,
    shared_folder,
)
from codeloop.sandbox.language import Language
from codeloop.sandbox.languages.go import box
from codeloop.sandbox.languages.go.cache import go_warm_cache
from codeloop.sandbox.languages.go.toolchain import GO_PATH
from codeloop.sandbox.testbuild import (
    BuildHost,
    switched_off,
)
from codeloop.store import sha256_json

GO_LIBRARY_MOUNT = "/gopath-codeloop"
_TESTIFY_ASSERT = "src/github.com/stretchr/testify/assert"
_HTTP_USE = re.compile(r"\b(?:http|url|httptest)\.")
_WHOLE_TESTIFY = re.compile(r"\bHTTP[A-Z]\w*\s*\(|stretchr/testify/(?!assert\")")
"""Code that needs Debian's whole testify: a call of an HTTP helper, or an import of
another testify package (`require`, `suite`, `mock` are built on the whole `assert`)."""
_GO_FUNC = re.compile(r"^(?://[^\n]*\n)*func [^\n]*\{\n(?:[^\n]*\n)*?\}\n", re.M)
_GO_HTTP_IMPORT = re.compile(r'^\t(?:\w+ )?"net/(?:http|http/httptest|url)"\n', re.M)


def testify_without_http() -> dict[str, bytes] | None:
    """testify's `assert` package (Debian's, in GO_PATH) without its HTTP helpers.

    They are the only reason `assert` imports net/http: without them a test binary
    does not load, compile against and link the HTTP stack, a third of a Go check's
    build. Every other function is kept as written. None where the package is missing
    or the result would still use net/http or net/url (then the full package is used).
    """
    folder = Path(GO_PATH) / _TESTIFY_ASSERT
    if not folder.is_dir():
        return None
    found: dict[str, bytes] = {}
    for path in sorted(folder.glob("*.go")):
        if path.name.endswith("_test.go") or path.name == "http_assertions.go":
            continue
        text = path.read_text()
        if _GO_HTTP_IMPORT.search(text):
            text = _GO_FUNC.sub(lambda m: "" if _HTTP_USE.search(m.group(0)) else m.group(0), text)
            text = _GO_HTTP_IMPORT.sub("", text)
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
        if _HTTP_USE.search(code) or "net/http" in code or "net/url" in code:
            return None
        found[f"{_TESTIFY_ASSERT}/{path.name}"] = text.encode()
    return found or None


def go_library(sandbox: BuildHost, language: Language, env: dict[str, str]) -> Path | None:
    """A read-only GOPATH folder of trusted packages, its packages warmed in GOCACHE.

    `rpc/` holds the codec and frames as the package `codeloop/rpc` (compiled once,
    not into both binaries of every check); `testify/` holds `testify_without_http`.
    None (checks compile the codec into both binaries, with Debian's testify) where
    it is switched off (`CODELOOP_GO_LIBRARY=off`, benches) or the warm-up failed.
    """
    if switched_off("CODELOOP_GO_LIBRARY"):
        return None
    key, files = _go_library_files()
    folder = shared_folder("go-library", None) / key
    done = folder / ".done"
    if not done.exists():
        with locked("go-library"):
            if not done.exists():
                for name, text in files.items():
                    path = folder / name
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(text)
                    path.chmod(0o644)
                for path in [folder, *folder.rglob("*")]:
                    if path.is_dir():
                        path.chmod(0o755)
                done.write_text("")
    binds = [(str(folder), GO_LIBRARY_MOUNT, False)]
    more = [box.LIBRARY_IMPORT, "github.com/stretchr/testify/assert"]
    if not go_warm_cache(sandbox, language, _go_library_env(env, folder, True), binds, more):
        return None
    return folder


@functools.cache
def _go_library_files() -> tuple[str, dict[str, bytes]]:
    """(key, {path: text}) of `go_library`'s folder, read once per process."""
    files = {f"rpc/{name}": text for name, text in box.library_files().items()}
    testify = testify_without_http() or {}
    files.update({f"testify/{name}": text for name, text in testify.items()})
    return sha256_json({name: text.decode() for name, text in files.items()})[:16], files


def _go_library_env(env: dict[str, str], folder: Path, trimmed: bool) -> dict[str, str]:
    """`env` with GOPATH searching the library folder's roots first; Debian's testify
    where `trimmed` is False or the folder has no trimmed copy."""
    roots = [f"{GO_LIBRARY_MOUNT}/rpc"]
    if trimmed and (folder / "testify").is_dir():
        roots.append(f"{GO_LIBRARY_MOUNT}/testify")
    return {**env, "GOPATH": ":".join([*roots, GO_PATH])}
