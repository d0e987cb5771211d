"""The worker's javac service: one-shot verdicts and messages, nothing carried over.

Every compile here is real javac, in the service's sandbox or in a one-shot compile
step; every program runs in bubblewrap.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from codeloop.config import SandboxLimits
from codeloop.data import HUMANEVAL_X
from codeloop.evaluate import load_humaneval_x
from codeloop.evaluate.humaneval import humaneval_x_job
from codeloop.sandbox import harness, languages, seccomp
from codeloop.sandbox.check import Check, CheckRequest, Sandbox
from codeloop.sandbox.harness import COMPILE_UID
from codeloop.sandbox.languages.java import javac_service
from tests.support.sandbox_probe import descendants

LIMITS = SandboxLimits(time_s=10, compile_time_s=60)
STDIO_OK = (
    "import java.util.*;\n"
    "public class Main {\n"
    "    public static void main(String[] args) {\n"
    "        Scanner in = new Scanner(System.in);\n"
    "        System.out.println(Helper.twice(in.nextInt()));\n"
    "    }\n"
    "}\n"
    "class Helper {\n"
    "    static int twice(int x) { return 2 * x; }\n"
    "}\n"
)
# Uses the class the previous program defined, without defining it.
STDIO_BORROWS = (
    "public class Main {\n"
    "    public static void main(String[] args) {\n"
    "        System.out.println(Helper.twice(21));\n"
    "    }\n"
    "}\n"
)
STDIO_BROKEN = (
    "public class Main {\n"
    "    public static void main(String[] args) {\n"
    "        System.out.println(undefinedName);\n"
    "    }\n"
    "}\n"
)
WRONG_BODY = "        return false;\n    }\n}\n"
BROKEN_BODY = "        return undefinedName;\n    }\n}\n"


@pytest.fixture(scope="module")
def function_requests() -> dict[str, CheckRequest]:
    problems = load_humaneval_x(HUMANEVAL_X, ["java"])
    row = problems.rows["Java/0"]
    found = {}
    for kind, body in (("canonical", None), ("wrong", WRONG_BODY), ("broken", BROKEN_BODY)):
        job = humaneval_x_job(row, row["canonical_solution"] if body is None else body)
        found[kind] = CheckRequest(
            language="java",
            program=job.program,
            test=job.test,
            prompt=job.prompt,
            entry_point=job.entry_point,
            limits=LIMITS,
        )
    return found


def stdio(program: str, given: str = "4\n", expected: str = "8\n") -> CheckRequest:
    return CheckRequest(
        language="java",
        program=program,
        cases=[{"input": given, "output": expected}],
        limits=LIMITS,
    )


def fresh(request: CheckRequest) -> CheckRequest:
    """`request` with a program no compile cache holds (a unique trailing comment), so
    that it is compiled, not loaded."""
    program = f"{request.program}\n// {uuid.uuid4().hex}\n"
    return request.model_copy(update={"program": program})


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch):
    """A worker with the javac service."""
    monkeypatch.delenv("CODELOOP_JAVAC_SERVICE", raising=False)
    sandbox = Sandbox("bwrap", worker=11)
    assert sandbox.compiler.services.get("java") is not None
    yield sandbox
    sandbox.close()


def one_shot(monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    monkeypatch.setenv("CODELOOP_JAVAC_SERVICE", "off")
    sandbox = Sandbox("bwrap", worker=12)
    assert sandbox.compiler.services.get("java") is None
    return sandbox


def comparable(check: Check) -> tuple:
    """What a verdict says, without timings."""
    return check.status, check.feedback, check.cases_passed, check.cases_total


def test_the_service_gives_the_one_shot_verdicts_and_messages(
    served: Sandbox,
    function_requests: dict[str, CheckRequest],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requests = {
        **function_requests,
        "stdio": stdio(STDIO_OK),
        "stdio wrong": stdio(STDIO_OK, expected="9\n"),
        "stdio broken": stdio(STDIO_BROKEN),
    }
    by_service = {kind: served.check(fresh(request)) for kind, request in requests.items()}
    assert (
        served.compiler.services["java"] is not None
        and served.compiler.services["java"].pid is not None
    ), "the service never ran"
    cold = one_shot(monkeypatch)
    try:
        by_one_shot = {kind: cold.check(fresh(request)) for kind, request in requests.items()}
    finally:
        cold.close()
    assert {kind: check.status for kind, check in by_service.items()} == {
        "canonical": "passed",
        "wrong": "wrong_answer",
        "broken": "compile_error",
        "stdio": "passed",
        "stdio wrong": "wrong_answer",
        "stdio broken": "compile_error",
    }
    for kind in requests:
        assert comparable(by_service[kind]) == comparable(by_one_shot[kind]), kind
    # javac's own message, with the path every compile sees.
    assert "/box/Main.java:3: error: cannot find symbol" in by_service["stdio broken"].feedback


def test_a_class_one_compile_made_is_not_seen_by_the_next(served: Sandbox) -> None:
    first = served.check(fresh(stdio(STDIO_OK)))
    assert first.status == "passed", first.feedback
    assert served.compiler.services["java"] is not None
    pid, folder = served.compiler.services["java"].pid, served.compiler.services["java"].folder
    assert folder is not None
    # Whatever a compile leaves in the service's folder, a source javac would find on
    # its class path included, is gone before the next compile.
    (folder / "Helper.java").write_text(
        "class Helper { static int twice(int x) { return 2 * x; } }\n"
    )
    second = served.check(fresh(stdio(STDIO_BORROWS, expected="42\n")))
    assert served.compiler.services["java"].pid == pid, "not the same service"
    assert second.status == "compile_error", second.feedback
    assert "cannot find symbol" in second.feedback


def test_the_service_runs_in_its_sandbox_as_the_compile_uid(served: Sandbox) -> None:
    assert served.check(fresh(stdio(STDIO_OK))).status == "passed"
    assert (
        served.compiler.services["java"] is not None
        and served.compiler.services["java"].pid is not None
    )
    # Below the service's bwrap: bwrap's own child (pid 1 in the sandbox), then the JVM.
    jvm = next(
        pid
        for pid in descendants(served.compiler.services["java"].pid)
        if os.readlink(f"/proc/{pid}/exe").endswith("/java")
    )
    status = Path(f"/proc/{jvm}/status").read_text()
    uid = int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
    if os.geteuid() == 0:
        assert uid == COMPILE_UID
    for space in ("mnt", "net", "pid", "user"):
        assert os.readlink(f"/proc/{jvm}/ns/{space}") != os.readlink(f"/proc/self/ns/{space}")
    if seccomp.available():
        assert "Seccomp:\t2" in status


def test_a_dead_service_is_replaced_and_the_check_still_right(served: Sandbox) -> None:
    assert served.check(fresh(stdio(STDIO_OK))).status == "passed"
    assert (
        served.compiler.services["java"] is not None
        and served.compiler.services["java"].pid is not None
    )
    first = served.compiler.services["java"].pid
    os.killpg(first, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while os.waitpid(first, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    again = served.check(fresh(stdio(STDIO_OK, given="5\n", expected="10\n")))
    assert again.status == "passed", again.feedback
    assert (
        served.compiler.services["java"].pid is not None
        and served.compiler.services["java"].pid != first
    )


def test_requests_follow_the_one_shot_command() -> None:
    jar = "/javacbatch/codeloop-javac.jar"
    batch = ["/usr/bin/java", "-Xshare:auto", "-cp", jar, "CodeloopJavac", "-d", "/box/a"]
    assert javac_service.groups_of([*batch, "/box/a/Main.java"], jar) == [
        "-d",
        "/box/a",
        "/box/a/Main.java",
    ]
    plain = ["/usr/bin/javac", "-J-Xshare:auto", "-d", "/box", "/box/Main.java"]
    assert javac_service.groups_of(plain, jar) == [
        "-proc:none",
        "-classpath",
        "/box",
        "-d",
        "/box",
        "/box/Main.java",
    ]
    assert javac_service.groups_of(["/bin/sh", "-c", "javac A && javac B"], jar) is None
    # A class path the command names is its own (the registry's: the box and the jars).
    assert javac_service.groups_of([*plain, "-classpath", "/box:/lib.jar"], jar) == [
        "-proc:none",
        "-d",
        "/box",
        "/box/Main.java",
        "-classpath",
        "/box:/lib.jar",
    ]


CONCAT = (
    "public class Main {\n"
    "    public static void main(String[] args) {\n"
    '        System.out.println("x = " + args.length);\n'
    "    }\n"
    "}\n"
)


@pytest.mark.parametrize("service", ["on", "off"])
def test_string_concatenation_compiles_without_invokedynamic(
    service: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """javac is asked for StringBuilder calls (`-XDstringConcat=inline`), so no JVM of a
    check pays for the invokedynamic bootstrap; both compile paths pass it."""
    monkeypatch.setenv("CODELOOP_JAVAC_SERVICE", service)
    sandbox = Sandbox("bwrap", worker=11)
    language = languages.get("java")
    program = fresh(stdio(CONCAT)).program.encode()
    box = harness.prepare_box(sandbox.scratch, sandbox.backend.compile_uid)
    try:
        (box / "Main.java").write_bytes(program)
        (box / "Main.java").chmod(0o644)
        failed, _ms = sandbox.compiler.compile(language, box, {"Main.java": program}, LIMITS)
        assert failed is None, failed
        compiled = (box / "Main.class").read_bytes()
    finally:
        harness.remove_box(box)
        sandbox.close()
    assert b"StringBuilder" in compiled
    assert b"makeConcatWithConstants" not in compiled


def test_the_worker_never_follows_a_link_the_service_left(tmp_path: Path) -> None:
    """The service is a running process of another uid: what it puts in its folder
    must not lead the worker (root) to another file of the machine."""
    secret = tmp_path / "secret"
    secret.write_text("host file\n")
    folder, box = tmp_path / "folder", tmp_path / "box"
    folder.mkdir()
    box.mkdir()
    (folder / "drv").mkdir()
    (folder / "drv" / "Main.java").write_text("source")
    (folder / "drv" / "Main.class").write_bytes(b"\xca\xfe\xba\xbe")
    assert javac_service._copy_outputs(folder, box, {"drv/Main.java"})
    assert (box / "drv" / "Main.class").read_bytes() == b"\xca\xfe\xba\xbe"
    assert not (box / "drv" / "Main.java").exists()  # the sources stay where they are
    # A link to a host file, or a pipe, among the outputs: nothing is taken.
    (folder / "drv" / "Leak.class").symlink_to(secret)
    with pytest.raises(OSError):
        javac_service._copy_outputs(folder, tmp_path / "box2", {"drv/Main.java"})
    (folder / "drv" / "Leak.class").unlink()
    os.mkfifo(folder / "drv" / "Pipe.class")
    assert not javac_service._copy_outputs(folder, tmp_path / "box3", {"drv/Main.java"})
    assert not (tmp_path / "box3").exists()
    # A folder swapped for a link to a host folder: the sources are not written there.
    javac_service._empty(folder)
    assert list(folder.iterdir()) == []
    (folder / "drv").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(OSError):
        javac_service._write_sources(folder, {"drv/Main.java": b"source"}, None)
    assert list((tmp_path / "elsewhere").iterdir()) == []
    # An existing file (a pipe would block a plain open) is never written through.
    (folder / "drv").unlink()
    os.mkfifo(folder / "Main.java")
    with pytest.raises(FileExistsError):
        javac_service._write_sources(folder, {"Main.java": b"source"}, None)
