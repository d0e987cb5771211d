"""Sandbox throughput on Ray against the local pool, in one run on this machine.

Starts a Ray head on loopback with 2 CPUs (so up to 2 worker processes take
chunks), then checks the same batch of Python and C programs (each against 3 stdio
cases) with: the local pool at 1 and 2 workers, and the Ray backend with 1 and 2
chunks in flight. Reports checks/s and the overhead per check of Ray over the
local pool with as many workers. Verdicts must be identical everywhere. On one
2-core machine this measures Ray's cost, not a gain: a gain needs more machines.

    .venv/bin/python -m bench.experiments.scale [--programs 48] [--chunk 8]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.results import record
from codeloop.sandbox import CheckRequest, check_many, cluster

CASES = [{"input": f"{i} {i + 1}\n", "output": f"{2 * i + 1}\n"} for i in range(3)]
PROGRAMS = {
    "python": "a, b = map(int, input().split())\nprint(a + b)\n# {tag}\n",
    "c": '#include <stdio.h>\nint main(){{int a,b;scanf("%d %d",&a,&b);printf("%d\\n",a+b);}}\n'
    "// {tag}\n",
}


def batch(count: int) -> list[CheckRequest]:
    languages = list(PROGRAMS)
    return [
        CheckRequest(
            language=languages[i % len(languages)],
            program=PROGRAMS[languages[i % len(languages)]].format(tag=uuid.uuid4().hex),
            cases=CASES,
        )
        for i in range(count)
    ]


def stop_cluster(temp: str) -> None:
    """Kill the processes whose command line names this bench's Ray temp folder, and the
    processes they started (Ray's agents rename themselves "ray::...")."""
    found = set()
    for _round in range(2):
        out = subprocess.run(["pgrep", "-f", temp], capture_output=True, text=True).stdout
        found |= {int(pid) for pid in out.split()}
        for pid in list(found):
            children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
            found |= {int(child) for child in children.stdout.split()}
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=48)
    parser.add_argument("--chunk", type=int, default=8)
    args = parser.parse_args()
    ray_cli = str(Path(sys.executable).with_name("ray"))
    # Token auth and loopback only, as the README's commands (see sandbox/cluster.py); the
    # driver (this process) needs the same settings to connect.
    cluster_env = {
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    }
    os.environ.update(cluster_env)
    env = {**os.environ, **cluster_env}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    temp = tempfile.mkdtemp(prefix="codeloop-ray-")
    started = time.perf_counter()
    # Stopped at the end by `stop_cluster` (`ray stop` would stop every Ray on the machine).
    subprocess.run(
        [
            ray_cli, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
            "--num-cpus", "2", "--object-store-memory", str(100 * 1024 * 1024),
            "--include-dashboard", "false", "--temp-dir", temp, "--disable-usage-stats",
        ],
        check=True, capture_output=True, env=env,
    )  # fmt: skip
    startup = time.perf_counter() - started
    address = f"127.0.0.1:{port}"
    rows, statuses = [], {}
    try:
        # warm-up: compile caches, worker processes, Ray workers
        check_many(batch(4), workers=2)
        cluster.check_many(batch(4), address=address, backend="bwrap", chunk=2)
        runs = [("local pool", 1), ("local pool", 2), ("ray", 1), ("ray", 2)]
        timings = {}
        for name, width in runs:
            requests = batch(args.programs)
            begin = time.perf_counter()
            if name == "ray":
                checks = cluster.check_many(
                    requests, address=address, backend="bwrap", chunk=args.chunk, in_flight=width
                )
            else:
                checks = check_many(requests, workers=width)
            seconds = time.perf_counter() - begin
            timings[(name, width)] = seconds
            statuses[(name, width)] = sorted(c.status for c in checks)
            rows.append((name, width, seconds))
    finally:
        import ray

        ray.shutdown()
        stop_cluster(temp)
    same = len({tuple(v) for v in statuses.values()}) == 1
    lines = [
        f"{args.programs} programs (Python and C, new source each run: compiled), 3 stdio cases "
        f"each; Ray chunks of {args.chunk}; Ray head started in {startup:.1f} s; verdicts "
        f"identical in every row: {'yes' if same else 'NO'}.",
        "",
        "| backend | workers / chunks in flight | seconds | checks/s | overhead per check vs local |",
        "|---|---|---|---|---|",
    ]
    for name, width, seconds in rows:
        local = timings[("local pool", width)]
        overhead = (seconds - local) / args.programs * 1000
        lines.append(
            f"| {name} | {width} | {seconds:.2f} | {args.programs / seconds:.1f} | "
            + ("-" if name != "ray" else f"{overhead:+.1f} ms")
            + " |"
        )
    record("Sandbox on Ray vs the local pool (bench/scale.py)", lines)


if __name__ == "__main__":
    main()
