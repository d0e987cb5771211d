"""What every language's function test is built from: the composed test (`TestBuild`),
what the test may use besides the program (`TestContext`), the refusals, the per-check
nonce, and the one-time builds shared by all workers (crates, headers, archives)."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from codeloop.sandbox import harness
from codeloop.sandbox.cache import locked, shared_folder

if TYPE_CHECKING:
    from collections.abc import Sequence

    from codeloop.config import SandboxLimits


class BuildHost(Protocol):
    """What a language's home may use of the worker checking a program (its
    `compiler.Compiler`): its isolation backend, its scratch folder and its compile
    limits. A protocol, so that the homes need not import the compiler that imports
    them."""

    backend: harness.Backend
    scratch: Path

    def compile_limits(self, limits: SandboxLimits) -> harness.RunLimits: ...


@dataclass(frozen=True)
class TrustedHalf:
    """The test's side of a two-process function test, compiled apart from the solution.

    It depends on the task (its prompt and test), not on the answer, so a check
    compiles it once per task and toolchain and every later answer to that task loads
    it from the compile cache: only the solution's half is compiled per answer. It
    never carries the nonce (that reaches the test on stdin), so it can be shared.
    """

    files: dict[str, bytes]
    """The test side's sources, with the codec files it compiles."""
    compile: list[str]
    """The command that compiles them, in a box that holds them and nothing else."""
    from_task: bool = True
    """Whether the half is built from the task alone (its prompt and test): then a
    compile failure is the task's, never the answer's (an environment_error with
    `task_error`, not a compile_error that would score a right answer 0). False where
    the answer's text shapes it (Rust: proxies for the program's own helpers)."""


@dataclass
class TestBuild:
    """Everything needed to compile and run one composed test program."""

    __test__ = False  # not a pytest test class, despite the name

    files: dict[str, bytes]
    run: list[str]
    compile: list[str] | None = None
    trusted: TrustedHalf | None = None
    """The test's half, compiled apart (`compiler.Compiler` caches it per task); then `files`
    and `compile` are the solution's half only, and the solution's compile never sees
    the test's sources."""
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
    """A second command in a sandbox of its own (the solution's process; see
    `languages/javascript/box`)."""
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


class TaskRefused(ValueError):
    """The task's test cannot be checked as written (not the machine's fault, nor the
    program's): reported as an environment_error with `task_error` set."""


def refuse_unsafe(language: str, examples: str) -> ValueError:
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


def make_nonce() -> str:
    """A per-check success marker the program cannot know in advance."""
    return f"CODELOOP-TESTS-DONE-{secrets.token_hex(8)}"


VACUOUS_SUFFIX = ":vacuous"


def vacuous(nonce: str) -> str:
    """What the test side prints instead of `nonce` after a test that never called the
    solution: the nonce (which the solution cannot know) plus VACUOUS_SUFFIX."""
    return nonce + VACUOUS_SUFFIX


# --- one-time builds shared by all workers ----------------------------------------------

ONE_TIME_LIMITS = harness.RunLimits(
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
    sandbox: BuildHost,
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
                limits=ONE_TIME_LIMITS,
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


failed_archives: set[str] = set()
"""Keys of optional speed-up builds that failed in this worker (not retried)."""


PIPES = ("{requests}", "{replies}")
"""The two pipe arguments of a two-process function test (filled in by the harness)."""
