"""Function-level checks (HumanEval-X style) through the real sandbox, per language.

Every program here runs in bubblewrap through `check_many`, composed exactly as
`codeloop eval` composes HumanEval-X samples. One batch holds every request (so two
workers stay busy); each test then asserts on its own rows. The slice covers, per
language: canonical solutions pass, a wrong body fails as a wrong answer, a body
that does not compile fails as a compile error, and a body that ends the process
with exit code 0 before the tests ran (a reward hack) is not a pass.
"""

from __future__ import annotations

import os
import shlex

import pytest
from pydantic import ValidationError

from codeloop.data import HUMANEVAL_X
from codeloop.evaluate import load_humaneval_x
from codeloop.evaluate.data import Problems
from codeloop.evaluate.humaneval import humaneval_x_job
from codeloop.sandbox import (
    Check,
    CheckRequest,
    check_many,
    function_tests,
    harness,
    languages,
    testbuild,
)
from codeloop.sandbox.cache import cache_root
from codeloop.sandbox.check import Sandbox
from codeloop.sandbox.languages.cpp import box as cppbox
from codeloop.sandbox.languages.go import box as gobox
from codeloop.sandbox.languages.go import library as go_library
from codeloop.sandbox.languages.go.source import go_split_imports, go_test_file
from codeloop.sandbox.languages.java import javac, libraries
from codeloop.sandbox.languages.java.javac import _javac_steps
from codeloop.sandbox.languages.rust.crates import uses_rand_07_api

DATA = HUMANEVAL_X  # the copy shipped in the package
LANGUAGES = ["python", "javascript", "cpp", "java", "go", "rust"]
PREFIX = {
    "python": "Python",
    "javascript": "JavaScript",
    "cpp": "CPP",
    "java": "Java",
    "go": "Go",
    "rust": "Rust",
}
CANONICAL_IDS = [0, 12, 38, 53, 101, 162]
"""Several shapes per language: lists, strings, randomised tests (38, 53), md5 (162)."""
EXTRA_CANONICAL = [
    "CPP/22",
    "CPP/95",
    "CPP/137",
    "Go/17",
    "Go/27",
    "Go/20",
    "Go/108",
    "Java/151",
    "JavaScript/162",
    "Rust/10",
    "Rust/22",
]
"""C++ boost::any (22, 137) and a map, whose codec each half instantiates itself beside the
library's (95); Go tasks whose official composition fails on imports; Java's `assert`;
js-md5; a Rust test of a function only the solution declares (10); Box<dyn Any> (22)."""


# Bodies for task 0 (has_close_elements) that are wrong, do not compile, or exit early.
WRONG = {
    "python": "    return False\n",
    "javascript": "  return false;\n}\n",
    "cpp": "    return false;\n}\n",
    "java": "        return false;\n    }\n}\n",
    "go": "    return false\n}\n",
    "rust": "    return false;\n}\n",
}
BROKEN = {
    "python": "    return (\n",
    "javascript": "  return );\n}\n",
    "cpp": "    return undefined_name;\n}\n",
    "java": "        return undefinedName;\n    }\n}\n",
    "go": "    return undefinedName\n}\n",
    "rust": "    return undefined_name;\n}\n",
}
EXIT_EARLY = {
    "python": "    import os\n    os._exit(0)\n",
    "javascript": "  process.exit(0);\n}\n",
    "java": "        System.exit(0);\n        return false;\n    }\n}\n",
    "go": "    os.Exit(0)\n    return false\n}\n",
    "rust": "    std::process::exit(0);\n}\n",
}
# JavaScript's console.assert only prints; the verdict must come from that output.
JS_ASSERT_ONLY = "  return numbers.length > 100;\n}\n"
# A wrong body that also silences console.assert (globally, and again on every call).
JS_SILENCE = "  console.assert = () => {};\n  return false;\n}\nconsole.assert = () => {};\n"
# Java/151: passes every list check but breaks the final `assert` (needs -ea to catch).
JAVA_151_ASSERT_ONLY = (
    "        int total = 0;\n"
    "        for (Object o : lst) {\n"
    "            if (o instanceof Integer p && p > 0 && p % 2 == 1 && p < 60) total += p * p;\n"
    "        }\n"
    "        return total;\n"
    "    }\n"
    "}\n"
)


# Fails unless the solution is compiled optimized: GCC folds a local constant into
# `__builtin_constant_p` only when optimizing the function (1 at -O2, 0 at -O0).
CPP_OPTIMIZED_ONLY = (
    "    int codeloop_k = 3;\n    if (!__builtin_constant_p(codeloop_k)) return false;\n"
)


GO_TWICE = "func Twice(x int) int {\n    return 2 * x\n}\n"
GO_TESTS = {
    # The first test fails without stopping (t.Errorf); the second passes after it.
    "first fails": (
        'func TestA(t *testing.T) {\n    if Twice(2) != 5 {\n        t.Errorf("want 5")\n    }\n}\n'
        'func TestB(t *testing.T) {\n    if Twice(2) != 4 {\n        t.Errorf("want 4")\n    }\n}\n'
    ),
    # `Testlower` is no test to `go test` (a lower-case letter follows "Test"); a
    # commented-out test is none either.
    "not tests": (
        'func TestTwice(t *testing.T) {\n    if Twice(3) != 6 {\n        t.Fatal("want 6")\n    }\n}\n'
        'func Testlower(t *testing.T) {\n    t.Fatal("not a test")\n}\n'
        '// func TestCommented(t *testing.T) { t.Fatal("commented out") }\n'
    ),
}
# A test calling one of testify's HTTP helpers (the trimmed testify has none of them).
GO_HTTP_TEST = (
    'import (\n    "fmt"\n    "net/http"\n)\n\n'
    "func TestTwiceOverHTTP(t *testing.T) {\n"
    "    assert := assert.New(t)\n"
    "    handler := func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, Twice(2)) }\n"
    '    assert.HTTPBodyContains(handler, "GET", "/", nil, "4")\n'
    "}\n"
)

# A test importing testify's `require` (built on the whole `assert` package).
GO_REQUIRE_TEST = (
    'import "github.com/stretchr/testify/require"\n\n'
    "func TestTwice(t *testing.T) {\n    require.Equal(t, 4, Twice(2))\n}\n"
)


@pytest.fixture(scope="module")
def problems() -> Problems:
    return load_humaneval_x(DATA, LANGUAGES)


def _request(problems: Problems, task_id: str, body: str | None = None) -> CheckRequest:
    row = problems.rows[task_id]
    job = humaneval_x_job(row, row["canonical_solution"] if body is None else body)
    return job.request()


def _compose(problems: Problems, task_id: str) -> function_tests.TestBuild:
    request = _request(problems, task_id)
    context = function_tests.TestContext(prompt=request.prompt, entry_point=request.entry_point)
    language = languages.get(request.language)
    return function_tests.compose(
        Sandbox("bwrap", worker=23).compiler,
        language,
        request.program,
        request.test or "",
        512,
        context,
    )


def _halves(build: function_tests.TestBuild) -> list[str]:
    """The compile commands of a two-process build: the solution's half, the test's."""
    assert build.compile is not None and build.trusted is not None
    return [shlex.join(build.compile), shlex.join(build.trusted.compile)]


def _files(build: function_tests.TestBuild) -> dict[str, bytes]:
    """Both halves' files (the test's half compiles in a box of its own)."""
    return {**build.files, **(build.trusted.files if build.trusted else {})}


@pytest.fixture(scope="module")
def checks(problems: Problems) -> dict[tuple[str, str], Check]:
    """Every request of this module, checked in one batch: {(kind, task_id): Check}."""
    wanted: dict[tuple[str, str], CheckRequest] = {}
    for language in LANGUAGES:
        for number in CANONICAL_IDS:
            task_id = f"{PREFIX[language]}/{number}"
            wanted["canonical", task_id] = _request(problems, task_id)
        first = f"{PREFIX[language]}/0"
        wanted["wrong", first] = _request(problems, first, WRONG[language])
        wanted["broken", first] = _request(problems, first, BROKEN[language])
        if language in EXIT_EARLY:
            wanted["exit", first] = _request(problems, first, EXIT_EARLY[language])
    for task_id in EXTRA_CANONICAL:
        wanted["canonical", task_id] = _request(problems, task_id)
    for task_id in ("Rust/50", "JavaScript/112"):
        wanted["canonical", task_id] = _request(problems, task_id)
    wanted["assert-only", "JavaScript/0"] = _request(problems, "JavaScript/0", JS_ASSERT_ONLY)
    wanted["silence", "JavaScript/0"] = _request(problems, "JavaScript/0", JS_SILENCE)
    wanted["assert-only", "Java/151"] = _request(problems, "Java/151", JAVA_151_ASSERT_ONLY)
    canonical = problems.rows["CPP/0"]["canonical_solution"]
    wanted["optimized", "CPP/0"] = _request(problems, "CPP/0", CPP_OPTIMIZED_ONLY + canonical)
    # A declaration whose types cannot cross (a pointer): refused, never one process.
    wanted["pointer", "cpp"] = CheckRequest(
        language="cpp",
        program="#include <vector>\nint twice(int* x) { return 2 * *x; }\n",
        test="#include <cassert>\nint main() { int v = 3; assert(twice(&v) == 6); }\n",
        prompt="int twice(int* x) {\n",
    )
    for name, test in GO_TESTS.items():
        wanted["go-tests", name] = CheckRequest(
            language="go", program=GO_TWICE, test=test, prompt="func Twice(x int) int {\n"
        )
    for name, test in (("http", GO_HTTP_TEST), ("require", GO_REQUIRE_TEST)):
        wanted["go-tests", name] = CheckRequest(
            language="go", program=GO_TWICE, test=test, prompt="func Twice(x int) int {\n"
        )
    results = check_many(list(wanted.values()), workers=2)
    return dict(zip(wanted, results, strict=True))


@pytest.mark.parametrize("language", LANGUAGES)
def test_canonical_solutions_pass(checks: dict, language: str) -> None:
    for number in CANONICAL_IDS:
        check = checks["canonical", f"{PREFIX[language]}/{number}"]
        assert check.status == "passed", (language, number, check.feedback)


@pytest.mark.parametrize("task_id", EXTRA_CANONICAL)
def test_canonical_solutions_that_the_official_harness_breaks_pass(
    checks: dict, task_id: str
) -> None:
    check = checks["canonical", task_id]
    assert check.status == "passed", check.feedback


@pytest.mark.parametrize("language", LANGUAGES)
def test_wrong_body_is_a_wrong_answer(checks: dict, language: str) -> None:
    check = checks["wrong", f"{PREFIX[language]}/0"]
    assert check.status == "wrong_answer", check.feedback
    assert not check.passed


@pytest.mark.parametrize("language", LANGUAGES)
def test_body_that_does_not_compile_is_a_compile_error(checks: dict, language: str) -> None:
    check = checks["broken", f"{PREFIX[language]}/0"]
    assert check.status == "compile_error", check.feedback


@pytest.mark.parametrize("language", sorted(EXIT_EARLY))
def test_exit_zero_before_the_tests_ran_is_not_a_pass(checks: dict, language: str) -> None:
    check = checks["exit", f"{PREFIX[language]}/0"]
    assert check.status == "wrong_answer", check.feedback


def test_javascript_assertion_failed_on_stderr_is_a_failure(checks: dict) -> None:
    check = checks["assert-only", "JavaScript/0"]
    assert check.status == "wrong_answer"
    assert "Assertion failed" in check.feedback


def test_javascript_silencing_console_assert_does_not_pass(checks: dict) -> None:
    assert checks["silence", "JavaScript/0"].status == "wrong_answer"


def test_javascript_112_canonical_is_wrong(checks: dict) -> None:
    check = checks["canonical", "JavaScript/112"]
    assert check.status == "wrong_answer"
    assert "Assertion failed" in check.feedback


def test_java_assert_statements_are_enabled(checks: dict) -> None:
    check = checks["assert-only", "Java/151"]
    assert check.status == "wrong_answer", check.feedback
    assert "AssertionError" in check.feedback


def test_rust_50_is_an_environment_error_with_its_reason(checks: dict) -> None:
    check = checks["canonical", "Rust/50"]
    assert check.status == "environment_error"
    assert "rand 0.7" in check.feedback and "gen_range" in check.feedback


def test_a_declaration_whose_types_cannot_cross_is_refused(checks: dict) -> None:
    """A pointer cannot travel between the test's process and the solution's; with
    both in one process the program could forge its verdict, so none is given. Before,
    this check ran in one process and passed."""
    check = checks["pointer", "cpp"]
    assert check.status == "environment_error", check
    assert "cannot cross" in check.feedback and "forge" in check.feedback


@pytest.mark.parametrize("language", ["cpp", "go", "java", "rust", "javascript"])
def test_a_function_test_without_a_trusted_declaration_is_refused(language: str) -> None:
    """Without the declaration (or, in JavaScript, the entry point) the test cannot be
    built apart from the solution; the one-process composition would let the solution
    forge the verdict, so such a check is refused before anything runs."""
    with pytest.raises(ValidationError, match="function test needs"):
        CheckRequest(language=language, program="x", test="y")


def test_one_time_builds_land_in_the_shared_cache(checks: dict) -> None:

    # The module's checks ran every language's canonical solutions, C++ included.
    assert checks["canonical", "CPP/0"].passed
    root = cache_root()
    assert any(root.glob("rust-crates/*/librand-*.rlib"))
    # One per optimization level: the solution's half (-O2) and the test's (-O0).
    assert len(list(root.glob("cpp-common-pch/*/codeloop_common.h.gch"))) >= 2
    assert any(root.glob("rust-rpc/*/libcodeloop_rpc_lib.rlib"))
    assert any(root.glob("go-library/*/rpc/src/codeloop/rpc/codeloop_codec.go"))
    assert any(root.glob("go-library/*/testify/src/github.com/stretchr/testify/assert/*.go"))
    assert any(root.glob("javac-batch/*/codeloop-javac.jar"))
    assert any(root.glob("javac-batch-cds/*/codeloop-javac.jsa"))


def test_java_compiles_test_and_solution_in_one_jvm_from_its_archive(checks: dict) -> None:
    """Both halves of a Java check compile in one JVM whose compiler classes come from
    the class-data archive: `-Xshare:on` makes a JVM that cannot map it fail, so this
    run passing means every check's compile really uses it (the JVM drops an archive
    silently when its class path, jar or jar mtime differ from the dump's)."""
    assert checks["canonical", "Java/0"].passed
    sandbox = Sandbox("bwrap", worker=21)
    steps = _javac_steps(sandbox, languages.get("java"), ["a/Main.java", "b/Main.java"])
    assert "CodeloopJavac" in steps.argv and steps.argv.count("--") == 1
    assert any(arg.startswith("-XX:SharedArchiveFile=") for arg in steps.argv)
    head = steps.argv[: steps.argv.index("CodeloopJavac") + 1]
    box = harness.prepare_box(sandbox.scratch, sandbox.backend.compile_uid)
    try:
        run = harness.run(
            sandbox.backend,
            [head[0], "-Xshare:on", *head[1:], "-version"],
            box=box,
            compile_step=True,
            binds=steps.binds,
            limits=testbuild.ONE_TIME_LIMITS,
        )
    finally:
        harness.remove_box(box)
    output = (run.stdout + run.stderr).decode()
    assert run.exit_code == 0, (run.setup_error, output)
    assert output.startswith("javac ")


def test_java_without_the_batch_compiler_runs_one_javac_per_half(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where codeloop-javac cannot be built, each half is a javac of its own, with the
    same options (and `&&`: the solution is not compiled after the test failed)."""
    monkeypatch.setattr(javac, "javac_batch", lambda sandbox, language: None)
    steps = _javac_steps(
        Sandbox("bwrap", worker=22), languages.get("java"), ["a/M.java", "b/M.java"]
    )
    assert steps.argv[:2] == ["/bin/sh", "-c"] and steps.binds == []
    first, second = steps.argv[2].split(" && ")
    for command, side in ((first, "a"), (second, "b")):
        assert command.startswith("/usr/bin/javac -J")
        class_path = libraries.class_path("/box")
        assert f"-proc:none -classpath {class_path} -d /box/{side} /box/{side}/M.java" in command


@pytest.mark.parametrize("language", ["cpp", "rust"])
def test_cpp_and_rust_halves_link_with_gold_where_installed(
    problems: Problems, language: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both halves link with gold (a third of ld.bfd's link time); CODELOOP_GOLD=off
    (for benches) keeps ld.bfd. The canonical checks above run with gold."""
    if not os.path.exists(testbuild.GOLD):
        pytest.skip("binutils' gold is not installed here")

    def compile_command() -> str:
        return " && ".join(_halves(_compose(problems, f"{PREFIX[language]}/0")))

    gold = "-fuse-ld=gold" if language == "cpp" else "-C link-arg=-fuse-ld=gold"
    assert [step.count(gold) for step in compile_command().split(" && ")] == [1, 1]
    monkeypatch.setenv("CODELOOP_GOLD", "off")
    assert "-fuse-ld" not in compile_command()


def test_cpp_test_half_compiles_unoptimized_and_the_solution_as_written(
    problems: Problems, checks: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trusted test half compiles at -O0 (half its compile time), the solution's half
    with the language's -O2: our codec in it is unoptimized by a pragma that ends before
    the program's first line, so the program is optimized as in a plain compile.
    CODELOOP_CPP_QUICK_TEST=off (benches) compiles both halves at -O2."""
    # Run in the sandbox: this solution returns a wrong answer unless it is optimized.
    assert checks["optimized", "CPP/0"].passed, checks["optimized", "CPP/0"]
    build = _compose(problems, "CPP/0")
    server, main = _halves(build)
    assert " -O2 " in server and " -O0 " not in server
    assert " -O0 " in main and " -O2 " not in main
    source = _files(build)["server.cpp"].decode()
    ours, program = source.split('#line 1 "main.cpp"\n')
    assert ours.count("#pragma GCC push_options") == ours.count("#pragma GCC pop_options") == 2
    assert ours.rstrip().endswith("#pragma GCC pop_options")
    assert "#pragma" not in program
    monkeypatch.setenv("CODELOOP_CPP_QUICK_TEST", "off")
    build = _compose(problems, "CPP/0")
    assert [" -O2 " in half for half in _halves(build)] == [True, True]
    assert "#pragma" not in _files(build)["server.cpp"].decode()


def test_cpp_halves_link_the_codec_library_built_once(
    problems: Problems, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both C++ halves link `cppbox`'s codec compiled once (its type-independent functions
    and put/get of the common types; mounted read-only) instead of compiling it; the
    canonical checks above run this way, boost::any and map signatures included.
    CODELOOP_CPP_RPC_LIB=off (benches) compiles it into each half."""
    build = _compose(problems, "CPP/0")
    linked = f"/cpprpc/{cppbox.LIBRARY_OBJECT}"
    assert [linked in half for half in _halves(build)] == [True, True]
    assert ("/cpprpc", False) in [(mount, writable) for _, mount, writable in build.binds]
    for half in ("server.cpp", "main.cpp"):
        text = _files(build)[half].decode()
        assert text.index("#define CODELOOP_RPC_LIBRARY 1") < text.index(
            f'#include "{cppbox.HEADER}"'
        )
    monkeypatch.setenv("CODELOOP_CPP_RPC_LIB", "off")
    build = _compose(problems, "CPP/0")
    assert "/cpprpc" not in " ".join(_halves(build))
    assert "CODELOOP_RPC_LIBRARY" not in _files(build)["main.cpp"].decode()
    assert cppbox.IMPL in _files(build)  # the header includes the definitions


def test_rust_halves_use_the_codec_library_built_once(
    problems: Problems, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both Rust halves link `rustbox`'s codec compiled once as an rlib (mounted read-only)
    instead of compiling its source into each crate; the canonical checks above run
    this way. CODELOOP_RUST_RPC_LIB=off (benches) compiles the module into each crate."""
    build = _compose(problems, "Rust/0")
    extern = "--extern codeloop_rpc_lib=/rpclib/libcodeloop_rpc_lib.rlib"
    assert [extern in half for half in _halves(build)] == [True, True]
    assert ("/rpclib", False) in [(mount, writable) for _, mount, writable in build.binds]
    assert all(not writable for _, _, writable in build.binds)
    assert "codeloop_rpc.rs" not in _files(build)
    for half in ("server.rs", "main.rs"):
        assert "pub use ::codeloop_rpc_lib::*;" in _files(build)[half].decode()
    monkeypatch.setenv("CODELOOP_RUST_RPC_LIB", "off")
    build = _compose(problems, "Rust/0")
    assert "codeloop_rpc_lib" not in " ".join(_halves(build))
    assert "codeloop_rpc.rs" in _files(build)
    assert '#[path = "codeloop_rpc.rs"]' in _files(build)["main.rs"].decode()


def test_go_links_the_codec_package_and_testify_without_http(
    problems: Problems, checks: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Go checks import the codec as the package codeloop/rpc and testify's assert
    without its HTTP helpers (net/http is not built or linked), both from a read-only
    GOPATH folder searched first; the canonical checks above run this way. A test that
    calls an HTTP helper, or imports `require`, gets Debian's whole testify and passes.
    CODELOOP_GO_LIBRARY=off (benches): the codec compiled into both binaries."""
    build = _compose(problems, "Go/0")
    roots = build.env["GOPATH"].split(":")
    assert roots == [
        "/gopath-codeloop/rpc",
        "/gopath-codeloop/testify",
        languages.GO_PATH,
    ]
    assert ("/gopath-codeloop", False) in [(mount, rw) for _, mount, rw in build.binds]
    assert "drv/codeloop_rpc.go" in _files(build) and "drv/codeloop_codec.go" not in _files(build)
    assert '"codeloop/rpc"' in _files(build)["srv/codeloop_rpc.go"].decode()
    for name in ("http", "require"):
        check = checks["go-tests", name]
        assert check.passed, (name, check)
    trimmed = go_library.testify_without_http()
    assert trimmed is not None
    text = b"".join(trimmed.values()).decode()
    assert "func HTTPBodyContains(" not in text and '"net/http"' not in text
    assert "func Equal(" in text and "func (a *Assertions) Equal(" in text
    monkeypatch.setenv("CODELOOP_GO_LIBRARY", "off")
    build = _compose(problems, "Go/0")
    assert build.env["GOPATH"] == languages.GO_PATH and build.binds == []
    assert "drv/codeloop_codec.go" in _files(build) and "drv/codeloop_rpc.go" not in _files(build)


def test_go_runs_every_test_function_as_go_test_finds_them(checks: dict) -> None:
    """The Go test process runs the test's functions with `testing.Main` (not `go test`):
    a failed first test fails the check although a later one passes, and functions
    `go test` would not run (`Testlower`, commented out) are not run."""
    failed = checks["go-tests", "first fails"]
    assert failed.status == "wrong_answer", failed
    assert "--- FAIL: TestA" in failed.feedback and "want 5" in failed.feedback
    passed = checks["go-tests", "not tests"]
    assert passed.status == "passed", passed


def test_go_test_names_follow_go_test() -> None:
    code = (
        "func TestA(t *testing.T) {}\nfunc Test(t *testing.T) {}\nfunc Test_x(t *testing.T) {}\n"
        "func Testlower(t *testing.T) {}\nfunc TestB(b *testing.B) {}\nfunc helper() {}\n"
    )
    assert gobox.test_names(code) == ["TestA", "Test", "Test_x"]


def test_unsupported_language_is_an_environment_error() -> None:
    [check] = check_many(
        [CheckRequest(language="typescript", program="let x = 1;", test="assert true;")], workers=1
    )
    assert check.status == "environment_error"
    assert "not supported for typescript" in check.feedback


def test_go_imports_exactly_what_the_code_uses(problems: Problems) -> None:
    # Go/17 uses strings without importing it; Go/27 imports strings but never uses it.
    for task_id, present, absent in (("Go/17", '"strings"', None), ("Go/27", None, '"strings"')):
        job = humaneval_x_job(problems.rows[task_id], problems.rows[task_id]["canonical_solution"])
        source = go_test_file(job.program, job.test)
        header = source.split(")", 1)[0]
        assert source.startswith("package main\n")
        assert '"testing"' in header and '"github.com/stretchr/testify/assert"' in header
        if present:
            assert present in header
        if absent:
            assert absent not in header
        assert source.count("import") == 1


def test_go_import_parsing_keeps_aliases_and_ignores_strings() -> None:
    body, declared = go_split_imports(
        'package main\nimport (\n  mr "math/rand"\n  "fmt"\n)\nimport "sort"\n'
        'func F() string { return "fmt.Println" }\n'
    )
    assert declared == {"mr": "math/rand", "fmt": "fmt", "sort": "sort"}
    assert "import" not in body and "package" not in body
    source = go_test_file('import "fmt"\nfunc F() string { return "fmt." + mr.Int() }\n', "")
    assert '"fmt"' not in source  # only mentioned inside a string literal
    assert "math/rand" not in source  # the alias was never declared here


def test_rand_07_detection() -> None:
    assert uses_rand_07_api("rng.gen_range(0, 2)")
    assert uses_rand_07_api("rng.gen_range(b'a', f(1, 2))")
    assert not uses_rand_07_api("rng.gen_range(0..2)")
    assert not uses_rand_07_api("rng.gen_range(f(1, 2)..g(3))")
    # Rust/32's whole test module is a block comment (so it runs no test, as officially).
    assert not uses_rand_07_api("/*\nmod t { /* x */ fn f() { rng.gen_range(0, 4); } }\n*/")
    assert uses_rand_07_api("let c = '\"'; // gen_range(0..1)\nrng.gen_range(0, 2)")
