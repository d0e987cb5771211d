"""Sandbox checks and generation fanned out over a Ray cluster the test starts on loopback.

The cluster is a real `ray start --head` with 2 CPUs (so 2 worker processes run
chunks at once); every chunk is checked by the node's own bwrap sandbox, and the
engine actors hold a tiny random Llama built here.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from codeloop.sandbox import CheckRequest, pool

pytestmark = pytest.mark.timeout(600)

RAY = str(Path(sys.executable).with_name("ray"))
ADD = [{"input": "2 3\n", "output": "5\n"}]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    import ray

    temp = tmp_path_factory.mktemp("ray")
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run(
        [
            RAY, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
            "--num-cpus", "2", "--object-store-memory", str(100 * 1024 * 1024),
            "--include-dashboard", "false", "--temp-dir", str(temp), "--disable-usage-stats",
        ],
        check=True, capture_output=True, text=True, env=env, timeout=180,
    )  # fmt: skip
    address = f"127.0.0.1:{port}"
    try:
        yield address
    finally:
        pool.use_cluster(None)
        ray.shutdown()
        subprocess.run([RAY, "stop", "--force"], capture_output=True, timeout=120, env=env)


def requests() -> list[CheckRequest]:
    return [
        CheckRequest(language="python", program="a, b = map(int, input().split())\nprint(a + b)\n", cases=ADD),
        CheckRequest(language="python", program="print(4)\n", cases=ADD),
        CheckRequest(language="c", program='#include <stdio.h>\nint main(){int a,b;scanf("%d %d",&a,&b);printf("%d\\n",a+b);}\n', cases=ADD),
        CheckRequest(language="python", program="raise SystemExit(3)\n", cases=ADD),
        CheckRequest(language="javascript", program="console.log(5)\n", cases=ADD),
        CheckRequest(language="python", program="print(", cases=ADD),
    ]  # fmt: skip


def test_cluster_verdicts_are_the_local_pools(cluster: str) -> None:
    local = pool.check_many(requests(), workers=2)
    pool.use_cluster(cluster, chunk=2)
    try:
        remote = pool.check_many(requests(), workers=2)
    finally:
        pool.use_cluster(None)
    assert [c.status for c in remote] == [c.status for c in local]
    assert [c.status for c in local] == [
        "passed", "wrong_answer", "passed", "runtime_error", "passed", "compile_error",
    ]  # fmt: skip
    assert all(c.backend == "bwrap" for c in remote)


def _chunk_workers() -> list[int]:
    """Pids of Ray worker processes executing a chunk right now (Ray titles them)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if title.startswith(b"ray::_check_chunk"):
            found.append(int(entry.name))
    return found


def test_a_worker_killed_mid_batch_loses_no_check_and_counts_none_twice(cluster: str) -> None:
    import threading

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


def test_engine_actors_answer_as_one_engine_greedy_seeded_and_with_an_adapter(
    cluster: str, tmp_path: Path
) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from codeloop.config import EngineConfig
    from codeloop.engines import create
    from codeloop.engines.ray_pool import RayEngine
    from tests.loop_fixtures import tiny_model

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
    remote = RayEngine(config, address=cluster, replicas=2)
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
