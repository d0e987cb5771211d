"""Function-level tasks: compose a program with its test program, per language.

HumanEval-X checks a completion by joining it with a test program and running
that; this module says how, per language, including the corrections its official
harness needs to pass every canonical solution offline (see the benchmark's
README). Pass means the composed test program compiled, ran, exited 0, printed
none of the language's failure markers and, where the language has one, printed
the success marker that only a test run that reached its end prints.

Per language (the official composition first, then our corrections):
- python: program + test; the test calls `check(...)` itself.
- javascript: program + test under node; `console.assert` only prints
  "Assertion failed" and exits 0, so that phrase is a failure marker.
- cpp: program + test, linked with -lcrypto -lssl (one task needs MD5); boost
  headers come from the system. The official harness's common headers, which both
  sides include first, come from a precompiled header (half the compile time,
  same headers visible); the trusted test side compiles at -O0, the solution's
  side at the language's -O2.
- java: program (class Solution) + test (public class Main) in Main.java, run
  with assertions enabled (Java/151's last check is an `assert` statement, which
  the official `java Main` silently skips); javac starts from a class-data archive.
- go: the official `*_test.go` file fails 11 canonical solutions on missing or
  unused imports, so every import declaration is dropped and exactly the packages
  the code uses are imported; testify resolves in GOPATH mode from Debian's
  /usr/share/gocode (its `assert` without the HTTP helpers, unless the code needs
  them); one `go build` makes both binaries, and the test's functions run under
  `testing.Main` as `go test` finds them.
- rust: the tests sit in `#[cfg(test)]`, so a plain build runs none: compile with
  `rustc --test`, linking rand, regex and md5 prebuilt once from Debian's
  /usr/share/cargo/registry (cargo as a directory source, offline), with cargo
  test's debug checks (overflow, debug assertions) kept on. A test written for
  the rand 0.7 API (Rust/50) is an environment error, not a wrong answer. With a
  trusted prompt whose open function has types that can cross, solution and test
  are two crates in two sandboxes (`rustbox`), both linking our codec as an rlib
  built once.

Verdicts the program cannot write: where the task's prompt names the function
under test with types that can cross between processes, the test runs apart from
the solution (Python: two processes, `pybox`; JavaScript, C++, Go, Java, Rust: two
sandboxes, `jsbox`/`cppbox`/`gobox`/`javabox`/`rustbox`), only plain values travel
between them, and only the test process reports (a nonce it read from stdin; the
solution's sandbox holds only the solution's files, `TestBuild.solution_files`). A test
that never called the solution prints the nonce + ":vacuous" instead (no verdict: an
environment_error of the task), and a NaN or infinite float returned by the solution
fails the test whatever its comparison says. Every other function test is
refused before anything runs (no prompt: at request validation; types that cannot
cross, such as pointers or user-defined classes: an environment error here), since
program and test in one process would let the program forge its verdict. No
HumanEval-X task is refused.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import secrets
import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from codeloop.sandbox import cppbox, gobox, harness, javabox, jsbox, pybox, rustbox
from codeloop.sandbox.cache import (
    DEFAULT_GOCACHE_MIB,
    cache_root,
    cap_shared_folder,
    locked,
    shared_folder,
)
from codeloop.sandbox.languages import BOX, GO, GO_PATH, Language, toolchain_version
from codeloop.store import sha256_json

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from codeloop.sandbox.check import Sandbox


@dataclass
class TestBuild:
    """Everything needed to compile and run one composed test program."""

    __test__ = False  # not a pytest test class, despite the name

    files: dict[str, bytes]
    run: list[str]
    compile: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    binds: list[tuple[str, str, bool]] = field(default_factory=list)
    failure_markers: tuple[str, ...] = ()
    """stderr phrases that mean a test failed even though the exit code was 0."""
    success_marker: str | None = None
    """A stdout phrase printed only after every test ran: without it, the program ended
    the run early (e.g. `exit(0)` inside the function), which is never a pass."""
    stdin: bytes = b""
    """What the composed program reads first (Python: the driver's setup)."""
    partner: list[str] | None = None
    """A second command in a sandbox of its own (the solution's process; see jsbox)."""
    syntax_exit: int | None = None
    """An exit code by which the (trusted) test process says the program did not parse."""
    solution_files: tuple[str, ...] = ()
    """Paths in the box (files or folders) the solution's sandbox (`partner`) needs: its
    box holds these and nothing else, never the test, its source or its binary."""
    vacuous_marker: str | None = None
    """A stdout line the trusted test side prints instead of `success_marker` when the
    test ran to its end without calling the solution even once (or ran no test
    function): such a test passes any program, so it is no verdict (an
    environment_error of the task, never a pass). Built from the nonce (`vacuous`)."""


@dataclass(frozen=True)
class TestContext:
    """What a function test may use besides the program: trusted, never the model's."""

    __test__ = False

    prompt: str = ""
    """The task's own code (HumanEval's prompt): helpers the test calls, run in the test's
    process so that the solution cannot redefine them."""
    entry_point: str | None = None
    """The function under test; None: the name the test passes to `check(...)`."""


def compose(
    sandbox: Sandbox,
    language: Language,
    program: str,
    test: str,
    memory_mib: int,
    context: TestContext | None = None,
) -> TestBuild:
    """The composed test program for `language`.

    `sandbox` gives access to the worker's backend and shared caches, for one-time
    builds such as the Rust crates the tests link against. A ValueError means the
    check cannot run here (the caller reports it as an environment error).
    """
    composer = _COMPOSERS.get(language.name)
    if composer is None:
        supported = ", ".join(sorted(_COMPOSERS))
        raise TaskRefused(
            f"function-level tests are not supported for {language.name}; supported: {supported}"
        )
    return composer(sandbox, language, program, test, memory_mib, context or TestContext())


class TaskRefused(ValueError):
    """The task's test cannot be checked as written (not the machine's fault, nor the
    program's): reported as an environment_error with `task_error` set."""


def _unsafe(language: str, examples: str) -> ValueError:
    """The refusal of a test whose function under test has types that cannot cross
    between processes: with program and test in one process the program could forge
    the verdict, so no verdict is given (an environment error, never a pass)."""
    return TaskRefused(
        f"{language} function test refused: the prompt's open function (the entry point) "
        f"has types that cannot cross between the test's process and the solution's "
        f"({examples}); program and test in one process would let the program forge its "
        "verdict"
    )


GOLD = "/usr/bin/ld.gold"


def fast_link() -> tuple[str, ...]:
    """gcc's option to link with binutils' gold where it is installed: a HumanEval-X test
    half links in about a third of ld.bfd's time (C++ and Rust: two links per check),
    and the program it writes does the same. `CODELOOP_GOLD=off`: ld.bfd (benches)."""
    return () if switched_off("CODELOOP_GOLD") or not os.path.exists(GOLD) else ("-fuse-ld=gold",)


def switched_off(variable: str) -> bool:
    """Whether a compile speed-up's environment switch says off (benches compare both)."""
    return os.environ.get(variable, "").lower() in ("off", "0", "no")


def _nonce() -> str:
    """A per-check success marker the program cannot know in advance."""
    return f"CODELOOP-TESTS-DONE-{secrets.token_hex(8)}"


VACUOUS_SUFFIX = ":vacuous"


def vacuous(nonce: str) -> str:
    """What the test side prints instead of `nonce` after a test that never called the
    solution: the nonce (which the solution cannot know) plus VACUOUS_SUFFIX."""
    return nonce + VACUOUS_SUFFIX


# --- one-time builds shared by all workers ----------------------------------------------

_ONE_TIME_LIMITS = harness.RunLimits(
    wall_s=600,
    cpu_s=1200,
    memory_mib=4096,
    output_bytes=1 << 20,
    processes=512,
    workdir_mib=512,
    address_space=False,
    virtual_overhead_mib=4096,
    file_size_mib=512,
)


def build_once(
    sandbox: Sandbox,
    name: str,
    key: str,
    files: dict[str, str],
    argv: list[str],
    env: dict[str, str],
    products: str,
    binds: Sequence[tuple[str, str, bool]] = (),
) -> Path:
    """Run a one-time build in the sandbox; return the shared folder holding its products.

    The build runs as the compile uid (never as root), in a fresh box; the files that
    match the glob `products` are copied into `CACHE/name/key/`, which every worker
    then binds read-only. A lock across workers makes the first one build and the
    others wait; a `.done` file marks a complete folder. ValueError if it failed.
    """
    folder = shared_folder(name, sandbox.backend.compile_uid) / key
    done = folder / ".done"
    if done.exists():
        return folder
    with locked(name):
        if done.exists():
            return folder
        uid = sandbox.backend.compile_uid
        box = harness.prepare_box(sandbox.scratch, uid)
        try:
            for relative, text in files.items():
                path = box / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
            if uid is not None:
                for path in [box, *box.rglob("*")]:
                    os.lchown(path, uid, uid)
            run = harness.run(
                sandbox.backend,
                argv,
                box=box,
                compile_step=True,
                env=env,
                limits=_ONE_TIME_LIMITS,
                binds=binds,
            )
            found = sorted(box.glob(products))
            if run.exit_code != 0 or not found:
                output = (run.stderr + run.stdout).decode("utf-8", "replace")
                raise ValueError(
                    f"one-time build {name} failed: {run.setup_error or output[-1500:]}"
                )
            folder.mkdir(parents=True, exist_ok=True)
            for product in found:
                target = folder / product.name
                target.write_bytes(product.read_bytes())
                target.chmod(0o644)
            done.write_text("")
            done.chmod(0o644)
        finally:
            harness.remove_box(box)
    return folder


_failed_archives: set[str] = set()
"""Keys of optional speed-up builds that failed in this worker (not retried)."""


# --- languages ------------------------------------------------------------------------------


def _python(
    sandbox: Sandbox,
    language: Language,
    program: str,
    test: str,
    memory_mib: int,
    context: TestContext,
) -> TestBuild:
    """The test runs in its own process; the solution's functions are called across a pipe.

    See `pybox`: the nonce, the trusted prompt and the test travel on the driver's
    stdin (never a file the solution can read); return values cross as plain data. Cold,
    the solution's server runs in a sandbox of its own (`partner`) over a box holding
    only the program and the server; warm, the zygote forks it from the driver.
    """
    entry_point = context.entry_point or _check_target(test)
    setup = {
        "nonce": _nonce(),
        "prompt": context.prompt,
        "test": test,
        "entry_point": entry_point,
    }
    python = ["/usr/bin/python3", "-S", "-E", "-B"]
    return TestBuild(
        files={language.source: program.encode(), **pybox.sources()},
        run=[*python, f"{BOX}/{pybox.DRIVER}", *_PIPES],
        partner=[*python, f"{BOX}/{pybox.SERVER}", *_PIPES],
        solution_files=(language.source, pybox.SERVER, pybox.CODEC),
        env=dict(language.env),
        success_marker=setup["nonce"],
        vacuous_marker=vacuous(setup["nonce"]),
        stdin=(json.dumps(setup) + "\n").encode(),
    )


def _check_target(test: str) -> str | None:
    """The function a HumanEval-style test hands to `check(...)` on its last such line."""
    calls = re.findall(r"^check\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$", test, re.MULTILINE)
    return calls[-1] if calls else None


def _javascript(
    sandbox: Sandbox,
    language: Language,
    program: str,
    test: str,
    memory_mib: int,
    context: TestContext,
) -> TestBuild:
    entry_point = context.entry_point or _javascript_entry(context.prompt)
    if entry_point:
        setup = {
            "nonce": _nonce(),
            "prompt": context.prompt,
            "test": test,
            "entry_point": entry_point,
        }
        node = language.run_argv(memory_mib)[:-1]  # node and its flags, without the file
        return TestBuild(
            files={language.source: program.encode(), **jsbox.sources()},
            run=[*node, f"{BOX}/{jsbox.DRIVER}", "{requests}", "{replies}"],
            partner=[*node, f"{BOX}/{jsbox.SERVER}", "{requests}", "{replies}"],
            solution_files=(language.source, jsbox.SERVER, jsbox.CODEC),
            env=dict(language.env),
            success_marker=setup["nonce"],
            vacuous_marker=vacuous(setup["nonce"]),
            stdin=json.dumps(setup).encode(),
            syntax_exit=3,
        )
    raise TaskRefused(
        "a javascript function test needs an entry point: pass `entry_point`, or a prompt "
        "that declares the function under test"
    )


def _javascript_entry(prompt: str) -> str | None:
    """The function a HumanEval-X JavaScript prompt leaves open: its last declaration."""
    found = re.findall(
        r"^(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=|^function\s+([A-Za-z_$][\w$]*)",
        prompt,
        re.MULTILINE,
    )
    if not found:
        return None
    last = found[-1]
    return last[0] or last[1]


def _cpp(
    sandbox: Sandbox,
    language: Language,
    program: str,
    test: str,
    memory_mib: int,
    context: TestContext,
) -> TestBuild:
    sig = cppbox.signature(context.prompt, context.entry_point) if context.prompt else None
    if sig is not None and language.compile is not None:
        nonce = _nonce()
        prompt = context.prompt
        quick = not switched_off("CODELOOP_CPP_QUICK_TEST")
        # The solution's half is compiled with the language's own flags (-O2): what the
        # program does, undefined behaviour included, is what a plain compile gives.
        # The test's half is trusted code that only calls and compares: -O0 compiles it
        # in about half the time, and SSE arithmetic gives the same values at any -O.
        flags = [part for part in language.compile[1:] if part.startswith(("-O", "-std="))]
        test_flags = flags
        if quick:
            test_flags = [part for part in flags if not part.startswith("-O")] + ["-O0"]
        libraries = [part for part in language.compile if part.startswith("-l")]
        binds: list[tuple[str, str, bool]] = []
        library = cpp_rpc_library(sandbox, language)
        if library is not None:
            binds.append((str(library), _CPP_RPC_MOUNT, False))
            libraries = [f"{_CPP_RPC_MOUNT}/{cppbox.LIBRARY_OBJECT}", *libraries]
        linked = library is not None
        steps, common = [], []
        for half, half_flags, mount in (
            ("server", flags, _CPP_PCH_MOUNT),
            ("main", test_flags, _CPP_TEST_PCH_MOUNT),
        ):
            include = _cpp_common_header(quick)
            folder = cpp_common_pch(sandbox, language, half_flags, quick)
            if folder is not None:
                # The same headers, parsed once per compiler and flags: half of a compile.
                include = f"#include <{_CPP_PCH_NAME}>\n"
                half_flags = [f"-I{mount}", *half_flags]
                binds.append((str(folder), mount, False))
            common.append(include)
            output = ["-o", f"{BOX}/{half}", f"{BOX}/{half}.cpp"]
            steps.append([language.compile[0], *half_flags, *fast_link(), *output, *libraries])
        server = cppbox.server_source(prompt, program, sig, quick_codec=quick, library=linked)
        tester = cppbox.test_source(prompt, test, sig, library=linked)
        return TestBuild(
            files={
                "server.cpp": (common[0] + server).encode(),
                "main.cpp": (common[1] + tester).encode(),
                **{name: text.encode() for name, text in cppbox.box_files().items()},
            },
            compile=["/bin/sh", "-c", " && ".join(shlex.join(step) for step in steps)],
            run=[f"{BOX}/main", "{requests}", "{replies}"],
            partner=[f"{BOX}/server", "{requests}", "{replies}"],
            solution_files=("server",),
            env=dict(language.env),
            binds=binds,
            success_marker=nonce,
            vacuous_marker=vacuous(nonce),
            stdin=(nonce + "\n").encode(),
        )
    raise _unsafe("cpp", "pointers, references to classes, user-defined types")


CPP_COMMON_HEADERS = (
    "stdlib.h",
    "algorithm",
    "math.h",
    "stdio.h",
    "vector",
    "string",
    "climits",
    "cstring",
    "iostream",
)
"""The headers HumanEval-X's official harness adds to every C++ program."""
_CPP_PCH_NAME = "codeloop_common.h"
_CPP_PCH_MOUNT = "/fnpch"
_CPP_RPC_MOUNT = "/cpprpc"
_CPP_TEST_PCH_MOUNT = "/fnpch-test"


@functools.cache
def _cpp_common_header(with_codec_headers: bool = True) -> str:
    """What both halves include before anything else: HumanEval-X's common headers,
    then the standard headers our codec header includes. Both halves include the codec
    header before the program's text, so the second list changes nothing the program
    sees; it only moves their parsing into the precompiled header."""
    names = list(CPP_COMMON_HEADERS)
    if with_codec_headers:
        names += [name for name in cppbox.standard_headers() if name not in names]
    return "".join(f"#include <{name}>\n" for name in names)


def cpp_rpc_library(sandbox: Sandbox, language: Language) -> Path | None:
    """`cppbox`'s codec compiled once per compiler as an object both halves link (None if
    that failed, or with CODELOOP_CPP_RPC_LIB=off: each half compiles it in).

    Its type-independent functions and its put/get for the types most signatures use
    (`CODELOOP_RPC_COMMON_TYPES`) were most of a test half's compile; compiled with the
    language's own -O and -std flags, so the ABI is the halves' own.
    """
    if switched_off("CODELOOP_CPP_RPC_LIB") or language.compile is None:
        return None
    flags = [flag for flag in language.compile[1:] if flag.startswith(("-O", "-std="))]
    files = cppbox.library_files()
    key = sha256_json({"g++": toolchain_version(language.name), "flags": flags, "files": files})
    if key in _failed_archives:
        return None
    argv = [language.compile[0], *flags, "-c", f"{BOX}/{cppbox.LIBRARY_SOURCE}"]
    argv += ["-o", f"{BOX}/{cppbox.LIBRARY_OBJECT}"]
    try:
        return build_once(sandbox, "cpp-rpc", key[:16], files, argv, {}, "*.o")
    except ValueError:
        _failed_archives.add(key)
        return None


def cpp_common_pch(
    sandbox: Sandbox,
    language: Language,
    flags: Sequence[str] | None = None,
    with_codec_headers: bool = True,
) -> Path | None:
    """The common headers precompiled once per compiler and flags (None if that failed).

    `flags`: the -O and -std options of the compile that will use it (default: the
    language's). GCC uses the .gch only when they match and silently parses the header
    otherwise, so a stale or missing archive costs time, never correctness.
    """
    if language.compile is None:
        return None
    if flags is None:
        flags = [flag for flag in language.compile if flag.startswith(("-O", "-std="))]
    flags = [flag for flag in flags if flag.startswith(("-O", "-std="))]
    header = _cpp_common_header(with_codec_headers)
    key = sha256_json({"g++": toolchain_version(language.name), "flags": flags, "h": header})
    if key in _failed_archives:
        return None
    argv = [language.compile[0], *flags, "-x", "c++-header", f"{BOX}/{_CPP_PCH_NAME}"]
    argv += ["-o", f"{BOX}/{_CPP_PCH_NAME}.gch"]
    try:
        return build_once(
            sandbox,
            "cpp-common-pch",
            key[:16],
            {_CPP_PCH_NAME: header},
            argv,
            {},
            f"{_CPP_PCH_NAME}*",
        )
    except ValueError:
        _failed_archives.add(key)
        return None


_PIPES = ("{requests}", "{replies}")
"""Placeholders `harness.run` fills with the fds of a two-sandbox test's pipes."""
_JAVA_MAIN = re.compile(r"\bpublic\s+class\s+Main\b")


def _java(
    sandbox: Sandbox,
    language: Language,
    program: str,
    test: str,
    memory_mib: int,
    context: TestContext,
) -> TestBuild:
    sig = javabox.signature(context.prompt, context.entry_point) if context.prompt else None
    if sig is not None and _JAVA_MAIN.search(test) and language.compile is not None:
        nonce = _nonce()
        steps = _javac_steps(sandbox, language, ["drv/Main.java", "srv/Main.java"])
        java = language.run_argv(memory_mib)[:-3]  # java and its flags, without -cp and class
        return TestBuild(
            files={
                "drv/Main.java": javabox.driver_source(context.prompt, test, sig).encode(),
                "srv/Main.java": javabox.server_source(program).encode(),
            },
            compile=steps.argv,
            run=[java[0], "-ea", *java[1:], "-cp", f"{BOX}/drv", "CodeloopDriver", *_PIPES],
            partner=[*java, "-cp", f"{BOX}/srv", "CodeloopServer", *_PIPES],
            solution_files=("srv",),
            env=dict(language.env),
            binds=steps.binds,
            success_marker=nonce,
            vacuous_marker=vacuous(nonce),
            stdin=(nonce + "\n").encode(),
        )
    if sig is not None and language.compile is not None:
        raise TaskRefused(
            "a java function test must declare `public class Main` (the test's own class, "
            "compiled apart from the solution)"
        )
    raise _unsafe("java", "arrays, user-defined classes")


_JAVAC_CDS_MOUNT = "/javacds"
_JAVAC_WARMUP = """import java.util.*;
import java.util.stream.*;

class Solution {
    public List<Integer> f(List<Integer> xs, String s) {
        Map<Character, Integer> seen = new HashMap<>();
        for (char c : s.toCharArray()) seen.merge(c, 1, Integer::sum);
        return xs.stream().filter(x -> x % 2 == 0).map(x -> x * seen.size())
            .collect(Collectors.toList());
    }
}

public class Main {
    public static void main(String[] args) {
        Solution s = new Solution();
        List<Boolean> correct = Arrays.asList(
            s.f(new ArrayList<>(Arrays.asList(1, 2)), "ab").equals(List.of(4))
        );
        if (correct.contains(false)) {
            throw new AssertionError();
        }
    }
}
"""
"""A typical test program: compiling it loads the compiler classes a check needs, and
the archive dumped from that run (`javac_batch`) maps them into every later compile."""


JAVAC_BATCH_MOUNT = "/javacbatch"
JAVAC_BATCH_JAR = "codeloop-javac.jar"
_JAVAC_BATCH_ARCHIVE = "codeloop-javac.jsa"


@dataclass(frozen=True)
class _JavaCompile:
    """The compile step of a Java function test: its argv and the folders it needs."""

    argv: list[str]
    binds: list[tuple[str, str, bool]]


def _javac_steps(sandbox: Sandbox, language: Language, sources: list[str]) -> _JavaCompile:
    """Compile each of `sources` (paths in the box) apart, into its own folder.

    The test and the solution are two compilations (their classes must not meet).
    One JVM runs both (`CodeloopJavac`, mapping the compiler's classes from a
    class-data archive) where that could be built: measured here, 0.41 s against
    0.76 s for two javac starts with their own archive. Otherwise `javac A && javac B`.
    The options are javac's own either way, and `-proc:none`: no annotation processor
    runs, whatever the source says.
    """
    assert language.compile is not None
    options = [part for part in language.compile[1:] if not part.startswith(("-J", "{box}", "-d"))]
    # javac's own default class path is the working folder (the box); in one JVM it
    # would be the JVM's (our jar), so it is given.
    options += ["-proc:none", "-classpath", BOX]
    groups = [
        [*options, "-d", f"{BOX}/{Path(source).parent}", f"{BOX}/{source}"] for source in sources
    ]
    batch = javac_batch(sandbox, language)
    if batch is None:
        steps = [[language.compile[0], *_javac_jvm_flags(language, "-J"), *g] for g in groups]
        return _JavaCompile(["/bin/sh", "-c", " && ".join(map(shlex.join, steps))], [])
    jar_folder, archive_folder = batch
    argv = [language.run[0], *_javac_jvm_flags(language, "")]
    binds = [(str(jar_folder), JAVAC_BATCH_MOUNT, False)]
    if archive_folder is not None:
        argv.append(f"-XX:SharedArchiveFile={_JAVAC_CDS_MOUNT}/{_JAVAC_BATCH_ARCHIVE}")
        binds.append((str(archive_folder), _JAVAC_CDS_MOUNT, False))
    argv += ["-cp", f"{JAVAC_BATCH_MOUNT}/{JAVAC_BATCH_JAR}", "CodeloopJavac"]
    for index, group in enumerate(groups):
        argv += [*(["--"] if index else []), *group]
    return _JavaCompile(argv, binds)


def _javac_jvm_flags(language: Language, prefix: str) -> list[str]:
    """The JVM flags javac runs with (`-J...` in the registry), each with `prefix`."""
    assert language.compile is not None
    return [prefix + part[2:] for part in language.compile if part.startswith("-J")]


def javac_batch(sandbox: Sandbox, language: Language) -> tuple[Path, Path | None] | None:
    """(folder of codeloop-javac.jar, folder of its class-data archive or None), built
    once per JDK; None where the jar cannot be built (then each compile is a javac).

    The archive is dumped from a run that loads the jar from the same path every check
    mounts it at: the JVM uses an archive only for the same class path, jar and mtime.
    """
    jvm_flags = _javac_jvm_flags(language, "")
    key = sha256_json(
        {
            "javac": toolchain_version(language.name),
            "flags": jvm_flags,
            "source": javabox.batch_compiler_source(),
        }
    )[:16]
    if key in _failed_archives:
        return None
    build = (
        f"{language.compile[0]} -proc:none -d {BOX}/classes {BOX}/CodeloopJavac.java && "
        f"{Path(language.compile[0]).parent}/jar cf {BOX}/{JAVAC_BATCH_JAR} -C {BOX}/classes ."
    )
    try:
        jar_folder = build_once(
            sandbox,
            "javac-batch",
            key,
            {"CodeloopJavac.java": javabox.batch_compiler_source()},
            ["/bin/sh", "-c", build],
            {},
            JAVAC_BATCH_JAR,
        )
    except ValueError:
        _failed_archives.add(key)
        return None
    if key + "-cds" in _failed_archives:
        return jar_folder, None
    dump = [
        language.run[0],
        *jvm_flags,
        f"-XX:ArchiveClassesAtExit={BOX}/{_JAVAC_BATCH_ARCHIVE}",
        "-cp",
        f"{JAVAC_BATCH_MOUNT}/{JAVAC_BATCH_JAR}",
        "CodeloopJavac",
        "-proc:none",
        "-d",
        f"{BOX}/classes",
        f"{BOX}/Main.java",
    ]
    try:
        archive_folder = build_once(
            sandbox,
            "javac-batch-cds",
            key,
            {"Main.java": _JAVAC_WARMUP},
            dump,
            {},
            _JAVAC_BATCH_ARCHIVE,
            binds=[(str(jar_folder), JAVAC_BATCH_MOUNT, False)],
        )
    except ValueError:
        _failed_archives.add(key + "-cds")
        return jar_folder, None
    return jar_folder, archive_folder


# --- go ------------------------------------------------------------------------------------

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


_GO_RUNTIME_PACKAGES = (
    "bufio",
    "bytes",
    "encoding/base64",
    "encoding/json",
    "errors",
    "fmt",
    "io",
    "os",
    "reflect",
    "strconv",
    "strings",
    "testing",
    "github.com/stretchr/testify/assert",
)
"""What the trusted Go files and HumanEval-X's tests import."""
GOCACHE_MOUNT = "/gocache"
"""Where a Go compile sees the shared build cache (`gocache` in the cache root):
read-write in `go_warm_cache`'s trusted builds only, read-only in checks."""
GOCACHEPROG_MOUNT = "/gocacheprog"
"""Where a Go check's compile sees the cache program (`gobox/cacheprog.go.txt`, built)."""
GO_OWN_CACHE = "/tmp/gocache"
"""A Go check's own GOCACHE, in its compile sandbox's tmpfs (thrown away with it)."""
_go_warmed: dict[str, int] = {}
"""Warm-up keys this process saw done, with the inode of the shared cache they went
into: the check is a dict lookup and one stat (an evicted cache is a new folder)."""


def go_check_cache(
    sandbox: Sandbox, language: Language, gocache: Path
) -> tuple[list[tuple[str, str, bool]], dict[str, str]]:
    """The binds and environment that give a Go check's compile the shared build cache,
    read-only.

    The go command asks the cache program (GOCACHEPROG, `gobox/cacheprog.go.txt`) for
    cached outputs; it answers from `gocache` (the standard packages `go_warm_cache`
    prebuilt) and takes no `put`, so what the check compiles (its own packages, a
    200 MiB array) stays in the go command's work folder in the sandbox's tmpfs, and
    no check can grow the shared cache or leave anything in it for another. GOCACHE
    itself is the check's own empty folder there (the go command wants one; nothing
    is stored in it). Where the cache program cannot be built, a check gets only its
    own cache (slower, as safe). Checks no longer fill the shared cache, so the
    standard packages are warmed here too (once; stdio checks call no other warm-up;
    not Debian's whole testify, whose net/http stack no HumanEval-X test needs).
    """
    go_warm_cache(sandbox, language, dict(language.env), third_party=False)
    program = _go_cacheprog(sandbox, language)
    if program is None:
        return [], {"GOCACHE": GO_OWN_CACHE}
    if sandbox.backend.name != "bwrap":  # no mounts: the go command sees the real folders
        command = shlex.join([str(program), str(gocache)])
        return [], {"GOCACHE": GO_OWN_CACHE, "GOCACHEPROG": command}
    binds = [(str(gocache), GOCACHE_MOUNT, False), (str(program.parent), GOCACHEPROG_MOUNT, False)]
    command = f"{GOCACHEPROG_MOUNT}/{program.name} {GOCACHE_MOUNT}"
    return binds, {"GOCACHE": GO_OWN_CACHE, "GOCACHEPROG": command}


_cacheprogs: dict[str, Path] = {}
"""Cache program builds this process saw done (key -> binary)."""


@functools.cache
def _cacheprog_source() -> str:
    return (Path(gobox.__file__).parent / "cacheprog.go.txt").read_text()


def _go_cacheprog(sandbox: Sandbox, language: Language) -> Path | None:
    """The cache program, built once per toolchain and source by a trusted one-time build
    (the compile uid, in the sandbox; its standard packages through the shared cache, as
    a warm-up): a binary root writes, which checks run from a read-only bind. None if
    it cannot be built."""
    source = _cacheprog_source()
    key = sha256_json({"go": toolchain_version(language.name), "source": source})[:16]
    known = _cacheprogs.get(key)
    if known is not None:
        return known
    if key in _failed_archives:
        return None
    uid = sandbox.backend.compile_uid
    folder = shared_folder("gocacheprog", uid) / key
    binary = folder / "cacheprog"
    with contextlib.suppress(OSError):
        if (folder / ".done").exists() and binary.stat().st_mode & 0o111:
            _cacheprogs[key] = binary
            return binary
    with locked("gocache"):
        if not (folder / ".done").exists():
            _go_cap_cache(uid)
        gocache = shared_folder("gocache", uid)
        try:
            build_once(
                sandbox,
                "gocacheprog",
                key,
                {"cacheprog.go": source},
                [GO, "build", "-ldflags=-s -w", "-o", f"{BOX}/cacheprog", f"{BOX}/cacheprog.go"],
                {**language.env, "GOCACHE": GOCACHE_MOUNT},
                "cacheprog",
                binds=[(str(gocache), GOCACHE_MOUNT, True)],
            )
        except ValueError:
            _failed_archives.add(key)
            return None
        binary.chmod(0o755)  # build_once stores products read-only to all
    _cacheprogs[key] = binary
    return binary


def go_warm_cache(
    sandbox: Sandbox,
    language: Language,
    env: dict[str, str],
    binds: Sequence[tuple[str, str, bool]] = (),
    more: Sequence[str] = (),
    third_party: bool = True,
) -> bool:
    """Compile the standard packages checks import (and `more`; with `third_party`, the
    testify the tests use) into the shared GOCACHE, once; whether that succeeded.

    With a fresh cache every worker's first checks would compile them at the same
    time (the go command shares finished results, not work in progress), each paying
    for all of them. Optional: where this fails, checks compile what they miss.
    """
    runtime = [path for path in _GO_RUNTIME_PACKAGES if third_party or "." not in path]
    packages = sorted({*_GO_STD, *runtime, *more})
    key = sha256_json({"go": toolchain_version(language.name), "env": env, "packages": packages})
    key = key[:16]
    if key in _failed_archives:
        return False
    uid = sandbox.backend.compile_uid
    with contextlib.suppress(OSError):
        if _go_warmed.get(key) == (cache_root() / "gocache").stat().st_ino:
            return True
    command = f"{shlex.join([GO, 'build', *packages])} && : > {BOX}/warmed"
    with locked("gocache"):
        if not (shared_folder("gocache-warmed", uid) / key / ".done").exists():
            _go_cap_cache(uid)
        gocache = shared_folder("gocache", uid)
        try:
            build_once(
                sandbox,
                "gocache-warmed",
                key,
                {},
                ["/bin/sh", "-c", command],
                {**env, "GOCACHE": GOCACHE_MOUNT},
                "warmed",
                binds=[(str(gocache), GOCACHE_MOUNT, True), *binds],
            )
        except ValueError:
            _failed_archives.add(key)
            return False
        _go_warmed[key] = gocache.stat().st_ino
    return True


def _go_cap_cache(uid: int | None) -> None:
    """Before a warm-up writes the shared Go cache: evict it when over its cap
    (CODELOOP_GOCACHE_MIB, default DEFAULT_GOCACHE_MIB), with every warm-up's mark, so
    each warm-up runs again into the fresh folder when next needed. Warm-ups are its
    only writers, so it stays under the cap plus one warm-up's packages.

    The go command's own trim (entries unused for 5 days, deleted in place, once a
    day) is kept off: checks read the cache without marking what they use, and a
    file deleted under a running compile would fail it. `trim.txt` says it just ran.
    """
    cap_mib = int(os.environ.get("CODELOOP_GOCACHE_MIB") or DEFAULT_GOCACHE_MIB)
    if cap_shared_folder("gocache", uid, cap_mib << 20):
        shutil.rmtree(cache_root() / "gocache-warmed", ignore_errors=True)
        _go_warmed.clear()
    trim = shared_folder("gocache", uid) / "trim.txt"
    trim.write_text(str(int(time.time())))
    if uid is not None:
        os.chown(trim, uid, uid)


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


def go_library(sandbox: Sandbox, language: Language, env: dict[str, str]) -> Path | None:
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
    more = [gobox.LIBRARY_IMPORT, "github.com/stretchr/testify/assert"]
    if not go_warm_cache(sandbox, language, _go_library_env(env, folder, True), binds, more):
        return None
    return folder


@functools.cache
def _go_library_files() -> tuple[str, dict[str, bytes]]:
    """(key, {path: text}) of `go_library`'s folder, read once per process."""
    files = {f"rpc/{name}": text for name, text in gobox.library_files().items()}
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


def _go(
    sandbox: Sandbox,
    language: Language,
    program: str,
    test: str,
    memory_mib: int,
    context: TestContext,
) -> TestBuild:
    env = dict(language.env)
    env.update({"GO111MODULE": "off", "GOPATH": GO_PATH})
    sig = gobox.signature(context.prompt, context.entry_point) if context.prompt else None
    if sig is not None:
        nonce = _nonce()
        driver = go_test_file(context.prompt[: sig[3]] + "\n" + gobox.proxy(sig), test)
        server = go_test_file(program + gobox.server_main(sig), "")
        names = gobox.test_names(_go_code_only(go_split_imports(test)[0]))
        library = go_library(sandbox, language, env)
        binds: list[tuple[str, str, bool]] = []
        if library is None:
            go_warm_cache(sandbox, language, env)
        else:
            trimmed = not _WHOLE_TESTIFY.search(test + "\n" + program)
            env = _go_library_env(env, library, trimmed)
            binds.append((str(library), GO_LIBRARY_MOUNT, False))
        # One go command builds both binaries (bin/drv, bin/srv): it loads the standard
        # library's packages once, and links them side by side.
        build = [GO, "build", "-ldflags=-s -w", "-o", f"{BOX}/bin/", "./drv", "./srv"]
        return TestBuild(
            files={
                "drv/main.go": driver.encode(),
                "srv/main.go": server.encode(),
                **gobox.files(names, library is not None),
            },
            compile=build,
            run=[f"{BOX}/bin/drv", "-test.count=1", "--", "{requests}", "{replies}"],
            partner=[f"{BOX}/bin/srv", "{requests}", "{replies}"],
            solution_files=("bin/srv",),
            env=env,
            binds=binds,
            success_marker=nonce,
            vacuous_marker=vacuous(nonce),
            stdin=(nonce + "\n").encode(),
        )
    raise _unsafe("go", "pointers, function values, channels, variadics")


# --- rust ----------------------------------------------------------------------------------

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


def rust_crates(sandbox: Sandbox) -> tuple[Path, dict[str, str]]:
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
        {"rustc": toolchain_version("rust"), "manifest": _crate_manifest(), "flags": _RUST_FLAGS}
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


def rust_rpc_library(sandbox: Sandbox) -> Path | None:
    """`rustbox`'s codec compiled once per toolchain as an rlib (None if that failed).

    A test half is a few dozen lines beside our 400-line codec, whose type and borrow
    checking took most of its compile. Built with the test halves' own flags, so the
    codec behaves as when it is compiled into each crate; `CODELOOP_RUST_RPC_LIB=off`
    compiles it into each crate (benches).
    """
    if switched_off("CODELOOP_RUST_RPC_LIB"):
        return None
    flags = [flag for flag in _RUST_FLAGS if flag != "--test"]
    source = rustbox.module().decode()
    key = sha256_json({"rustc": toolchain_version("rust"), "flags": flags, "source": source})
    if key in _failed_archives:
        return None
    output = f"{BOX}/lib{rustbox.LIBRARY}.rlib"
    argv = ["/usr/bin/rustc", *flags, "--crate-type", "rlib", "--crate-name", rustbox.LIBRARY]
    argv += ["-o", output, f"{BOX}/{rustbox.MODULE}"]
    try:
        return build_once(
            sandbox, "rust-rpc", key[:16], {rustbox.MODULE: source}, argv, {}, "*.rlib"
        )
    except ValueError:
        _failed_archives.add(key)
        return None


def _rust(
    sandbox: Sandbox,
    language: Language,
    program: str,
    test: str,
    memory_mib: int,
    context: TestContext,
) -> TestBuild:
    if uses_rand_07_api(test):
        raise TaskRefused(
            "the test calls the rand 0.7 API gen_range(low, high); only rand 0.8 (Debian's "
            "librust-rand-dev) is available offline, so it cannot be compiled here"
        )
    folder, crates = rust_crates(sandbox)
    externs: list[str] = []
    for name, rlib in sorted(crates.items()):
        externs += ["--extern", f"{name}={_CRATES_MOUNT}/{rlib}"]
    found = (
        rustbox.signatures(context.prompt, context.entry_point, program, test)
        if context.prompt
        else None
    )
    if found is not None:
        sigs, at = found
        binds = [(str(folder), _CRATES_MOUNT, False)]
        library = rust_rpc_library(sandbox)
        with_library = library is not None
        if library is not None:
            binds.append((str(library), _RPC_MOUNT, False))
            externs += ["--extern", f"{rustbox.LIBRARY}={_RPC_MOUNT}/lib{rustbox.LIBRARY}.rlib"]
        linked = ["-L", f"dependency={_CRATES_MOUNT}", *externs]
        linked += [arg for flag in fast_link() for arg in ("-C", f"link-arg={flag}")]
        server_flags = [flag for flag in _RUST_FLAGS if flag != "--test"]
        # The verdict: a nonce on the test's stdin (the solution's is /dev/null; the
        # environment reaches both sides), printed by the test crate's own exit handler
        # only when the harness exits 0 (see rustbox); "test result: ok." alone is
        # also printed by a run of no test at all.
        nonce = _nonce()
        steps = [
            ["/usr/bin/rustc", *server_flags, *linked, "-o", f"{BOX}/server", f"{BOX}/server.rs"],
            ["/usr/bin/rustc", *_RUST_FLAGS, *linked, "-o", f"{BOX}/main", f"{BOX}/main.rs"],
        ]
        return TestBuild(
            files={
                "server.rs": rustbox.server_source(program, sigs, with_library).encode(),
                "main.rs": rustbox.test_source(
                    context.prompt, test, sigs, at, with_library
                ).encode(),
                **({} if with_library else {rustbox.MODULE: rustbox.module()}),
            },
            compile=["/bin/sh", "-c", " && ".join(shlex.join(step) for step in steps)],
            run=[f"{BOX}/main", "--test-threads=1"],
            partner=[f"{BOX}/server", "{requests}", "{replies}"],
            solution_files=("server",),
            env={
                **language.env,
                "CODELOOP_REQUESTS": "{requests}",
                "CODELOOP_REPLIES": "{replies}",
            },
            binds=binds,
            success_marker=nonce,
            vacuous_marker=vacuous(nonce),
            stdin=(nonce + "\n").encode(),
        )
    missing = rustbox.solution_types(context.prompt, context.entry_point) if context.prompt else []
    if missing:
        # The signature names a type only the solution can define (Rust/137's RtnType),
        # and this solution does not define it as a plain enum: a failure, decided
        # without falling back to the one-process composition the program could forge.
        message = (
            f"the test uses {', '.join(missing)}, which the solution must define as a plain "
            "enum (derives only, type parameters without bounds, tuple or unit variants "
            "of types that cross between processes)"
        )
        return TestBuild(
            files={},
            compile=["/bin/sh", "-c", f"echo {shlex.quote(message)} >&2; exit 1"],
            run=["/bin/false"],
        )
    raise _unsafe("rust", "references to user-defined types, trait objects")


_COMPOSERS: dict[str, Callable[[Sandbox, Language, str, str, int, TestContext], TestBuild]] = {
    "python": _python,
    "javascript": _javascript,
    "cpp": _cpp,
    "java": _java,
    "go": _go,
    "rust": _rust,
}
