"""A sandbox worker process: reads check requests as JSON lines, answers with Checks.

Started by `pool.py` as `python -m codeloop.sandbox.worker BACKEND INDEX`. It is
single-threaded (so setting up each sandboxed child before exec is safe), a child
subreaper (so it can reap every orphan after each run), and owns one uid and one
set of cgroups. Its stdout carries only the protocol.
"""

from __future__ import annotations

import json
import sys

from codeloop.sandbox.check import Check, CheckRequest, Sandbox
from codeloop.sandbox.harness import become_subreaper
from codeloop.sandbox.request import ProgramRun, RunRequest, Step


def serve(backend: str, index: int) -> None:
    become_subreaper()
    sandbox = Sandbox(backend, worker=index)
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("op") == "describe":
            answer = {"describe": sandbox.describe()}
        elif message.get("op") == "run":  # one program on one stdin, no verdict
            run = RunRequest.model_validate(message["request"])
            try:
                done = sandbox.run_program(run)
            except Exception as error:  # a harness fault, never the program's
                broken = Step(
                    status="environment_error",
                    stderr=f"sandbox harness error: {type(error).__name__}: {error}",
                )
                done = ProgramRun(run=broken, backend=backend)
            answer = {"run": done.model_dump(mode="json")}
        else:
            request = CheckRequest.model_validate(message["request"])
            try:
                answer = {"check": sandbox.check(request).model_dump(mode="json")}
            except Exception as error:  # a harness fault, never the program's: report it
                failed = Check(
                    status="environment_error",
                    backend=backend,
                    feedback=f"sandbox harness error: {type(error).__name__}: {error}",
                )
                answer = {"check": failed.model_dump(mode="json")}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    sandbox.close()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
