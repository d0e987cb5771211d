"""`codeloop serve` under load: SandboxFusion-style `/run_code` from N concurrent clients
against the same requests sent to the worker pool directly, in one run (issue 51).

For each `--clients` value the script starts its own `codeloop serve` on 127.0.0.1 (a
free port, a random bearer token in CODELOOP_SERVE_TOKEN, so the auth path is measured),
waits for `/v1/ping`, and always stops it at the end (SIGTERM, then SIGKILL). Then:

1. HTTP: `--requests` Python stdio programs (a few distinct programs that read stdin
   and print; other languages mixed in with `--languages`), sent by `--clients`
   httpx.AsyncClient tasks. Every request carries an id in its stdin that the program
   prints back, so an answer that is lost, duplicated or crossed with another is seen.
2. Direct: the same requests, built by the server's own `fusion.run_request`, through
   `codeloop.sandbox.run_program` from as many threads as the server has sandbox slots.
   The HTTP overhead is the ratio of the two walls.
3. Multi-case: `--problems` problems of 5 test cases each, SandboxFusion style (5
   `/run_code` requests per problem, each problem its own program): problems/s, for
   comparison with ScaleBox's published 0.07 problems/s per core (their figure).

Memory: RSS of the server process and of its sandbox workers (its descendants) after
the warm-up and at the end. Everything stays on loopback, bounded in count
(`--requests` at most 10,000) and time (`--max-seconds` per clients value).

    .venv/bin/python -m bench.serve_load [--clients 64,256] [--requests 2000]
        [--problems 100] [--languages python,cpp,nodejs,go,java,rust,c]

Prints markdown tables and appends them to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import random
import re
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.results import record
from codeloop.sandbox import run_program
from codeloop.sandbox import shutdown as shutdown_pool
from codeloop.sandbox.pool import worker_pids
from codeloop.sandbox.reaping import descendants
from codeloop.serve.fusion import RunCodeRequest, response, run_request
from codeloop.serve.limits import Settings
from codeloop.serve.protocol import event_loop, parser

MAX_REQUESTS = 10_000
CLIENTS = {
    "raw": "one keep-alive raw-asyncio HTTP/1.1 connection per client (`Connection`)",
    "httpx": "httpx.AsyncClient",
}
CASES_PER_PROBLEM = 5
SCALEBOX_PER_CORE = 0.07  # ScaleBox's published /run_code figure: 2,048 problems, 221 s, 128 cores

# Python stdio programs: each reads an id and numbers, prints the id and one value.
PYTHON = [
    ("sum", "print(sum(nums))", lambda nums: str(sum(nums))),
    ("max", "print(max(nums))", lambda nums: str(max(nums))),
    ("min", "print(min(nums))", lambda nums: str(min(nums))),
    ("sorted", "print(*sorted(nums))", lambda nums: " ".join(map(str, sorted(nums)))),
    ("reversed", "print(*nums[::-1])", lambda nums: " ".join(map(str, nums[::-1]))),
    ("squares", "print(sum(x * x for x in nums))", lambda nums: str(sum(x * x for x in nums))),
    (
        "evens",
        "print(sum(1 for x in nums if x % 2 == 0))",
        lambda nums: str(sum(x % 2 == 0 for x in nums)),
    ),
    ("distinct", "print(len(set(nums)))", lambda nums: str(len(set(nums)))),
]
PYTHON_HEAD = (
    "import sys\nrid, *rest = sys.stdin.read().split()\nnums = list(map(int, rest))\nprint(rid)\n"
)

# Other languages: the sum program (SandboxFusion's language names).
OTHERS = {
    "cpp": (
        "#include <iostream>\n#include <string>\nint main() {\n  std::string id; std::cin >> id;\n"
        "  long long s = 0, x;\n  while (std::cin >> x) s += x;\n"
        '  std::cout << id << "\\n" << s << "\\n";\n}\n'
    ),
    "c": (
        "#include <stdio.h>\nint main(void) {\n  char id[64]; long long s = 0, x;\n"
        '  if (scanf("%63s", id) != 1) return 1;\n  while (scanf("%lld", &x) == 1) s += x;\n'
        '  printf("%s\\n%lld\\n", id, s);\n  return 0;\n}\n'
    ),
    "nodejs": (
        'const t = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/);\n'
        "let s = 0;\nfor (const x of t.slice(1)) s += Number(x);\n"
        "console.log(t[0]);\nconsole.log(String(s));\n"
    ),
    "go": (
        'package main\n\nimport (\n\t"bufio"\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n'
        "\tr := bufio.NewReader(os.Stdin)\n\tvar id string\n\tfmt.Fscan(r, &id)\n"
        "\tvar s, x int64\n\tfor {\n\t\tif _, err := fmt.Fscan(r, &x); err != nil {\n\t\t\tbreak\n"
        "\t\t}\n\t\ts += x\n\t}\n\tfmt.Println(id)\n\tfmt.Println(s)\n}\n"
    ),
    "java": (
        "import java.util.*;\n\npublic class Main {\n  public static void main(String[] a) {\n"
        "    Scanner sc = new Scanner(System.in);\n    String id = sc.next();\n    long s = 0;\n"
        "    while (sc.hasNextLong()) s += sc.nextLong();\n"
        "    System.out.println(id);\n    System.out.println(s);\n  }\n}\n"
    ),
    "rust": (
        "use std::io::Read;\n\nfn main() {\n    let mut s = String::new();\n"
        "    std::io::stdin().read_to_string(&mut s).unwrap();\n"
        "    let mut it = s.split_whitespace();\n    let id = it.next().unwrap();\n"
        "    let t: i64 = it.map(|x| x.parse::<i64>().unwrap()).sum();\n"
        '    println!("{}\\n{}", id, t);\n}\n'
    ),
}


@dataclass
class Job:
    rid: str
    language: str
    code: str
    stdin: str
    expected: str
    problem: int = -1

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "language": self.language, "stdin": self.stdin}


@dataclass
class Outcome:
    status: str  # HTTP status, or the exception's name
    seconds: float
    body: Any = None
    request_id: str | None = None


@dataclass
class Phase:
    wall: float = 0.0
    answers: dict[int, list[Outcome]] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)


def make_jobs(count: int, languages: list[str], seed: int) -> list[Job]:
    """`count` requests over the distinct programs of `languages` (Python's 8, one each
    for the others), every one with its own id and numbers."""
    rng = random.Random(seed)
    jobs = []
    for index in range(count):
        language = languages[index % len(languages)]
        rid = f"r{index:05d}x{rng.getrandbits(32):08x}"
        nums = [rng.randint(-1000, 1000) for _ in range(rng.randint(5, 20))]
        if language == "python":
            _name, line, value = PYTHON[rng.randrange(len(PYTHON))]
            code, answer = PYTHON_HEAD + line + "\n", value(nums)
        else:
            code, answer = OTHERS[language], str(sum(nums))
        stdin = f"{rid}\n{' '.join(map(str, nums))}\n"
        jobs.append(Job(rid, language, code, stdin, f"{rid}\n{answer}\n"))
    return jobs


def make_problems(count: int, seed: int) -> list[Job]:
    """`count` problems, each its own Python program with 5 cases (one request each),
    sent problem after problem as a trainer sends them."""
    rng = random.Random(seed)
    jobs = []
    for problem in range(count):
        offset = rng.randint(1, 10**6)
        code = PYTHON_HEAD + f"print(sum(nums) + {offset})  # problem {problem}\n"
        for case in range(CASES_PER_PROBLEM):
            rid = f"p{problem:04d}c{case}x{rng.getrandbits(32):08x}"
            nums = [rng.randint(-1000, 1000) for _ in range(rng.randint(5, 20))]
            stdin = f"{rid}\n{' '.join(map(str, nums))}\n"
            jobs.append(Job(rid, "python", code, stdin, f"{rid}\n{sum(nums) + offset}\n", problem))
    return jobs


# --- the server ------------------------------------------------------------------------


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_s(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def memory(pid: int) -> tuple[float, float, int]:
    """RSS of the server and of its descendants (MiB; shared pages counted in each)."""
    others = descendants(pid)
    return rss_kib(pid) / 1024, sum(rss_kib(child) for child in others) / 1024, len(others)


class Server:
    """`codeloop serve` on 127.0.0.1 and a free port, with a random token."""

    def __init__(self, workers: int, max_waiting: int, stack: str = "auto") -> None:
        self.token = secrets.token_urlsafe(32)
        self.log = tempfile.NamedTemporaryFile("w+", prefix="serve_load-", suffix=".log")  # noqa: SIM115
        command = [sys.executable, "-m", "codeloop", "serve", "--host", "127.0.0.1", "--port", "0"]
        command += ["--workers", str(workers), "--max-waiting", str(max_waiting)]
        if stack == "plain":  # uvicorn's pure-Python parser and asyncio's own loop
            command += ["--http", "h11", "--loop", "asyncio"]
        if stack == "routed":  # every /run_code through FastAPI's route (serve.fusion)
            command += ["--routed-run-code"]
        if stack == "threads":  # a thread per request waits on a worker (sandbox.pool)
            command += ["--thread-workers"]
        env = {**os.environ, "CODELOOP_SERVE_TOKEN": self.token}
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            env=env,
            start_new_session=True,  # its own process group: the workers go with it
        )
        self.url = ""

    def tail(self) -> str:
        return Path(self.log.name).read_text(errors="replace")[-3000:]

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.url:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"codeloop serve did not start:\n{self.tail()}")
            found = re.search(
                r"listening on (http://127\.0\.0\.1:\d+)", Path(self.log.name).read_text()
            )
            if found:
                self.url = found.group(1)
            else:
                time.sleep(0.1)
        while True:
            try:
                if httpx.get(f"{self.url}/v1/ping", timeout=5).json() == "pong":
                    return
            except (httpx.HTTPError, json.JSONDecodeError):
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"codeloop serve did not answer /v1/ping:\n{self.tail()}")
            time.sleep(0.1)

    def metric(self, name: str) -> dict[str, float]:
        """`name`'s samples from /metrics, by their labels."""
        text = httpx.get(
            f"{self.url}/metrics", headers={"Authorization": f"Bearer {self.token}"}, timeout=10
        ).text
        samples = {}
        for line in text.splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                labels, _, value = line.rpartition(" ")
                samples[labels[len(name) :]] = float(value)
        return samples

    def stop(self) -> None:
        """SIGTERM (uvicorn drains), then SIGKILL to the whole process group."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        self.log.close()


# --- the two paths ---------------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection on raw asyncio streams: a load generator that
    spends a small fraction of httpx's CPU per request, so that on these 2 shared cores the
    client takes less of the machine from the server it measures (`--client httpx` keeps
    the library client). Requests are pre-encoded; answers are read by Content-Length."""

    def __init__(self, url: str, token: str) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.head = (
            f"POST /run_code HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        ).encode()
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, body: bytes) -> tuple[int, bytes, str | None]:
        if self.streams is None:
            self.streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.streams
        try:
            writer.write(self.head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            headers = dict(
                (name.strip().lower(), value.strip())
                for name, _, value in (line.partition(":") for line in head[1:] if line)
            )
            content = await reader.readexactly(int(headers.get("content-length", "0")))
        except BaseException:
            self.close()
            raise
        if headers.get("connection", "").lower() == "close":
            self.close()
        return int(head[0].split()[1]), content, headers.get("x-request-id")

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


async def send_all(
    server: Server,
    jobs: list[Job],
    clients: int,
    timeout: float,
    kind: str = "raw",
    indices: range | list[int] | None = None,
) -> Phase:
    """Every job (of `indices`, default all) once through `/run_code`, `clients` at a
    time; what came back for each. `kind`: the load generator, `raw` (`Connection`) or
    `httpx` (httpx.AsyncClient)."""
    phase = Phase()
    headers = {"Authorization": f"Bearer {server.token}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    order = iter(indices if indices is not None else range(len(jobs)))
    bodies = [json.dumps(job.body()).encode() for job in jobs]
    async with httpx.AsyncClient(
        base_url=server.url, headers=headers, limits=limits, timeout=httpx.Timeout(120.0)
    ) as client:

        async def post(connection: Connection, index: int) -> tuple[int, Any, str | None]:
            if kind == "raw":
                async with asyncio.timeout(120):  # no task per request, as wait_for makes
                    code, content, rid = await connection.post(bodies[index])
                body = json.loads(content) if code in (200, 504) else content[:200]
                return code, body, rid
            answer = await client.post(
                "/run_code", content=bodies[index], headers={"Content-Type": "application/json"}
            )
            ok = answer.status_code in (200, 504)
            body = answer.json() if ok else answer.text[:200]
            return answer.status_code, body, answer.headers.get("x-request-id")

        async def one_client() -> None:
            connection = Connection(server.url, server.token)
            try:
                for index in order:
                    started = time.perf_counter()
                    try:
                        code, body, rid = await post(connection, index)
                        outcome = Outcome(str(code), time.perf_counter() - started, body, rid)
                    except (OSError, TimeoutError, asyncio.IncompleteReadError) as error:
                        outcome = Outcome(type(error).__name__, time.perf_counter() - started)
                    except (httpx.HTTPError, json.JSONDecodeError, ValueError) as error:
                        outcome = Outcome(type(error).__name__, time.perf_counter() - started)
                    phase.answers.setdefault(index, []).append(outcome)
            finally:
                connection.close()

        cpu = time.process_time(), cpu_s(server.process.pid)
        started = time.perf_counter()
        tasks = [asyncio.create_task(one_client()) for _ in range(clients)]
        _done, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        phase.wall = time.perf_counter() - started
        phase.cpu = {
            "client": time.process_time() - cpu[0],
            "server": cpu_s(server.process.pid) - cpu[1],
        }
    return phase


def direct(
    jobs: list[Job], threads: int, workers: int, timeout: float, indices: range | None = None
) -> Phase:
    """Every job (of `indices`, default all) once through `sandbox.run_program` from
    `threads` threads, built into the sandbox's request exactly as the server builds it."""
    settings = Settings(workers=workers)
    indices = indices if indices is not None else range(len(jobs))
    wanted = {
        index: run_request(RunCodeRequest(**jobs[index].body()), settings) for index in indices
    }
    phase = Phase()
    order, lock = iter(indices), threading.Lock()
    deadline = time.monotonic() + timeout

    def one_thread() -> None:
        while time.monotonic() < deadline:
            with lock:
                index = next(order, None)
            if index is None:
                return
            started = time.perf_counter()
            run = run_program(wanted[index], workers=workers)
            seconds = time.perf_counter() - started
            body = response(run).model_dump(mode="json")
            with lock:
                phase.answers.setdefault(index, []).append(Outcome("200", seconds, body))

    started, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(threads):
            pool.submit(one_thread)
    phase.wall = time.perf_counter() - started
    phase.cpu = {"caller": time.process_time() - cpu}  # what the server does for a request
    return phase


def merge(into: Phase, block: Phase) -> None:
    """Add one block's answers, wall and CPU to a path's running total."""
    into.wall += block.wall
    into.answers.update(block.answers)
    for name, seconds in block.cpu.items():
        into.cpu[name] = into.cpu.get(name, 0.0) + seconds


def interleaved(
    server: Server, jobs: list[Job], clients: int, workers: int, blocks: int, args: Any, left: Any
) -> tuple[Phase, Phase]:
    """HTTP and direct over the same jobs in `blocks` consecutive blocks, the order of
    the two paths alternating block by block (HTTP first in even blocks), so that this
    machine's drift in speed falls on both paths alike; each path's wall is its blocks'."""
    http, pool = Phase(), Phase()
    size = -(-len(jobs) // blocks)
    for number, start in enumerate(range(0, len(jobs), size)):
        block = range(start, min(len(jobs), start + size))
        for path in ("http", "direct") if number % 2 == 0 else ("direct", "http"):
            if path == "http":
                sent = send_all(server, jobs, clients, left(), args.client, block)
                merge(http, run_loop(sent))
            else:
                merge(pool, direct(jobs, min(clients, workers), workers, left(), block))
    return http, pool


def client_loop() -> str:
    """The load generator's event loop (`run_loop`)."""
    try:
        import uvloop
    except ImportError:
        return "asyncio's loop"
    return f"uvloop {uvloop.__version__}"


def run_loop(coroutine: Any) -> Any:
    """`coroutine` on uvloop where installed (the load generator's own CPU is taken
    from the 2 cores the server is measured on), else on asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


# --- what came back --------------------------------------------------------------------


def right(job: Job, outcome: Outcome) -> bool:
    body = outcome.body
    if outcome.status != "200" or not isinstance(body, dict) or body.get("status") != "Success":
        return False
    return (body.get("run_result") or {}).get("stdout") == job.expected


def same(first: Any, second: Any) -> bool:
    """Two `/run_code` answers alike but for the times."""

    def strip(body: Any) -> Any:
        if not isinstance(body, dict):
            return body
        kept = dict(body)
        for step in ("compile_result", "run_result"):
            if isinstance(kept.get(step), dict):
                kept[step] = {k: v for k, v in kept[step].items() if k != "execution_time"}
        return kept

    return strip(first) == strip(second)


@dataclass
class Summary:
    sent: int
    once: int
    lost: int
    duplicated: int
    right: int
    statuses: str
    wall: float
    p50_ms: float
    p99_ms: float

    @property
    def rate(self) -> float:
        return self.sent / self.wall if self.wall else 0.0


def summarize(jobs: list[Job], phase: Phase) -> Summary:
    statuses: collections.Counter[str] = collections.Counter()
    latencies, correct = [], 0
    for index, outcomes in phase.answers.items():
        for outcome in outcomes:
            statuses[outcome.status] += 1
            latencies.append(outcome.seconds * 1000)
        if len(outcomes) == 1 and right(jobs[index], outcomes[0]):
            correct += 1
    latencies.sort()
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    return Summary(
        sent=len(jobs),
        once=sum(len(outcomes) == 1 for outcomes in phase.answers.values()),
        lost=len(jobs) - len(phase.answers),
        duplicated=sum(len(outcomes) > 1 for outcomes in phase.answers.values()),
        right=correct,
        statuses=", ".join(f"{code}: {n}" for code, n in sorted(statuses.items())),
        wall=phase.wall,
        p50_ms=cuts[49] if cuts else 0.0,
        p99_ms=cuts[98] if cuts else 0.0,
    )


def row(clients: int, path: str, s: Summary) -> str:
    return (
        f"| {clients} | {path} | {s.sent} | {s.once} | {s.lost} / {s.duplicated} | {s.right} | "
        f"{s.statuses} | {s.wall:.1f} | {s.rate:.1f} | {s.p50_ms:.0f} | {s.p99_ms:.0f} |"
    )


def run_one(args: argparse.Namespace, clients: int, workers: int) -> dict[str, Any]:
    """One server, one clients value: warm-up, HTTP, direct, multi-case."""
    jobs = make_jobs(args.requests, args.languages, seed=clients)
    problems = make_problems(args.problems, seed=clients + 1)
    deadline = time.monotonic() + args.max_seconds
    left = lambda: max(1.0, deadline - time.monotonic())  # noqa: E731
    max_waiting = args.max_waiting if args.max_waiting is not None else clients
    server = Server(workers, max_waiting, args.stack)
    try:
        server.wait_ready()
        mem_idle = memory(server.process.pid)
        # Warm-up: every distinct program twice (workers start, compile cache fills).
        seen, warm = set(), []
        for job in jobs:
            if (job.language, job.code) not in seen:
                seen.add((job.language, job.code))
                warm += [job, job]
        run_loop(send_all(server, warm, workers, left(), args.client))
        direct(warm, workers, workers, left())
        mem_start = memory(server.process.pid)
        before = server.metric("codeloop_serve_requests_total")
        http, pool = interleaved(server, jobs, clients, workers, args.blocks, args, left)
        mem_end = memory(server.process.pid)
        after = server.metric("codeloop_serve_requests_total")
        multi = run_loop(send_all(server, problems, clients, left(), args.client))
        fault = faults(server, args, clients, left) if args.kill_every > 0 else None
        counted = {
            re.sub(r'.*code="([^"]*)".*', r"\1", labels): after[labels] - before.get(labels, 0)
            for labels in after
            if 'endpoint="/run_code"' in labels and after[labels] > before.get(labels, 0)
        }
    finally:
        server.stop()
    agree = sum(
        1
        for index, outcomes in http.answers.items()
        if len(outcomes) == 1 and index in pool.answers
        and same(outcomes[0].body, pool.answers[index][0].body)
    )  # fmt: skip
    ids = [o.request_id for outcomes in http.answers.values() for o in outcomes if o.request_id]
    solved = collections.Counter()
    for index, outcomes in multi.answers.items():
        if len(outcomes) == 1 and right(problems[index], outcomes[0]):
            solved[problems[index].problem] += 1
    return {
        "clients": clients,
        "max_waiting": max_waiting,
        "http": summarize(jobs, http),
        "direct": summarize(jobs, pool),
        "agree": agree,
        "unique_ids": len(set(ids)) == len(ids),
        "counted": counted,
        "cpu": {**http.cpu, **pool.cpu},
        "memory": (mem_idle, mem_start, mem_end),
        "multi": summarize(problems, multi),
        "problems_right": sum(n == CASES_PER_PROBLEM for n in solved.values()),
        "faults": fault,
    }


@contextlib.contextmanager
def killing(server: Server, every: float, killed: list[int]) -> Iterator[None]:
    """While inside: every sandbox worker of `server` SIGKILLed each `every` seconds
    (the count added to `killed[0]`)."""
    stop = threading.Event()

    def killer() -> None:
        while not stop.wait(every):
            for pid in worker_pids(server.process.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    killed[0] += 1

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def environmental(outcome: Outcome) -> bool:
    """An answer the sandbox, not the program, is to blame for: a SandboxError (HTTP 504
    by default, 200 with `--sandbox-error-http 200`) or another HTTP 5xx."""
    body = outcome.body
    return outcome.status.startswith("5") or (
        isinstance(body, dict) and body.get("status") == "SandboxError"
    )


def kind(job: Job, outcomes: list[Outcome]) -> str:
    """What came back for one job: lost, duplicated, right, environment error or wrong."""
    if len(outcomes) != 1:
        return "lost" if not outcomes else "duplicated"
    if right(job, outcomes[0]):
        return "right"
    return "environment error" if environmental(outcomes[0]) else "wrong"


def classify(jobs: list[Job], phase: Phase) -> collections.Counter[str]:
    return collections.Counter(
        kind(job, phase.answers.get(index, [])) for index, job in enumerate(jobs)
    )


def described(outcome: Outcome) -> str:
    """A wrong answer in a few words: what a fault run names beside its count."""
    body = outcome.body
    if not isinstance(body, dict):
        return f"{outcome.status} after {outcome.seconds:.0f} s {str(body or '')[:80]}".strip()
    run = body.get("run_result") or {}
    return (
        f"{outcome.status} {body.get('status')}: run {run.get('status')}, exit "
        f"{run.get('return_code')}, stdout {str(run.get('stdout'))[:40]!r}, "
        f"{str(body.get('message') or run.get('stderr') or '')[:80]!r}"
    )


def faults(server: Server, args: argparse.Namespace, clients: int, left: Any) -> dict[str, Any]:
    """`--fault-requests` more requests while every sandbox worker of the server is
    SIGKILLed each `--kill-every` seconds. Each answer is right, an environment error
    (SandboxError, or an HTTP 5xx the client may send again), or wrong: a right
    program's run judged Failed or with other output. Wrong must be 0: a killed worker
    is the sandbox's fault, never the program's."""
    jobs = make_jobs(args.fault_requests, args.languages, seed=clients + 2)
    killed = [0]
    with killing(server, args.kill_every, killed):
        phase = run_loop(send_all(server, jobs, clients, left(), args.client))
    kinds = classify(jobs, phase)
    # As verl does with a 504: each environment error sent again, up to 3 times in all,
    # while the workers are still being killed.
    retried = dict(phase.answers)
    for _ in range(2):
        again = [i for i, o in retried.items() if len(o) == 1 and environmental(o[0])]
        if not again:
            break
        with killing(server, args.kill_every, killed):
            sent = send_all(server, jobs, min(clients, len(again)), left(), args.client, again)
            retried.update(run_loop(sent).answers)
    final = classify(jobs, Phase(answers=retried))
    wrong = collections.Counter(
        described(outcomes[0])
        for index, outcomes in retried.items()
        if kind(jobs[index], outcomes) == "wrong"
    )
    after = run_loop(send_all(server, jobs[:20], min(clients, 20), left(), args.client))
    return {
        "sent": len(jobs),
        "killed": killed[0],
        "kinds": kinds,
        "final": final,
        "wrong": wrong,
        "wall": phase.wall,
        "serving_after": sum(right(jobs[i], o[0]) for i, o in after.answers.items() if o),
    }


def setting_of(result: dict[str, Any]) -> str:
    """How the run's server was set: its warm Python sandbox and its HTTP stack."""
    if result["stack"] == "plain":
        return f"warm {result['warm']}, h11 + asyncio"
    how = {"routed": ", routed", "threads": ", thread workers"}.get(result["stack"], "")
    return f"warm {result['warm']}, {parser()} + {event_loop()}{how}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="64", help="concurrent clients; a list runs each")
    parser.add_argument("--requests", type=int, default=2000, help=f"at most {MAX_REQUESTS}")
    parser.add_argument("--problems", type=int, default=100, help="multi-case: 5 cases each")
    parser.add_argument(
        "--languages", default="python", help="SandboxFusion names, comma-separated"
    )
    parser.add_argument("--workers", type=int, default=None, help="default: one per core")
    parser.add_argument(
        "--max-waiting", type=int, default=None, help="the server's queue (default: clients)"
    )
    parser.add_argument(
        "--stack",
        default="auto",
        help="the server's HTTP stack: auto (httptools and uvloop where installed), plain "
        "(h11 and asyncio), routed (auto, each /run_code through FastAPI's route: "
        "--routed-run-code) or threads (auto, a thread per request waits on a sandbox "
        "worker: --thread-workers); a list (auto,threads) runs each clients value each way, "
        "side by side",
    )
    parser.add_argument(
        "--kill-every",
        type=float,
        default=0.0,
        help="then a fault phase: SIGKILL every sandbox worker each this many seconds",
    )
    parser.add_argument("--fault-requests", type=int, default=2000, help="the fault phase's")
    parser.add_argument(
        "--blocks",
        type=int,
        default=8,
        help="HTTP and direct alternate over this many blocks of the requests (drift)",
    )
    parser.add_argument(
        "--client",
        choices=("raw", "httpx"),
        default="raw",
        help="the load generator: raw asyncio HTTP/1.1 (light) or httpx.AsyncClient",
    )
    parser.add_argument("--max-seconds", type=float, default=600.0, help="per clients value")
    parser.add_argument(
        "--warm",
        default="on",
        help="the workers' warm Python sandbox (CODELOOP_WARM): on, off, or on,off to run "
        "each clients value both ways, side by side",
    )
    return parser


def _checked(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The options, refused with a usage error where they make no run."""
    args = parser.parse_args()
    args.languages = [name.strip() for name in args.languages.split(",") if name.strip()]
    if set(args.stack.split(",")) - {"auto", "plain", "routed", "threads"}:
        parser.error("--stack: auto, plain, routed, threads or a list of them (auto,threads)")
    if args.blocks < 1 or not 0 <= args.fault_requests <= MAX_REQUESTS:
        parser.error(f"--blocks: at least 1; --fault-requests: 0 to {MAX_REQUESTS}")
    if 0 < args.kill_every < 0.1:
        parser.error("--kill-every: 0 (no fault phase) or at least 0.1 s")
    unknown = [name for name in args.languages if name != "python" and name not in OTHERS]
    if unknown:
        parser.error(f"no program for {unknown}; known: python, {', '.join(OTHERS)}")
    if not 1 <= args.requests <= MAX_REQUESTS or not 1 <= args.problems * 5 <= MAX_REQUESTS:
        parser.error(f"--requests and 5 x --problems: 1 to {MAX_REQUESTS}")
    return args


def _runs(args: argparse.Namespace, workers: int) -> list[dict]:
    """Every clients value, warm setting and stack, in that nesting, one run each."""
    results = []
    try:
        for clients in [int(part) for part in args.clients.split(",")]:
            for setting in args.warm.split(","):
                for stack in args.stack.split(","):
                    # the server's workers and this process's pool read it when they start
                    os.environ["CODELOOP_WARM"] = setting
                    shutdown_pool()
                    one = argparse.Namespace(**{**vars(args), "stack": stack})
                    results.append(
                        {**run_one(one, clients, workers), "warm": setting, "stack": stack}
                    )
    finally:
        shutdown_pool()

    return results


def _http_lines(args: argparse.Namespace, results: list[dict], workers: int, cores: int):
    """What was sent, and the HTTP and direct paths side by side."""
    languages = ", ".join(args.languages)
    lines = [
        f"{args.requests} `/run_code` requests ({languages}; {len(PYTHON)} distinct Python stdio "
        f"programs, each request its own stdin and id), {workers} sandbox workers, {cores} cores; "
        f"HTTP: {CLIENTS[args.client]} with a bearer token against `codeloop serve` on 127.0.0.1 "
        "(started by the script, `--max-waiting` = clients unless given); direct: the same "
        "requests (`fusion.run_request`) through `sandbox.run_program` from as many threads as "
        f"the pool has workers. The two paths alternate over {args.blocks} blocks of the "
        "requests (HTTP first in even blocks), each path's wall the sum of its blocks'. The "
        f"client runs on the same {cores} cores as the server, on {client_loop()}. Latency "
        "is the client's, queueing included.",
        "",
        "| clients | path | requests | answered once | lost / duplicated | right output | "
        "statuses | wall s | requests/s | p50 ms | p99 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        warm = f", {setting_of(result)}"
        lines.append(row(result["clients"], f"HTTP `/run_code`{warm}", result["http"]))
        lines.append(
            row(result["clients"], f"pool directly ({workers} threads){warm}", result["direct"])
        )
    lines += [
        "",
        "| clients | HTTP wall / direct wall | HTTP answers equal to direct | X-Request-Id unique | "
        "server's /run_code count | CPU s: client, server process | direct caller's CPU s | "
        "server RSS MiB: idle, "
        "warm, end | workers' RSS MiB (processes): idle, warm, end |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        http, pool = result["http"], result["direct"]
        idle, warm, end = result["memory"]
        counted = ", ".join(f"{k}: {v:.0f}" for k, v in sorted(result["counted"].items()))
        lines.append(
            f"| {result['clients']}, {setting_of(result)} | {http.wall / pool.wall:.2f} | "
            f"{result['agree']}/{http.sent} | "
            f"{'yes' if result['unique_ids'] else 'NO'} | {counted} | "
            f"{result['cpu']['client']:.1f}, {result['cpu']['server']:.1f} | "
            f"{result['cpu']['caller']:.1f} | "
            f"{idle[0]:.0f}, {warm[0]:.0f}, {end[0]:.0f} | "
            f"{idle[1]:.0f} ({idle[2]}), {warm[1]:.0f} ({warm[2]}), {end[1]:.0f} ({end[2]}) |"
        )
    return lines


def _multi_lines(args: argparse.Namespace, results: list[dict], cores: int) -> list[str]:
    """The multi-case problems, ScaleBox's figure, and each run against issue 51's goals."""
    lines: list[str] = []
    lines += [
        "",
        f"Multi-case: {args.problems} problems of {CASES_PER_PROBLEM} test cases, each problem "
        f"its own Python program, sent as {CASES_PER_PROBLEM} `/run_code` requests (SandboxFusion "
        "style), problem after problem, by the same clients.",
        "",
        "| clients | problems | requests | all cases right | statuses | wall s | problems/s | "
        "problems/s per core | p50 ms | p99 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        m = result["multi"]
        per_second = args.problems / m.wall if m.wall else 0.0
        lines.append(
            f"| {result['clients']}, {setting_of(result)} | {args.problems} | {m.sent} | "
            f"{result['problems_right']} | "
            f"{m.statuses} | {m.wall:.1f} | {per_second:.1f} | {per_second / cores:.1f} | "
            f"{m.p50_ms:.0f} | {m.p99_ms:.0f} |"
        )
    lines += [
        "",
        f"ScaleBox's published figure (theirs, not measured here): 2,048 problems in 221 s on 128 "
        f"cores through `/run_code`, about {SCALEBOX_PER_CORE} problems/s per core; their "
        "problems, test cases and programs differ from these small stdio ones.",
        "",
    ]
    for result in results:
        http, pool = result["http"], result["direct"]
        overhead = http.wall / pool.wall - 1
        lines.append(
            f"- {result['clients']} clients, {setting_of(result)}: {http.rate:.0f} requests/s "
            "over HTTP "
            f"(issue 51's goal at 64 clients: at least 100), HTTP overhead {overhead:+.0%} "
            f"of the direct wall (goal: at most +15%); lost {http.lost}, duplicated "
            f"{http.duplicated}, wrong or refused {http.sent - http.right}."
        )
    return lines


def _fault_lines(args: argparse.Namespace, results: list[dict]) -> list[str]:
    """The fault phase's table, where one ran."""
    lines: list[str] = []
    if any(result["faults"] for result in results):
        lines += [
            "",
            f"Faults: {args.fault_requests} more requests while every sandbox worker of the "
            f"server is SIGKILLed each {args.kill_every:g} s; then 20 requests to see it "
            "serving.",
            "",
            "Environment errors (SandboxError, answered 504) are sent again up to twice more, "
            "as verl does, while the kills go on; `after retries` counts the answers then.",
            "",
            "| clients | requests | workers killed | right | environment error | wrong | "
            "lost | duplicated | after retries: right, environment error, wrong | wall s | "
            "right after |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for result in results:
            if fault := result["faults"]:
                kinds, final = fault["kinds"], fault["final"]
                lines.append(
                    f"| {result['clients']}, {setting_of(result)} | {fault['sent']} | "
                    f"{fault['killed']} | {kinds['right']} | {kinds['environment error']} | "
                    f"{kinds['wrong']} | {kinds['lost']} | {kinds['duplicated']} | "
                    f"{final['right']}, {final['environment error']}, {final['wrong']} | "
                    f"{fault['wall']:.1f} | {fault['serving_after']}/20 |"
                )
        for result in results:
            for what, count in sorted((result["faults"] or {}).get("wrong", {}).items()):
                lines.append(
                    f"- wrong after retries, {result['clients']} clients: {count} x {what}"
                )
    return lines


def main() -> None:
    args = _checked(_parser())
    cores = len(os.sched_getaffinity(0))
    workers = args.workers or cores
    results = _runs(args, workers)
    lines = _http_lines(args, results, workers, cores)
    lines += _multi_lines(args, results, cores)
    lines += _fault_lines(args, results)
    languages = ", ".join(args.languages)
    record(f"bench/serve_load.py: `codeloop serve` /run_code under load ({languages})", lines)


if __name__ == "__main__":
    main()
