"""The bare baseline of HumanEval-X: each answer and its test as ONE program, compiled and
run as plain subprocesses in a temporary folder, with no isolation at all.

This is what a harness without a sandbox does (HumanEval-X's own harness, MultiPL-E),
so `codeloop`'s throughput can be read against it: what the isolation, the two-process
composition and the verdict rules cost, or save. Only trusted text may go through it
(canonical solutions and their one-token mutants): nothing here stops a program from
reading, writing or deleting anything root can.

How each language is composed and judged (pass = the test's own convention):

- python: the official import helper + prompt + solution, then the test (whose last
  line calls `check(...)`), run by /usr/bin/python3; passes on exit code 0.
- javascript: prompt + solution, then the test, run by node (NODE_PATH reaches
  js-md5). `console.assert` only prints "Assertion failed" and exits 0, so, as
  HumanEval-X's harness does, anything on stderr fails the answer.
- cpp: the missing official helper includes + prompt + solution + test, compiled with
  `g++ -std=c++17 -lcrypto -lssl` (no -O, as the official harness and MultiPL-E), run.
- java: prompt + solution + test as Main.java (the file must be `Main.java`),
  `javac`, then `java -ea Main` (Java/151's last check is an `assert`).
- go: the solution's file and the `_test.go` (test_setup + test) in one folder,
  `go test -c -vet=off` in GOPATH mode (testify from Debian's /usr/share/gocode),
  then the test binary. The official one-file composition fails 11 canonical
  solutions on missing or unused imports (the benchmark's README), so each file's
  imports are recomputed from what its code uses (codeloop's `go_test_file`). vet is
  off because codeloop does not vet either: it would only add time to the baseline.
- rust: an empty `main` + declaration + prompt + solution + test, `rustc --edition
  2021 --test` against the rand, regex and md5 rlibs codeloop built once (same
  rustc), then the test binary (cargo test's debug profile: overflow checks on).

Compiles get 60 s, runs 5 s (+ the language's start-up allowance), as codeloop's
default `SandboxLimits`. A run's stderr is capped at 16 MiB and, for the native and
Python programs, its address space at 2 GiB (`prlimit`): a guard for the shared
machine against a mutant that loops allocating, not isolation.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from codeloop.evaluate.humaneval import Job
from codeloop.sandbox.languages.go.cache import _GO_RUNTIME_PACKAGES
from codeloop.sandbox.languages.go.source import _GO_STD, go_test_file
from codeloop.sandbox.languages.go.toolchain import GO, GO_PATH

COMPILE_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 5.0
"""Codeloop's default limits (SandboxLimits.compile_time_s, .time_s)."""
STARTUP_S = {"java": 0.5, "javascript": 0.2}
"""Codeloop's per-language start-up allowance on top of the run time."""
STDERR_CAP = 16 << 20
ADDRESS_SPACE_CAP = 2 << 30
CAPPED_ADDRESS_SPACE = frozenset({"python", "cpp", "rust"})
"""Languages whose runtime does not reserve huge virtual memory up front (the JVM, node
and Go do), so an address-space cap only stops a runaway allocation."""
NODE_MODULES = "/usr/lib/node_modules"
RUST_CRATES = ("rand", "regex", "md5")
GO_WARM_PACKAGES = tuple(sorted({*_GO_STD, *_GO_RUNTIME_PACKAGES}))
"""What HumanEval-X's Go answers and tests import, compiled into the fresh GOCACHE by the
warm-up: the lists codeloop's own one-time Go warm-up builds (`go_warm_cache`), so both
sides start from the same packages; a one-time build, not what the timed checks measure."""
_CHECK_CALL = re.compile(r"^check\(", re.MULTILINE)


@dataclass
class Outcome:
    """The verdict on one answer, and where its time went."""

    status: str
    """passed, compile_error, failed (non-zero exit, or stderr for javascript), timeout."""
    compile_s: float = 0.0
    run_s: float = 0.0
    detail: str = ""
    """The tail of the failing step's stderr (for reading disagreements)."""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def rust_crates(cache: Path) -> dict[str, Path]:
    """The rand, regex and md5 rlibs codeloop's one-time build left under `cache`.

    They are built by /usr/bin/rustc from Debian's cargo registry; reusing them (rather
    than building our own) keeps one-time builds out of the comparison, and links the
    same crate versions codeloop's checks do. The folder also holds their dependencies
    (`-L dependency=`).
    """
    for done in sorted((cache / "rust-crates").glob("*/.done")):
        found = {
            rlib.name[3:].rsplit("-", 1)[0]: rlib for rlib in sorted(done.parent.glob("*.rlib"))
        }
        if all(name in found for name in RUST_CRATES):
            return {name: found[name] for name in RUST_CRATES}
    raise SystemExit(
        f"no rust-crates build with {', '.join(RUST_CRATES)} under {cache}: codeloop's rust "
        "warm-up must run first"
    )


class Bare:
    """Checks answers the bare way: one program per answer, plain subprocesses."""

    def __init__(self, scratch: Path, crates: dict[str, Path] | None) -> None:
        """`scratch`: where the answers' temporary folders and the Go build cache go
        (a fresh GOCACHE, warmed by `warm_go`); `crates`: `rust_crates` (None: no rust)."""
        self.scratch = scratch
        self.crates = crates
        self.gocache = scratch / "gocache"
        self.gocache.mkdir(parents=True, exist_ok=True)

    def go_env(self) -> dict[str, str]:
        """Codeloop's Go environment (GOPATH mode, testify from Debian), with our GOCACHE."""
        return {
            **os.environ,
            "GO111MODULE": "off",
            "GOPATH": GO_PATH,
            "GOFLAGS": "-trimpath",
            "GOTOOLCHAIN": "local",
            "CGO_ENABLED": "0",
            "GOCACHE": str(self.gocache),
        }

    def warm_go(self) -> None:
        """Compile the packages Go answers use into the fresh GOCACHE (one-time, untimed)."""
        with tempfile.TemporaryDirectory(dir=self.scratch) as folder:
            done = subprocess.run(
                [GO, "build", *GO_WARM_PACKAGES],
                cwd=folder,
                env=self.go_env(),
                capture_output=True,
                text=True,
                check=False,
            )
        if done.returncode != 0:
            raise SystemExit(f"the bare Go warm-up failed:\n{done.stderr[-2000:]}")

    def compose(
        self, job: Job
    ) -> tuple[dict[str, str], list[str] | None, list[str], dict[str, str] | None]:
        """(files, compile argv or None, run argv, environment or None) of one answer."""
        language, program, test = job.language, job.program, job.test
        if language == "python":
            if not _CHECK_CALL.search(test) and job.entry_point:
                test += f"\n\ncheck({job.entry_point})\n"
            return {"main.py": program + "\n" + test}, None, ["/usr/bin/python3", "main.py"], None
        if language == "javascript":
            env = {**os.environ, "NODE_PATH": NODE_MODULES}
            return {"main.js": program + "\n" + test}, None, ["/usr/bin/node", "main.js"], env
        if language == "cpp":
            compile_argv = ["/usr/bin/g++", "-std=c++17", "-o", "main", "main.cpp"]
            return (
                {"main.cpp": program + "\n" + test},
                [*compile_argv, "-lcrypto", "-lssl"],
                ["./main"],
                None,
            )
        if language == "java":
            return (
                {"Main.java": program + "\n" + test},
                ["/usr/bin/javac", "-encoding", "UTF-8", "Main.java"],
                ["/usr/bin/java", "-ea", "-cp", ".", "Main"],
                None,
            )
        if language == "go":
            files = {
                "solution.go": go_test_file(program, ""),
                "main_test.go": go_test_file("", test),
            }
            compile_argv = [GO, "test", "-c", "-vet=off", "-o", "main.test"]
            return files, compile_argv, ["./main.test"], self.go_env()
        if language == "rust":
            if self.crates is None:
                raise ValueError("rust answers need the crates (Bare(crates=...))")
            folder = next(iter(self.crates.values())).parent
            externs = [f"--extern={name}={path}" for name, path in self.crates.items()]
            compile_argv = ["/usr/bin/rustc", "--edition", "2021", "--test", "-o", "main"]
            compile_argv += ["-L", f"dependency={folder}", *externs, "main.rs"]
            return {"main.rs": program + "\n" + test}, compile_argv, ["./main"], None
        raise ValueError(f"no bare composition for {language}")

    def check(self, job: Job) -> Outcome:
        """Compose, compile, run one answer in a temporary folder; never raises for what
        the answer does."""
        files, compile_argv, run_argv, env = self.compose(job)
        folder = Path(tempfile.mkdtemp(prefix="answer-", dir=self.scratch))
        try:
            for name, text in files.items():
                (folder / name).write_text(text)
            compile_s = 0.0
            if compile_argv is not None:
                code, compile_s, stderr = _execute(
                    compile_argv, folder, env, COMPILE_TIMEOUT_S, capture_stdout=True
                )
                if code != 0:
                    return Outcome("compile_error", compile_s, 0.0, stderr[-1500:])
            guard = [f"--fsize={STDERR_CAP}"]
            if job.language in CAPPED_ADDRESS_SPACE:
                guard.append(f"--as={ADDRESS_SPACE_CAP}")
            timeout = RUN_TIMEOUT_S + STARTUP_S.get(job.language, 0.0)
            code, run_s, stderr = _execute(
                ["/usr/bin/prlimit", *guard, "--", *run_argv], folder, env, timeout
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if code is None:
            return Outcome("timeout", compile_s, run_s, stderr[-1500:])
        if code != 0 or (job.language == "javascript" and stderr.strip()):
            return Outcome("failed", compile_s, run_s, stderr[-1500:])
        return Outcome("passed", compile_s, run_s)

    def check_many(self, jobs: Sequence[Job], workers: int) -> list[Outcome]:
        """Every answer on `workers` threads (each runs its answer's compile and run);
        results in the order of `jobs`."""
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(self.check, jobs))


def _execute(
    argv: list[str],
    folder: Path,
    env: dict[str, str] | None,
    timeout_s: float,
    capture_stdout: bool = False,
) -> tuple[int | None, float, str]:
    """Run `argv` in `folder`: (exit code or None on timeout, seconds, stderr).

    Its own session, so a timeout kills the whole group (go's children, a program's);
    stderr goes to a file (capped by the run's prlimit), stdout to
    /dev/null unless `capture_stdout` (compilers: their errors may go there).
    """
    started = time.monotonic()
    log = folder / ".stderr"
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            argv,
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=handle if capture_stdout else subprocess.DEVNULL,
            stderr=handle,
            start_new_session=True,
        )
        try:
            code: int | None = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
            # Killed while its leader is unreaped, so the group id is still its own.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    seconds = time.monotonic() - started
    return code, seconds, log.read_bytes().decode("utf-8", "replace")
