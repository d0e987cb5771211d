"""Sandbox checks and generation fanned out over a Ray cluster the test starts on loopback.

The cluster is a real `ray start --head` with 2 CPUs (so 2 worker processes run
chunks at once), bound to 127.0.0.1 and started with Ray's token authentication
(RAY_AUTH_MODE=token, a fresh RAY_AUTH_TOKEN; Ray 2.52 and later); every chunk is
checked by the node's own bwrap sandbox, and the engine actors hold a tiny random
Llama built here. Only the processes this test started are stopped at the end
(never `ray stop`, which stops every Ray cluster on the machine).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from codeloop.sandbox import CheckRequest, dispatch, pool

pytestmark = pytest.mark.timeout(600)

RAY = str(Path(sys.executable).with_name("ray"))
ADD = [{"input": "2 3\n", "output": "5\n"}]
LOOPBACK = {
    "RAY_AUTH_MODE": "token",
    # Ray on Linux swaps a loopback node address for the machine's network address
    # (and its servers then listen on every interface) unless this is 0; every process
    # of a loopback cluster, the driver too, needs it.
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _parents() -> dict[int, int]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = int(
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
                )
            except (OSError, IndexError, ValueError):
                continue
    return found


def _cluster_processes(group: int) -> set[int]:
    """The processes of the cluster `ray start` started in its own process group, and theirs."""
    parents = _parents()
    found = {pid for pid in parents if _group_of(pid) == group}
    while True:  # Ray workers set up process groups of their own: follow the parents
        more = {pid for pid, parent in parents.items() if parent in found} - found
        if not more:
            return found
        found |= more


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _stop(group: int) -> None:
    processes = _cluster_processes(group)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in processes:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in processes):
            time.sleep(0.2)


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    """(address, process group of the cluster's processes, the Ray settings it runs with)."""
    temp = tmp_path_factory.mktemp("ray")
    port = _free_port()
    secret = {**LOOPBACK, "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env = {**os.environ, **secret}
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in secret.items():  # this process is the driver: same token
            patch.setenv(name, value)
        patch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
        import ray
        import ray._private.ray_constants as constants

        # read when Ray was imported: in case some other test imported it first
        patch.setattr(constants, "ENABLE_RAY_CLUSTER", False, raising=False)
        # Ray's config (the auth mode) and its token are read once per process and kept:
        # a test that imported Ray earlier (verl's reward client does) left them at
        # "disabled" and no token, and the GCS then refused this driver (CI, stop 70).
        _reread_ray_auth()
        start = subprocess.Popen(
            [
                RAY, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
                "--ray-client-server-port", str(_free_port()),
                "--num-cpus", "2", "--object-store-memory", str(100 * 1024 * 1024),
                "--include-dashboard", "false", "--temp-dir", str(temp), "--disable-usage-stats",
            ],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            start_new_session=True,
        )  # fmt: skip
        try:
            output, _ = start.communicate(timeout=180)
            assert start.returncode == 0, output
            yield f"127.0.0.1:{port}", start.pid, secret
        finally:
            dispatch.use_cluster(None)
            ray.shutdown()
            _stop(start.pid)
    _reread_ray_auth()  # the environment is back: so are the auth settings


def _reread_ray_auth() -> None:
    """Make Ray read RAY_AUTH_MODE and the token from the environment again (Ray's own
    tests' helper; a Ray without token authentication has neither to re-read)."""
    try:
        from ray._private.authentication_test_utils import reset_auth_token_state
    except ImportError:
        return
    reset_auth_token_state()


@pytest.fixture(scope="module")
def cluster(head) -> str:
    return head[0]


def requests() -> list[CheckRequest]:
    return [
        CheckRequest(language="python", program="a, b = map(int, input().split())\nprint(a + b)\n", cases=ADD),
        CheckRequest(language="python", program="print(4)\n", cases=ADD),
        CheckRequest(language="c", program='#include <stdio.h>\nint main(){int a,b;scanf("%d %d",&a,&b);printf("%d\\n",a+b);}\n', cases=ADD),
        CheckRequest(language="python", program="raise SystemExit(3)\n", cases=ADD),
        CheckRequest(language="javascript", program="console.log(5)\n", cases=ADD),
        CheckRequest(language="python", program="print(", cases=ADD),
    ]  # fmt: skip


def _ray_nodes() -> set[str]:
    import ray

    return {node["NodeID"] for node in ray.nodes() if node["Alive"]}


def _ran_on_ray(backend: str) -> bool:
    """Whether a check's `backend` says a node of this cluster gave it (not the local pool)."""
    where = re.fullmatch(r"ray:bwrap@(?P<host>[^/]+)/(?P<node>[0-9a-f]{12})", backend)
    return (
        where is not None
        and where["host"] == socket.gethostname()
        and where["node"] in {node[:12] for node in _ray_nodes()}
    )


def test_cluster_verdicts_are_the_local_pools(cluster: str) -> None:
    local = pool.check_many(requests(), workers=2)
    dispatch.use_cluster(cluster, chunk=2)
    try:
        remote = dispatch.check_many(requests(), workers=2)
    finally:
        dispatch.use_cluster(None)
    assert [c.status for c in remote] == [c.status for c in local]
    assert [c.status for c in local] == [
        "passed", "wrong_answer", "passed", "runtime_error", "passed", "compile_error",
    ]  # fmt: skip
    assert all(c.backend == "bwrap" for c in local)
    # every chunk ran in a Ray task, which recorded its node: not in this process's pool
    assert all(_ran_on_ray(c.backend) for c in remote), [c.backend for c in remote]


def _listening(pids: set[int]) -> set[tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]]:
    """(address, port) of every TCP socket these processes listen on."""
    inodes = set()
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            address, port = fields[1].split(":")
            raw = b"".join(
                bytes.fromhex(address[i : i + 8])[::-1] for i in range(0, len(address), 8)
            )
            found.add((ipaddress.ip_address(raw), int(port, 16)))
    return found


def _loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _connects(address: str, env: dict[str, str]) -> str:
    """What a fresh Ray client prints trying to join: until it connects or is refused."""
    probe = f"import ray; ray.init(address={address!r}, log_to_driver=False); print('CONNECTED')"
    client = subprocess.Popen(
        [sys.executable, "-c", probe],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    timer = threading.Timer(90, client.kill)  # Ray retries a refused client for about 20 s
    timer.start()
    seen = []
    try:
        assert client.stdout is not None
        for line in client.stdout:
            seen.append(line)
            if "CONNECTED" in line or "InvalidAuthToken" in line:
                break
    finally:
        timer.cancel()
        client.kill()
        client.wait()
    return "".join(seen)


def test_the_cluster_listens_on_loopback_only_and_refuses_a_client_without_its_token(
    head: tuple[str, int, dict[str, str]],
) -> None:
    address, group, secret = head
    listening = _listening(_cluster_processes(group))
    assert int(address.rsplit(":", 1)[1]) in {port for _, port in listening}, listening
    assert all(_loopback(ip) for ip, _ in listening), sorted(map(str, listening))

    plain = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    plain.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0")
    clients = {
        "no token": {**plain, "RAY_AUTH_MODE": "disabled"},
        "wrong token": {**plain, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 64},
        "the token": {**plain, **secret},
    }
    with ThreadPoolExecutor(len(clients)) as workers:
        said = dict(
            zip(
                clients,
                workers.map(lambda env: _connects(address, env), clients.values()),
                strict=True,
            )
        )
    assert "CONNECTED" in said["the token"], said["the token"]
    for stranger in ("no token", "wrong token"):
        assert "InvalidAuthToken" in said[stranger] and "CONNECTED" not in said[stranger], said


def _chunk_workers(*titles: bytes) -> list[int]:
    """Pids of Ray worker processes executing a chunk (or one of the tasks `titles`)
    right now: Ray titles them."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if title.startswith(titles or (b"ray::_check_chunk",)):
            found.append(int(entry.name))
    return found


def test_a_worker_killed_mid_batch_loses_no_check_and_counts_none_twice(cluster: str) -> None:
    from codeloop.sandbox import cluster as ray_cluster

    slow = "import time\ntime.sleep(1.5)\na, b = map(int, input().split())\nprint(a + b)\n"
    batch = [CheckRequest(language="python", program=slow, cases=ADD) for _ in range(6)]
    done: Counter[int] = Counter()
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            for pid in _chunk_workers():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break
            time.sleep(0.05)

    thread = threading.Thread(target=killer)
    thread.start()
    results = ray_cluster.check_many(
        batch,
        address=cluster,
        backend="bwrap",
        chunk=1,
        in_flight=2,
        on_done=lambda index, _check: done.update([index]),
    )
    thread.join()
    assert killed, "no chunk worker was seen to kill"
    assert [c.status for c in results] == ["passed"] * 6
    assert done == Counter(range(6))


def test_a_stop_request_starts_no_new_chunk(cluster: str) -> None:
    from codeloop.sandbox import cluster as ray_cluster

    asked: list[int] = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 2  # two chunks start, then stop

    with pytest.raises(pool.Interrupted) as stopped:
        ray_cluster.check_many(
            requests(), address=cluster, backend="bwrap", chunk=1, in_flight=1, stop=stop
        )
    assert sorted(stopped.value.done) == [0, 1]


def test_a_node_answering_a_chunk_wrongly_fails_only_that_chunk_and_never_as_a_wrong_answer(
    cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codeloop.sandbox import cluster as ray_cluster

    honest = ray_cluster._check_chunk

    def broken_node(mode: str):
        def broken(payload: list[dict], backend: str) -> str:
            """A node with a broken install: a verdict short, or a crash, on one chunk."""
            answer = honest(payload, backend)
            if any(item["program"] == "print(4)\n" for item in payload):  # requests 0 and 1
                if mode == "crash":
                    raise RuntimeError("codeloop is broken on this node")
                data = json.loads(answer)
                data["checks"].pop()
                answer = json.dumps(data)
            return answer

        return broken

    expected = ["passed", "wrong_answer", "passed", "runtime_error", "passed", "compile_error"]
    for mode, why in (("drop", "1 checks for 2 programs"), ("crash", "codeloop is broken")):
        monkeypatch.setattr(ray_cluster, "_check_chunk", broken_node(mode))
        done: Counter[int] = Counter()
        results = ray_cluster.check_many(
            requests(), address=cluster, backend="bwrap", chunk=2, rerun_locally=False,
            on_done=lambda index, _check, done=done: done.update([index]),
        )  # fmt: skip
        assert [c.status for c in results] == ["environment_error"] * 2 + expected[2:], mode
        for check in results[:2]:
            assert why in check.feedback and not check.task_error, check.feedback
        if mode == "drop":  # the node that answered is named
            assert "Ray node" in results[0].feedback and socket.gethostname() in results[0].feedback
        assert all(_ran_on_ray(c.backend) for c in results[2:])
        assert done == Counter(range(6))

    # rerun once in the local pool: every verdict right, the rerun chunk's marked local
    monkeypatch.setattr(ray_cluster, "_check_chunk", broken_node("drop"))
    results = ray_cluster.check_many(requests(), address=cluster, backend="bwrap", chunk=2)
    assert [c.status for c in results] == expected
    assert [c.backend for c in results[:2]] == ["bwrap", "bwrap"]
    assert all(_ran_on_ray(c.backend) for c in results[2:])


def test_serve_on_the_cluster_gives_the_local_pools_answers(cluster: str) -> None:
    """`codeloop serve --cluster`: every request a Ray task on a node, the same verdicts
    and runs as the local pool, marked with the node that gave them."""
    pytest.importorskip("fastapi")
    import httpx

    from codeloop.serve.limits import Settings
    from tests.support.serve import running

    local = pool.check_many(requests(), backend="bwrap")
    with (
        running(Settings(cluster=cluster, max_in_flight=2)) as base,
        httpx.Client(base_url=base, timeout=120) as http,
    ):
        assert http.get("/health").json()["cluster"] == cluster
        for wanted, mine in zip(requests(), local, strict=True):
            found = http.post("/v1/check", json=wanted.model_dump(mode="json")).json()
            assert found["status"] == mine.status, found
            assert _ran_on_ray(found["backend"]), found["backend"]
        ran = http.post("/run_code", json={"code": "print(input()[::-1])", "stdin": "abc"})
        assert ran.json()["status"] == "Success", ran.text
        assert ran.json()["run_result"]["stdout"] == "cba\n"
        c = '#include <stdio.h>\nint main(){puts("c on a node");return 2;}\n'
        ran = http.post("/run_code", json={"code": c, "language": "c"}).json()
        assert ran["status"] == "Failed" and ran["run_result"]["return_code"] == 2
        assert ran["run_result"]["stdout"] == "c on a node\n"


SLOW = "import time\ntime.sleep(1)\na, b = map(int, input().split())\nprint(a + b)\n"


def _slow_request(http: Any, index: int) -> tuple[int, str]:
    """One slow request to a server on the cluster, `/v1/check` for odd `index`es and
    `/run_code` for even ones: its HTTP status and outcome."""
    if index % 2:
        body = {"language": "python", "program": SLOW, "cases": ADD}
        found = http.post("/v1/check", json=body)
        return found.status_code, found.json()["status"]
    found = http.post("/run_code", json={"code": SLOW, "stdin": "2 3\n"})
    answer = found.json()
    return found.status_code, answer["status"] + ":" + answer["run_result"]["stdout"]


def _slow_requests_while(
    http: Any, count: int, killer: Any, finished: threading.Event
) -> list[tuple[int, str]]:
    """`count` slow requests from 4 threads while `killer` runs in a thread of its own;
    `finished` is set (and the killer waited for) when they are answered."""
    thread = threading.Thread(target=killer)
    thread.start()
    try:
        with ThreadPoolExecutor(4) as threads:
            return list(threads.map(lambda i: _slow_request(http, i), range(count)))
    finally:
        finished.set()
        thread.join()


def test_serve_on_the_cluster_loses_nothing_when_ray_workers_die_under_load(
    cluster: str,
) -> None:
    """Ray workers running requests are killed mid-load: Ray retries each on another
    worker, and every request still gets its one right answer; none is an error."""
    pytest.importorskip("fastapi")
    import httpx

    from codeloop.serve.limits import Settings
    from tests.support.serve import running

    killed: list[int] = []
    finished = threading.Event()

    def killer() -> None:
        while not finished.is_set() and len(killed) < 3:
            for pid in _chunk_workers(b"ray::_run_on_node", b"ray::_check_chunk"):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                time.sleep(1.5)  # one at a time, so retries get through
                break
            time.sleep(0.05)

    with (
        running(Settings(cluster=cluster, max_in_flight=2)) as base,
        httpx.Client(base_url=base, timeout=300) as http,
    ):
        answers = _slow_requests_while(http, 12, killer, finished)
    assert killed, "no Ray worker was seen to kill"
    assert answers == [(200, "Success:5\n"), (200, "passed")] * 6, answers


@contextlib.contextmanager
def _second_node(address: str, secret: dict[str, str], temp: Path) -> Iterator[int]:
    """A second Ray node (2 CPUs, on loopback) joined to the head at `address`, started
    in a process group of its own; yields that group, and stops what is left of it."""
    env = {**os.environ, **secret}
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    # `ray start` refuses a worker node while RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER is 0,
    # which every process of a loopback cluster needs (LOOPBACK). Only that check is
    # lifted, in the CLI's own view of Ray's constants: the rest of Ray (which would
    # swap 127.0.0.1 for the machine's address) and the node's processes keep it 0.
    lifted = (
        "import sys, types\n"
        "import ray._private.ray_constants as constants\n"
        "import ray.scripts.scripts as scripts\n"
        "class View(types.ModuleType):\n"
        "    def __getattr__(self, name):\n"
        "        return getattr(constants, name)\n"
        "view = View('ray_constants')\n"
        "view.ENABLE_RAY_CLUSTER = True\n"
        "scripts.ray_constants = view\n"
        "sys.argv[0] = 'ray'\n"
        "scripts.main()\n"
    )
    start = subprocess.Popen(
        [
            sys.executable, "-c", lifted, "start", "--address", address, "--node-ip-address", "127.0.0.1",
            "--num-cpus", "2", "--object-store-memory", str(100 * 1024 * 1024),
            "--temp-dir", str(temp), "--disable-usage-stats",
        ],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True,
    )  # fmt: skip
    try:
        output, _ = start.communicate(timeout=180)
        assert start.returncode == 0, output
        listening = _listening(_cluster_processes(start.pid))
        assert listening and all(_loopback(ip) for ip, _ in listening), sorted(map(str, listening))
        yield start.pid
    finally:
        _stop(start.pid)


def _running_tasks(pids: set[int]) -> list[int]:
    """Those of `pids` that are Ray workers running a program or a chunk right now."""
    return [
        pid for pid in _chunk_workers(b"ray::_run_on_node", b"ray::_check_chunk") if pid in pids
    ]


def test_serve_on_the_cluster_loses_nothing_when_a_node_dies_under_load(
    head: tuple[str, int, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A second node joins; while it runs requests of `codeloop serve --cluster`, the
    whole node (its raylet, object store and workers) is SIGKILLed. Every request still
    gets its one right answer: Ray runs the lost tasks again elsewhere, or the server's
    own pool does (`cluster.run_program`'s local rerun); none is wrong, none is an
    error scored on the program, and the server keeps serving on the head alone."""
    pytest.importorskip("fastapi")
    import httpx

    from codeloop.sandbox.cluster import connect_ray
    from codeloop.serve.limits import Settings
    from tests.support.serve import running

    address, _group, secret = head
    ray = connect_ray(address)
    before = _ray_nodes()
    killed: list[int] = []
    finished = threading.Event()

    with _second_node(address, secret, tmp_path_factory.mktemp("node")) as node:
        deadline = time.monotonic() + 60
        while len(_ray_nodes() - before) < 1:
            assert time.monotonic() < deadline, "the second node did not join in 60 s"
            time.sleep(0.5)
        [second] = _ray_nodes() - before

        def killer() -> None:  # the whole node, once it runs a request
            while not finished.is_set():
                processes = _cluster_processes(node)
                if _running_tasks(processes):
                    for pid in processes:
                        with contextlib.suppress(OSError):
                            os.kill(pid, signal.SIGKILL)
                    killed.extend(processes)
                    return
                time.sleep(0.05)

        with (
            running(Settings(cluster=address, max_in_flight=4)) as base,
            httpx.Client(base_url=base, timeout=300) as http,
        ):
            answers = _slow_requests_while(http, 16, killer, finished)
            assert killed, "the second node ran no request"
            assert answers == [(200, "Success:5\n"), (200, "passed")] * 8, answers
            deadline = time.monotonic() + 120
            while second in _ray_nodes():
                assert time.monotonic() < deadline, "Ray did not see the node die in 120 s"
                time.sleep(0.5)
            after = [_slow_request(http, i) for i in range(2)]  # served on the head alone
            assert after == [(200, "Success:5\n"), (200, "passed")], after
    assert ray.is_initialized()


def test_accept_takes_exactly_one_verdict_per_program_as_plain_data() -> None:
    from codeloop.sandbox.check import Check
    from codeloop.sandbox.cluster import ChunkRejected, accept

    node = "5f5c94bf0211f726c6214399e822c9d25d33d0f18ad64bb31b9d42b9"
    verdict = Check(status="passed", cases_passed=1, cases_total=1, backend="bwrap")

    def answer(checks: object, **where: object) -> str:
        return json.dumps({"node": node, "host": "worker-1", **where, "checks": checks})

    good = [verdict.model_dump(mode="json")] * 2
    [first, second] = accept(answer(good), 2, "bwrap")
    assert first == second and first.status == "passed"
    assert first.backend == f"ray:bwrap@worker-1/{node[:12]}"
    refused = {
        "a pickled object": verdict,
        "a list": good,
        "not JSON": "passed",
        "one short": answer(good[:1]),
        "one too many": answer(good * 2),
        "no checks": answer(None),
        "a string verdict": answer(["passed", "passed"]),
        "an unknown status": answer([{**good[0], "status": "accepted"}] * 2),
        "a missing status": answer([{"feedback": ""}] * 2),
        "another sandbox": answer([{**good[0], "backend": "process"}] * 2),
        "no node id": answer(good, node=None),
        "a forged host": answer(good, host="a b/c"),
    }
    for what, payload in refused.items():
        with pytest.raises(ChunkRejected):
            accept(payload, 2, "bwrap")
            pytest.fail(f"accepted {what}")
    with pytest.raises(ChunkRejected, match=r"Ray node 5f5c94bf0211 \(worker-1\).*1 checks for 2"):
        accept(answer(good[:1]), 2, "bwrap")


def test_accept_run_takes_one_program_run_as_plain_data() -> None:
    from codeloop.sandbox.cluster import ChunkRejected, accept_run
    from codeloop.sandbox.request import ProgramRun, Step

    node = "5f5c94bf0211f726c6214399e822c9d25d33d0f18ad64bb31b9d42b9"
    run = ProgramRun(run=Step(status="finished", exit_code=0, stdout="hi\n"), backend="bwrap")

    def answer(run: object, **where: object) -> str:
        return json.dumps({"node": node, "host": "worker-1", **where, "run": run})

    good = run.model_dump(mode="json")
    found = accept_run(answer(good), "bwrap")
    assert found.run == run.run and found.backend == f"ray:bwrap@worker-1/{node[:12]}"
    for what, payload in {
        "a pickled object": run,
        "not JSON": "ok",
        "no run": answer(None),
        "an unknown step status": answer({**good, "run": {"status": "accepted"}}),
        "another sandbox": answer({**good, "backend": "process"}),
        "no node id": answer(good, node=None),
    }.items():
        with pytest.raises(ChunkRejected):
            accept_run(payload, "bwrap")
            pytest.fail(f"accepted {what}")


def test_engine_actors_answer_as_one_engine_greedy_seeded_and_with_an_adapter(
    cluster: str, tmp_path: Path
) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from codeloop.config import EngineConfig
    from codeloop.engines import create
    from codeloop.engines.ray_pool import RayEngine
    from tests.support.loop_fixtures import tiny_model

    model = tiny_model(tmp_path / "model")
    adapter = tmp_path / "adapter"
    lora = get_peft_model(
        AutoModelForCausalLM.from_pretrained(model),
        LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False),
    )
    lora.save_pretrained(adapter)
    config = EngineConfig(kind="hf", model=str(model), batch_size=2, max_tokens=12)
    conversations = [[{"role": "user", "content": f"Print {i} in Python."}] for i in range(5)]
    local = create(config)
    remote = RayEngine(config, address=cluster, replicas=2, make=create)
    try:
        for engine in (local, remote):
            engine.load_adapter(None)
        for options in ({"temperature": 0.0}, {"temperature": 0.9, "seed": list(range(5)), "n": 2}):
            mine = local.generate(conversations, max_tokens=12, **options)
            theirs = remote.generate(conversations, max_tokens=12, **options)
            assert [[c.text for c in g] for g in theirs] == [[c.text for c in g] for g in mine]
        # a seeded sample does not depend on which actor drew it: reversed order, same texts
        reordered = remote.generate(
            conversations[::-1], max_tokens=12, temperature=0.9, seed=list(range(5))[::-1]
        )
        forward = remote.generate(
            conversations, max_tokens=12, temperature=0.9, seed=list(range(5))
        )
        assert [g[0].text for g in reordered][::-1] == [g[0].text for g in forward]
        base = [g[0].text for g in remote.generate(conversations, max_tokens=12)]
        local.load_adapter(adapter)
        remote.load_adapter(adapter)
        assert remote.adapter_hash == local.adapter_hash
        adapted = [g[0].text for g in remote.generate(conversations, max_tokens=12)]
        assert adapted == [g[0].text for g in local.generate(conversations, max_tokens=12)]
        assert adapted != base
        assert remote.info()["replicas"] == 2
    finally:
        local.close()
        remote.close()
