"""`codeloop serve`: a real server on loopback (uvicorn on an ephemeral port), the real
sandbox and real programs; nothing of the sandbox is mocked.

SandboxFusion's `/run_code` (its status strings and null rules), the native `/v1/check`
(the same verdict as `check_many`), and the service around them: bearer token, size
limits, malformed bodies, the bounded queue (504), `/metrics`, the JSON access log,
slow-drip bodies (408), and a drain on SIGTERM. Every program here runs in the sandbox's
workers; every wait is bounded.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

from codeloop.errors import ConfigError  # noqa: E402
from codeloop.sandbox import CheckRequest, ProgramRun, Step, check_many  # noqa: E402
from codeloop.sandbox.pool import worker_pids  # noqa: E402
from codeloop.serve import fusion  # noqa: E402
from codeloop.serve.app import create_app  # noqa: E402
from codeloop.serve.limits import Settings, resolve_token  # noqa: E402
from codeloop.serve.protocol import event_loop, parser  # noqa: E402
from tests.support.serve import running  # noqa: E402

pytestmark = pytest.mark.timeout(120)

TOKEN = "serve-test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
RESPONSE_KEYS = {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"}
RESULT_KEYS = {"status", "execution_time", "return_code", "stdout", "stderr"}
SETTINGS = Settings(
    token=TOKEN,
    max_in_flight=2,
    max_waiting=16,
    queue_timeout_s=30.0,
    max_body_bytes=256 * 1024,
    max_code_bytes=64 * 1024,
    max_stdin_bytes=64 * 1024,
    body_timeout_s=1.0,
)


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with running(SETTINGS) as url:
        yield url


@pytest.fixture
def client(base: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base, headers=AUTH, timeout=60) as http:
        yield http


def run_code(client: httpx.Client, **body: object) -> dict:
    answer = client.post("/run_code", json=body)
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert set(found) == RESPONSE_KEYS
    assert found["executor_pod_name"] is None
    assert set(found["files"]) <= set(body.get("fetch_files", []))  # type: ignore[arg-type]
    for key in ("compile_result", "run_result"):
        assert found[key] is None or set(found[key]) == RESULT_KEYS
    return found


def post_in_thread(
    base: str, body: dict, into: dict, headers: dict | None = None
) -> threading.Thread:
    """POST /run_code from a thread of its own (with a client of its own); the answer
    lands in `into["answer"]`."""

    def post() -> None:
        sent = AUTH if headers is None else headers
        with httpx.Client(base_url=base, headers=sent, timeout=60) as http:
            into["answer"] = http.post("/run_code", json=body)

    thread = threading.Thread(target=post)
    thread.start()
    return thread


def wait_for(predicate, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


# --- SandboxFusion's /run_code ----------------------------------------------------------


def test_ping_answers_pong_without_a_token(base: str) -> None:
    answer = httpx.get(f"{base}/v1/ping", timeout=10)
    assert answer.status_code == 200 and answer.json() == "pong"


def test_python_echo_reads_stdin_and_succeeds(client: httpx.Client) -> None:
    found = run_code(
        client,
        code="import sys\nprint(sys.stdin.read().strip()[::-1])",
        stdin="hello\n",
        language="python3",
        some_field_sandboxfusion_may_add=1,  # unknown fields are ignored
    )
    assert found["status"] == "Success" and found["message"] == ""
    assert found["compile_result"] is None  # no compile step: null, as SandboxFusion
    run = found["run_result"]
    assert run["status"] == "Finished" and run["return_code"] == 0
    assert run["stdout"] == "olleh\n" and run["stderr"] == ""
    assert 0 < run["execution_time"] < 10


def test_language_defaults_to_python(client: httpx.Client) -> None:
    found = run_code(client, code="print(6 * 7)")
    assert found["status"] == "Success" and found["run_result"]["stdout"] == "42\n"


def test_a_runtime_error_fails_with_its_exit_status(client: httpx.Client) -> None:
    found = run_code(client, code="print('before')\n1 / 0\n")
    assert found["status"] == "Failed" and found["message"] == ""
    run = found["run_result"]
    # SandboxFusion: the program ran to its end (Finished) with a non-zero return code;
    # `Error` is kept for the sandbox's own failures.
    assert run["status"] == "Finished" and run["return_code"] == 1
    assert run["stdout"] == "before\n" and "ZeroDivisionError" in run["stderr"]


def test_a_program_past_its_run_timeout_is_time_limit_exceeded(client: httpx.Client) -> None:
    found = run_code(
        client, code="print('started', flush=True)\nwhile True:\n    pass\n", run_timeout=1
    )
    assert found["status"] == "Failed"
    run = found["run_result"]
    assert run["status"] == "TimeLimitExceeded" and run["return_code"] is None
    assert run["stdout"] == "started\n" and isinstance(run["stderr"], str)
    assert 0.9 <= run["execution_time"] < 6


def test_a_cpp_compile_error_fails_in_compile_result(client: httpx.Client) -> None:
    found = run_code(client, code="int main() { return 0 }\n", language="cpp")
    assert found["status"] == "Failed"
    compiled = found["compile_result"]
    assert compiled["status"] == "Finished" and compiled["return_code"] != 0
    assert "error" in compiled["stderr"] and compiled["stdout"] == ""
    assert found["run_result"] is None  # never run, as SandboxFusion


def test_a_cpp_program_compiles_and_runs(client: httpx.Client) -> None:
    code = '#include <cstdio>\nint main() { int x; scanf("%d", &x); printf("%d\\n", 2 * x); }\n'
    found = run_code(client, code=code, language="cpp", stdin="21")
    assert found["status"] == "Success"
    assert found["compile_result"]["status"] == "Finished"
    assert found["compile_result"]["return_code"] == 0
    assert found["run_result"]["stdout"] == "42\n"


def test_cpp_is_built_without_optimisation_as_sandboxfusion_builds_it(
    client: httpx.Client,
) -> None:
    """SandboxFusion runs `g++ -std=c++17` with no -O: a program whose undefined behaviour
    differs between -O0 and -O2 must do what it does there (the compiler's own macro
    says which was used)."""
    code = (
        '#include <cstdio>\nint main() {\n#ifdef __OPTIMIZE__\n puts("optimised");\n'
        '#else\n puts("plain");\n#endif\n}\n'
    )
    found = run_code(client, code=code, language="cpp")
    assert found["status"] == "Success", found
    assert found["run_result"]["stdout"] == "plain\n"


def test_rust_is_a_debug_build_and_java_runs_with_assertions(client: httpx.Client) -> None:
    rust = (
        "fn main() { let mut s = String::new(); std::io::stdin().read_line(&mut s).unwrap();"
        ' let x: i32 = s.trim().parse().unwrap(); println!("{}", x + 1); }\n'
    )
    found = run_code(client, code=rust, language="rust", stdin="2147483647")
    assert found["status"] == "Failed", found  # overflow checks on: a panic, not a wrap
    assert found["run_result"]["return_code"] == 101
    assert "overflow" in found["run_result"]["stderr"]
    java = (
        "public class Main { public static void main(String[] a) {\n"
        '  assert 1 > 2 : "assertions are on"; System.out.println("off"); } }\n'
    )
    found = run_code(client, code=java, language="java")
    assert found["status"] == "Failed", found
    assert "assertions are on" in found["run_result"]["stderr"]


def test_an_unknown_language_is_a_clear_422(client: httpx.Client) -> None:
    answer = client.post("/run_code", json={"code": "print(1)", "language": "cobol"})
    assert answer.status_code == 422
    detail = answer.json()["detail"]
    assert "'cobol'" in detail and "python" in detail and "nodejs" in detail


def b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def test_files_go_in_and_fetch_files_come_back(client: httpx.Client) -> None:
    code = (
        "import os\n"
        "text = open('data/in.txt').read() + open('/tmp/host/abs.txt').read()\n"
        "open('out file.txt', 'w').write(text.upper())\n"
        "print(sorted(os.listdir('.')))\n"
    )
    found = run_code(
        client,
        code=code,
        files={
            "data/in.txt": b64("hello"),
            "/tmp/host/abs.txt": b64(" there"),  # LazyLLM keys files by their host paths
            "skipped.txt": None,
            "empty.txt": "",
        },
        fetch_files=["out file.txt", "data/in.txt", "/work/data/in.txt", "never-written.txt"],
    )
    assert found["status"] == "Success", found
    # the program's own stdout, the trailer cut off; null and empty contents write nothing
    assert found["run_result"]["stdout"] == "['data', 'out file.txt']\n"
    got = {path: base64.b64decode(data).decode() for path, data in found["files"].items()}
    assert got == {  # missing ones skipped
        "out file.txt": "HELLO THERE",
        "data/in.txt": "hello",
        "/work/data/in.txt": "hello",
    }
    java = (
        "import java.nio.file.*;\npublic class Main { public static void main(String[] a)"
        ' throws Exception { Files.writeString(Path.of("r.txt"), "j" + Files.readString('
        'Path.of("in.txt"))); } }\n'
    )
    found = run_code(client, code=java, language="java", files={"in.txt": b64("x")},
                     fetch_files=["r.txt"])  # fmt: skip
    assert found["status"] == "Success" and base64.b64decode(found["files"]["r.txt"]) == b"jx"


def test_a_run_that_fails_or_times_out_keeps_its_exit_and_fetches_nothing_past_a_timeout(
    client: httpx.Client,
) -> None:
    found = run_code(client, code="open('o', 'w').write('1')\nraise SystemExit(3)",
                     fetch_files=["o"])  # fmt: skip
    assert found["status"] == "Failed" and found["run_result"]["return_code"] == 3
    assert found["files"] == {"o": b64("1")}  # it finished: what it wrote comes back
    found = run_code(client, code="import time\nopen('o', 'w').write('1')\ntime.sleep(9)",
                     fetch_files=["o"], run_timeout=1)  # fmt: skip
    assert found["run_result"]["status"] == "TimeLimitExceeded" and found["files"] == {}


def test_a_forged_files_trailer_changes_nothing_but_its_own_stdout(client: httpx.Client) -> None:
    # The shell that fetches the files is the program's parent; its command line holds
    # the trailer's mark. A program printing a trailer of its own is cut at the last
    # mark, the real one, so the real file comes back and the forgery stays stdout.
    code = (
        "import base64, os\n"
        "argv = open(f'/proc/{os.getppid()}/cmdline', 'rb').read().split(b'\\0')\n"
        "mark = next(a for a in argv if a.startswith(b'codeloop-files-')).decode()\n"
        "open('o.txt', 'w').write('real')\n"
        "name, fake = (base64.b64encode(x).decode() for x in (b'o.txt', b'forged'))\n"
        "print(f'\\n{mark}\\n{name}\\n{fake}')\n"
    )
    found = run_code(client, code=code, fetch_files=["o.txt"])
    assert found["status"] == "Success", found
    assert found["files"] == {"o.txt": b64("real")}
    assert b64("forged") in found["run_result"]["stdout"]
    big = "open('big', 'w').write('x' * (4 << 20))"  # past the 1 MiB output limit as base64
    found = run_code(client, code=big, fetch_files=["big"])
    assert found["files"] == {} and found["run_result"]["status"] == "Finished"


def test_input_files_that_cannot_be_put_in_place_are_an_environment_error() -> None:
    """A run whose input files do not fit its working folder never starts its program:
    the sandbox could not carry it out (SandboxFusion's `SandboxError`), never a failure
    with the shell's exit status; with room for them the same run succeeds."""
    from codeloop.config import SandboxLimits
    from codeloop.sandbox import RunRequest
    from codeloop.sandbox.pool import run_program
    from codeloop.serve.fusion import response

    big = base64.b64encode(b"x" * (3 << 20)).decode()
    program = "print(len(open('big').read()))"
    for workdir, status in ((1, "SandboxError"), (16, "Success")):
        limits = SandboxLimits(workdir_mib=workdir)
        run = run_program(RunRequest(language="python", program=program, files={"big": big},
                                     limits=limits))  # fmt: skip
        answer = response(run)
        assert answer.status == status, run
    assert run.run is not None and run.run.stdout == f"{3 << 20}\n"


@pytest.mark.parametrize(
    "body",
    [
        {"files": {"../escape.txt": "eA=="}},
        {"files": {"/etc/passwd": "eA=="}},
        {"files": {"/tmp/../etc/passwd": "eA=="}},
        {"files": {"a.txt": "not base64!"}},
        {"fetch_files": ["../../etc/shadow"]},
        {"fetch_files": ["/proc/self/environ"]},
        {"files": {f"f{i}": "eA==" for i in range(65)}},
    ],
)
def test_unsafe_or_malformed_files_are_a_clear_422(client: httpx.Client, body: dict) -> None:
    answer = client.post("/run_code", json={"code": "print(1)", **body})
    assert answer.status_code == 422, answer.text
    assert "file" in answer.json()["detail"]
    empty = run_code(client, code="print(1)", files={}, fetch_files=[])  # verl's shape
    assert empty["status"] == "Success" and empty["files"] == {}


def test_a_sandbox_error_is_sandbox_error_with_its_message() -> None:
    """The null rules of a step the sandbox could not carry out (a toolchain missing, a
    worker dead twice): such runs cannot be made on purpose here, so the mapping is
    checked on the ProgramRun the sandbox hands back for them."""
    broken = ProgramRun(run=Step(status="environment_error", stderr="bubblewrap is missing"))
    found = fusion.response(broken).model_dump(mode="json")
    assert found["status"] == "SandboxError" and found["message"] == "bubblewrap is missing"
    assert found["run_result"] == {
        "status": "Error",
        "execution_time": None,
        "return_code": None,
        "stdout": None,
        "stderr": "bubblewrap is missing",
    }
    timed_out = ProgramRun(compile=Step(status="timeout", wall_ms=2000.0))
    found = fusion.response(timed_out).model_dump(mode="json")
    assert found["status"] == "Failed" and found["run_result"] is None
    assert found["compile_result"]["status"] == "TimeLimitExceeded"
    assert found["compile_result"]["execution_time"] == 2.0


def without_times(found: dict) -> dict:
    for key in ("compile_result", "run_result"):
        if found.get(key):
            found[key] = {k: v for k, v in found[key].items() if k != "execution_time"}
    return found


def test_the_fast_run_code_lane_answers_as_the_fastapi_route(client: httpx.Client) -> None:
    """A well-formed /run_code is answered by `fusion.FastRunCode`, past FastAPI; a
    server with `fast_run_code=False` sends the same bodies through FastAPI's route.
    The answers must be alike but for the run's seconds, and what the lane cannot
    answer is refused by FastAPI as before."""
    assert fusion.FastRunCode in create_app(SETTINGS).layers
    routed = dataclasses.replace(SETTINGS, fast_run_code=False)
    assert fusion.FastRunCode not in create_app(routed).layers
    bodies = [
        {"code": "import sys\nprint(sys.stdin.read()[::-1], 'é')", "stdin": "abc"},
        {"code": "import sys\nprint('out')\nsys.exit(3)", "language": "python3"},
        {"code": "while True: pass", "run_timeout": 0.5},
        {"code": "int main( { return 0; }", "language": "cpp"},
        {"code": "open('o.txt','w').write('x')", "fetch_files": ["o.txt"], "extra": [1]},
    ]
    invalid = {b"{not json": 400, b'{"code": 1}': 422, b'{"code": "1", "language": "cobol"}': 422}
    json_type = {"content-type": "application/json; charset=utf-8"}
    with running(routed) as url, httpx.Client(base_url=url, headers=AUTH, timeout=60) as other:
        for body in bodies:
            fast, slow = (http.post("/run_code", json=body) for http in (client, other))
            assert fast.status_code == slow.status_code == 200, (fast.text, slow.text)
            assert fast.headers["content-type"] == slow.headers["content-type"]
            assert without_times(fast.json()) == without_times(slow.json()), body
            assert fast.json()["run_result"] or fast.json()["compile_result"]
        for data, status in invalid.items():
            fast, slow = (
                http.post("/run_code", content=data, headers=json_type) for http in (client, other)
            )
            assert fast.status_code == slow.status_code == status, fast.text
            assert fast.json() == slow.json() and fast.json()["detail"]
    statuses = [client.post("/run_code", json=body).json()["status"] for body in bodies]
    assert statuses == ["Success", "Failed", "Failed", "Failed", "Success"]


# --- the native /v1/check ---------------------------------------------------------------


def test_v1_check_gives_check_many_s_verdict(client: httpx.Client) -> None:
    cases = [{"input": "2\n", "output": "4\n"}, {"input": "3\n", "output": "6\n"}]
    requests = [
        CheckRequest(language="python", program="print(int(input()) * 2)", cases=cases),
        CheckRequest(language="python", program="print(int(input()) + 2)", cases=cases),
        CheckRequest(language="cpp", program="int main() { return 0 }", cases=cases),
        CheckRequest(
            language="python",
            program="def add(a, b):\n    return a + b\n",
            test="def check(candidate):\n    assert candidate(1, 2) == 3\n\ncheck(add)\n",
            entry_point="add",
        ),
    ]
    direct = check_many(requests)
    for request, expected in zip(requests, direct, strict=True):
        answer = client.post("/v1/check", json=request.model_dump(mode="json"))
        assert answer.status_code == 200, answer.text
        found = answer.json()
        assert found["passed"] == expected.passed
        for key in ("status", "feedback", "cases_passed", "cases_total", "task_error", "backend"):
            assert found[key] == getattr(expected, key), key
    assert [check.status for check in direct] == [
        "passed",
        "wrong_answer",
        "compile_error",
        "passed",
    ]


def test_v1_check_refuses_what_it_cannot_check(client: httpx.Client) -> None:
    nothing = client.post("/v1/check", json={"language": "python", "program": "print(1)"})
    assert nothing.status_code == 422 and "at least one test case" in nothing.json()["detail"]
    slow = {
        "language": "python",
        "program": "print(1)",
        "cases": [{"input": "", "output": "1"}],
        "limits": {"time_s": 3600},
    }
    answer = client.post("/v1/check", json=slow)
    assert answer.status_code == 422 and "limits.time_s" in answer.json()["detail"]


# --- the batch stream, the Python client, CodeReward(url=...) ------------------------------

CASES = [{"input": "2\n", "output": "4\n"}, {"input": "3\n", "output": "6\n"}]


def batch_requests() -> list[CheckRequest]:
    """Passing, failing, not compiling and slow (finishing last) checks, mixed."""
    slow = "import time\ntime.sleep(1.5)\nprint(int(input()) * 2)"
    return [
        CheckRequest(language="python", program=slow, cases=CASES[:1]),
        CheckRequest(language="python", program="print(int(input()) * 2)", cases=CASES),
        CheckRequest(language="python", program="print(int(input()) + 2)", cases=CASES),
        CheckRequest(language="cpp", program="int main() { return 0 }", cases=CASES),
        CheckRequest(language="javascript", program="console.log(4)", cases=CASES),
    ]


def test_v1_check_batch_streams_each_verdict_as_it_finishes(client: httpx.Client) -> None:
    requests = batch_requests()
    body = {"requests": [request.model_dump(mode="json") for request in requests]}
    with client.stream("POST", "/v1/check/batch", json=body) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(raw) for raw in answer.iter_lines() if raw.strip()]
    assert sorted(line["index"] for line in lines) == list(range(len(requests)))
    assert lines[-1]["index"] == 0  # the slow one came last, not in the order asked
    direct = check_many(requests)
    by_index = {line["index"]: line for line in lines}
    for index, expected in enumerate(direct):
        assert by_index[index]["status"] == expected.status, index
        assert by_index[index]["passed"] == expected.passed, index


def test_v1_check_batch_is_refused_whole_before_anything_runs(client: httpx.Client) -> None:
    good = CheckRequest(language="python", program="print(4)", cases=CASES).model_dump(mode="json")
    slow = {**good, "limits": {"time_s": 3600}}
    answer = client.post("/v1/check/batch", json={"requests": [good, slow]})
    assert answer.status_code == 422 and answer.json()["detail"].startswith("requests.1: ")
    assert client.post("/v1/check/batch", json={"requests": []}).status_code == 422
    assert client.post("/v1/check/batch", json={"request": [good]}).status_code == 422


def test_serve_client_gives_check_many_s_verdicts_in_order(base: str) -> None:
    from codeloop.serve.client import ServeClient

    requests = batch_requests()
    with ServeClient(base, TOKEN, batch=2) as remote:  # three batches
        found = remote.check_many(requests)
    assert [c.status for c in found] == [c.status for c in check_many(requests)]
    assert [c.passed for c in found] == [True, True, False, False, False]


def test_serve_client_raises_on_refusals_and_on_no_server(base: str) -> None:
    from codeloop.errors import SandboxEnvironmentError
    from codeloop.serve.client import ServeClient, ServeError

    request = CheckRequest(language="python", program="print(4)", cases=CASES)
    with ServeClient(base, "not-the-token") as wrong, pytest.raises(ServeError, match="401"):
        wrong.check(request)
    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    nobody = ServeClient(closed, TOKEN, retries=1, backoff_s=0.01)
    with pytest.raises(SandboxEnvironmentError, match="no verdict after 2 tries"):
        nobody.check(request)  # never a failed check: no verdict at all


def test_the_attack_suites_forge_nothing_over_http(base: str) -> None:
    """tests/test_function_verdicts.py's Python and JavaScript attacks (wrong answers that
    print the success marker, exit early, neutralise asserts, reach the test, ...) sent
    through /v1/check/batch: none is judged passed, and the canonical solutions of the
    attacked tasks are (all 52 languages' suites: `bench/forgery.py --url`)."""
    from codeloop.data import HUMANEVAL_X
    from codeloop.evaluate import load_humaneval_x
    from codeloop.evaluate.humaneval import humaneval_x_job
    from codeloop.serve.client import ServeClient
    from tests.support.attacks import ATTACKS, JS_ATTACKS

    rows = load_humaneval_x(HUMANEVAL_X, ["python", "javascript"]).rows

    def request(task_id: str, generation: str) -> CheckRequest:
        return humaneval_x_job(rows[task_id], generation).request()

    attacks = [*ATTACKS.values(), *JS_ATTACKS.values()]
    attacked = sorted({task_id for task_id, _body in attacks})
    asked = [request(task_id, body) for task_id, body in attacks]
    asked += [request(task_id, rows[task_id]["canonical_solution"]) for task_id in attacked]
    with ServeClient(base, TOKEN) as remote:
        found = remote.check_many(asked)
    forged = [i for i, check in enumerate(found[: len(attacks)]) if check.passed]
    names = [*ATTACKS, *JS_ATTACKS]
    assert not forged, [names[i] for i in forged]
    assert all(check.passed for check in found[len(attacks) :]), attacked


def test_code_reward_with_a_url_scores_as_the_local_one(base: str) -> None:
    import pickle

    from codeloop.reward import CodeReward

    right = "```python\nprint(int(input()) * 2)\n```"
    wrong = "```python\nprint(4)\n```"
    rows = {"language": ["python"] * 3, "cases": [CASES] * 3}
    completions = [right, wrong, "no code here"]
    local = CodeReward(scoring="fraction")(completions=completions, **rows)
    remote = CodeReward(scoring="fraction", url=base, token=TOKEN)
    assert remote(completions=completions, **rows) == local == [1.0, 0.5, 0.0]
    again = pickle.loads(pickle.dumps(remote))  # shipped to another process: no live client
    assert again(completions=completions, **rows) == local


def test_killed_workers_under_load_lose_no_request_and_give_no_wrong_verdict() -> None:
    """Faults under load: while 16 clients keep 48 checks coming, every sandbox worker
    process is SIGKILLed twice. A check on a killed worker runs again on a fresh one
    (or comes back as an environment error, which the client sends again): every
    answer arrives, each with the verdict its program deserves, and the server serves on."""
    from concurrent.futures import ThreadPoolExecutor

    from codeloop.serve.client import ServeClient

    slow = "import time\ntime.sleep(0.3)\n"
    right = CheckRequest(language="python", program=slow + "print(int(input()) * 2)", cases=CASES)
    wrong = CheckRequest(language="python", program=slow + "print(int(input()) + 2)", cases=CASES)
    requests = [right if i % 3 else wrong for i in range(48)]
    settings = Settings(token=TOKEN, max_in_flight=2, max_waiting=256, queue_timeout_s=120.0)

    with running(settings) as url, ServeClient(url, TOKEN, batch=1, backoff_s=0.2) as remote:
        with ThreadPoolExecutor(16) as clients:
            futures = [clients.submit(remote.check, request) for request in requests]
            killed = 0
            for _ in range(2):
                time.sleep(1.5)
                for pid in worker_pids(os.getpid()):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        killed += 1
            found = [future.result(timeout=300) for future in futures]
        assert killed >= 2, "no worker was killed: the test tested nothing"
        assert [check.status for check in found] == [
            "passed" if request is right else "wrong_answer" for request in requests
        ]
        after = remote.check(right)  # and it still serves
        assert after.passed


@pytest.mark.parametrize("answered", [504, 200])
def test_a_run_whose_worker_keeps_dying_is_a_sandbox_error_the_client_may_retry(
    answered: int,
) -> None:
    """A run whose worker is SIGKILLed, and whose rerun's worker too, is the sandbox's
    failure: `SandboxError`, never `Failed`. By default it is answered HTTP 504 with
    `Retry-After` (verl retries a 504 and scores a 200 `SandboxError` as a failed
    test); `sandbox_error_http=200` answers it as SandboxFusion does. Then it serves on."""
    settings = dataclasses.replace(SETTINGS, workers=1, sandbox_error_http=answered)
    body = {"code": "import time\ntime.sleep(5)\nprint('done')", "run_timeout": 20}
    with running(settings) as url, httpx.Client(base_url=url, headers=AUTH, timeout=120) as http:
        done: dict[str, httpx.Response] = {}
        sent = post_in_thread(url, body, done, headers=AUTH)
        killed = 0
        deadline = time.monotonic() + 90
        while sent.is_alive() and time.monotonic() < deadline:
            for pid in worker_pids(os.getpid()):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
            time.sleep(0.3)
        sent.join(timeout=30)
        answer = done["answer"]
        assert killed >= 2, "no worker was killed: the test tested nothing"
        assert answer.status_code == answered, answer.text
        assert answer.json()["status"] == "SandboxError"
        assert answer.json()["run_result"]["status"] == "Error"
        assert (answer.headers.get("retry-after") == "1") == (answered == 504)
        again = http.post("/run_code", json={"code": "print(6 * 7)"})
        assert again.status_code == 200 and again.json()["run_result"]["stdout"] == "42\n"


@pytest.mark.parametrize("parser", ["httptools", "h11"])
def test_slowloris_headers_are_cut_off_and_others_are_served(parser: str) -> None:
    """Twelve clients that drip their headers a byte at a time, more than the server's
    connection limit (8): each is closed once its header deadline passes, and a normal
    client is served meanwhile (at worst after one deadline), not refused forever. Over
    both of uvicorn's parsers: `codeloop serve` takes httptools where it is installed."""
    settings = dataclasses.replace(SETTINGS, header_timeout_s=1.0)
    with running(settings, limit_concurrency=8, http=parser) as url:
        port = int(url.rsplit(":", 1)[1])
        drips = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(12)]
        try:
            for sock in drips:
                sock.sendall(b"GET /v1/ping HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            closed = set()
            deadline = time.monotonic() + 15
            while len(closed) < len(drips) and time.monotonic() < deadline:
                for index, sock in enumerate(drips):
                    if index in closed:
                        continue
                    try:
                        sock.sendall(b"a")
                        sock.settimeout(0.05)
                        if sock.recv(1) == b"":
                            closed.add(index)
                    except TimeoutError:
                        pass
                    except OSError:
                        closed.add(index)
                time.sleep(0.2)
            assert len(closed) == len(drips), f"{len(drips) - len(closed)} slow clients kept"
            served = httpx.get(f"{url}/v1/ping", timeout=10)
            assert served.status_code == 200 and served.json() == "pong"
        finally:
            for sock in drips:
                sock.close()


def test_ten_thousand_connections_opened_and_dropped_leave_it_serving() -> None:
    with running(SETTINGS, limit_concurrency=64) as url:
        port = int(url.rsplit(":", 1)[1])
        started = time.monotonic()
        for index in range(10_000):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                if index % 2:  # half of them send half a request first
                    sock.sendall(b"POST /run_code HTTP/1.1\r\nHost: x\r\n")
        assert time.monotonic() - started < 120
        # The server may still be closing the last of them (its connection limit answers
        # 503 meanwhile): it must be serving again within seconds, with nothing running.
        wait_for(lambda: httpx.get(f"{url}/health", timeout=10).status_code == 200, 30.0)
        assert httpx.get(f"{url}/health", timeout=10).json()["running"] == 0
        assert httpx.get(f"{url}/v1/ping", timeout=10).json() == "pong"


# --- auth, sizes, bodies ----------------------------------------------------------------


def test_a_missing_or_wrong_token_is_401(base: str) -> None:
    body = {"code": "print(1)"}
    missing = httpx.post(f"{base}/run_code", json=body, timeout=10)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert "bearer token" in missing.json()["detail"]
    wrong = httpx.post(
        f"{base}/run_code", json=body, headers={"Authorization": "Bearer nope"}, timeout=10
    )
    assert wrong.status_code == 401
    assert httpx.get(f"{base}/metrics", timeout=10).status_code == 401
    lower = {"Authorization": f"bearer {TOKEN}"}  # the scheme is case-insensitive
    assert httpx.get(f"{base}/metrics", headers=lower, timeout=10).status_code == 200
    assert httpx.get(f"{base}/health", timeout=10).status_code == 200


def test_oversize_bodies_code_and_stdin_are_413(client: httpx.Client) -> None:
    huge = client.post("/run_code", json={"code": "#" * (300 * 1024)})
    assert huge.status_code == 413 and "at most 262144" in huge.json()["detail"]
    code = client.post("/run_code", json={"code": "#" * (100 * 1024)})
    assert code.status_code == 413 and code.json()["detail"].startswith("the code is")
    stdin = client.post("/run_code", json={"code": "print(1)", "stdin": "1" * (100 * 1024)})
    assert stdin.status_code == 413 and stdin.json()["detail"].startswith("stdin is")
    assert run_code(client, code="print('still serving')")["status"] == "Success"


def test_malformed_json_is_400_and_the_server_keeps_serving(client: httpx.Client) -> None:
    headers = {"Content-Type": "application/json"}
    broken = client.post("/run_code", content=b'{"code": "print(1)",', headers=headers)
    assert broken.status_code == 400 and "not valid JSON" in broken.json()["detail"]
    binary = client.post("/run_code", content=bytes(range(256)) * 8, headers=headers)
    assert 400 <= binary.status_code < 500
    wrong_shape = client.post("/run_code", json=["print(1)"])
    assert wrong_shape.status_code == 422
    no_code = client.post("/run_code", json={"language": "python"})
    assert no_code.status_code == 422 and "code" in no_code.json()["detail"]
    form = client.post(
        "/run_code", content=b"code=print(1)", headers={"Content-Type": "text/plain"}
    )
    assert form.status_code == 415 and "application/json" in form.json()["detail"]
    assert run_code(client, code="print('still serving')")["status"] == "Success"


def test_a_slow_drip_body_is_cut_off_with_408(base: str) -> None:
    port = int(base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(
            b"POST /run_code HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n".encode()
            + b'{"code":'
        )
        started = time.monotonic()
        reply = raw.recv(4096)  # nothing more is sent: the server must give up, not wait
    assert reply.startswith(b"HTTP/1.1 408"), reply[:100]
    assert time.monotonic() - started < 8


# --- the bounded queue ------------------------------------------------------------------


def test_overload_beyond_the_queue_is_504_and_then_served_again() -> None:
    tiny = Settings(token=TOKEN, max_in_flight=1, max_waiting=1, queue_timeout_s=0.5)
    with running(tiny) as url, httpx.Client(base_url=url, headers=AUTH, timeout=60) as http:
        held: dict[str, httpx.Response] = {}
        waited: dict[str, httpx.Response] = {}

        def health() -> dict:
            return http.get("/health").json()

        slow = {"code": "import time\ntime.sleep(2.5)\nprint('held')"}
        holder = post_in_thread(url, slow, held)
        try:
            wait_for(lambda: health()["running"] == 1)
            waiter = post_in_thread(url, {"code": "1"}, waited)
            wait_for(lambda: health()["waiting"] == 1 or "answer" in waited)
            full = http.post("/run_code", json={"code": "print(1)"})  # the queue is full
            waiter.join(timeout=30)
        finally:
            holder.join(timeout=60)
        assert full.status_code == 504 and "busy" in full.json()["detail"]
        assert full.headers["retry-after"] == "1"
        timed_out = waited["answer"]  # waited 0.5 s for the slot, then gave up
        assert timed_out.status_code == 504 and "within 0.5 s" in timed_out.json()["detail"]
        answer = held["answer"].json()
        assert answer["status"] == "Success" and answer["run_result"]["stdout"] == "held\n"
        # the time of the run, not of the queue
        assert 2.4 <= answer["run_result"]["execution_time"] < 10
        assert run_code(http, code="print('served again')")["status"] == "Success"
        metrics = http.get("/metrics").text
        assert 'codeloop_serve_requests_total{endpoint="/run_code",code="504"} 2' in metrics


# --- metrics and logs -------------------------------------------------------------------


def counter(text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{key}="{value}"' for key, value in labels.items())
    found = re.search(rf"^{re.escape(name)}{{{re.escape(wanted)}}} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def test_metrics_count_requests_verdicts_and_latency(client: httpx.Client) -> None:
    before = client.get("/metrics").text
    run_code(client, code="print(1)")
    run_code(client, code="raise SystemExit(2)")
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    after = response.text
    requests = "codeloop_serve_requests_total"
    labels = {"endpoint": "/run_code", "code": "200"}
    assert counter(after, requests, **labels) - counter(before, requests, **labels) == 2
    verdicts = "codeloop_serve_verdicts_total"
    for status in ("Success", "Failed"):
        labels = {"endpoint": "/run_code", "status": status}
        assert counter(after, verdicts, **labels) - counter(before, verdicts, **labels) == 1
    histogram = "codeloop_serve_request_seconds_count"
    labels = {"endpoint": "/run_code"}
    assert counter(after, histogram, **labels) - counter(before, histogram, **labels) == 2
    assert 'codeloop_serve_request_seconds_bucket{endpoint="/run_code",le="+Inf"}' in after
    for gauge in ("codeloop_serve_queue_depth", "codeloop_serve_in_flight"):
        assert re.search(rf"^{gauge} \d", after, re.M), gauge
    assert "# TYPE codeloop_serve_environment_errors_total counter" in after


def test_each_request_logs_one_json_line(
    client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="codeloop.serve.access")
    answer = client.post("/run_code", json={"code": "print(1)", "language": "python"})
    identity = answer.headers["x-request-id"]

    def logged() -> list[dict]:
        lines = [json.loads(r.getMessage()) for r in caplog.records if r.name.endswith("access")]
        return [item for item in lines if item["id"] == identity]

    # The line is written when the server's handler returns, which may be just after
    # the client has the answer.
    wait_for(lambda: bool(logged()), 10.0)
    [line] = logged()
    assert line["event"] == "request" and line["path"] == "/run_code"
    assert line["status"] == 200 and line["outcome"] == "Success"
    assert line["language"] == "python" and line["ms"] >= 0 and "queue_ms" in line


# --- the command: tokens, and a drain on SIGTERM ----------------------------------------


def test_a_token_is_required_unless_loopback_and_no_auth(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs a bearer token"):
        resolve_token("127.0.0.1", None, False, {})
    with pytest.raises(ConfigError, match="loopback"):
        resolve_token("0.0.0.0", None, True, {})
    with pytest.raises(ConfigError, match="at least 16"):
        resolve_token("0.0.0.0", None, False, {"CODELOOP_SERVE_TOKEN": "short"})
    assert resolve_token("127.0.0.1", None, True, {}) is None
    assert resolve_token("::1", None, True, {}) is None
    assert resolve_token("0.0.0.0", None, False, {"CODELOOP_SERVE_TOKEN": TOKEN}) == TOKEN
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    assert resolve_token("10.0.0.1", token_file, False, {}) == TOKEN
    with pytest.raises(ConfigError, match="--no-auth and a token"):
        resolve_token("127.0.0.1", token_file, True, {})
    environ = {key: value for key, value in os.environ.items() if key != "CODELOOP_SERVE_TOKEN"}
    refused = subprocess.run(
        [sys.executable, "-m", "codeloop", "serve", "--host", "0.0.0.0", "--no-auth"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environ,
    )
    assert refused.returncode == 1 and "loopback" in refused.stderr


def test_sigterm_lets_the_running_request_finish() -> None:
    environ = {key: value for key, value in os.environ.items() if key != "CODELOOP_SERVE_TOKEN"}
    command = [sys.executable, "-m", "codeloop", "serve", "--port", "0", "--no-auth"]
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=environ
    )
    lines: list[str] = []
    try:
        assert process.stderr is not None
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            assert line, f"the server exited: {lines}"
            lines.append(line)
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            url = found.group(1) if found else None
        assert url is not None
        reader = threading.Thread(target=lambda: lines.extend(process.stderr))  # type: ignore[arg-type]
        reader.start()
        with httpx.Client(base_url=url, timeout=60) as http:
            wait_for(lambda: b"pong" in http.get("/v1/ping").content, 30)
            done: dict[str, httpx.Response] = {}
            code = "import time\ntime.sleep(2)\nprint('finished after SIGTERM')"
            slow = post_in_thread(url, {"code": code}, done, headers={})
            wait_for(lambda: http.get("/health").json()["running"] == 1, 30)
            process.send_signal(signal.SIGTERM)
            slow.join(timeout=60)
        answer = done["answer"]
        assert answer.status_code == 200
        assert answer.json()["run_result"]["stdout"] == "finished after SIGTERM\n"
        # uvicorn ends the process by the signal it drained for, once drained
        assert process.wait(timeout=60) in (0, -signal.SIGTERM)
        reader.join(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    records = [json.loads(line) for line in lines if line.strip()]  # every line is JSON
    assert any(record.get("message") == "drained: no request in the sandbox" for record in records)
    stack = f"HTTP parser {parser()}, event loop {event_loop()}"  # what `auto` took here
    assert any(record.get("message") == stack for record in records)
    assert any(record.get("path") == "/run_code" and record["status"] == 200 for record in records)
