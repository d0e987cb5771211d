"""A managed OpenAI-compatible server: started, health-checked, always stopped.

vLLM serve, SGLang, llama.cpp's server and TGI all speak the same chat API; when
the config gives a command, codeloop owns the server's life: it starts it in its
own process group with its log in the round folder, waits for the health URL
with a deadline (failing fast, with the log's tail, if the server dies first), and
stops it on every exit path: terminate, then kill after the grace period.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from codeloop.config import ManagedServer as ServerConfig
from codeloop.errors import EngineError


def _tail(path: Path, lines: int = 20) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


class ManagedServer:
    """Context manager around one server process."""

    def __init__(self, config: ServerConfig, log_path: str | Path) -> None:
        self.config = config
        self.log_path = Path(log_path)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> ManagedServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.config.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + self.config.startup_timeout_s
        while True:
            if self.process.poll() is not None:
                raise EngineError(
                    f"server exited with {self.process.returncode} before it was healthy; "
                    f"{self.log_path} ends with:\n{_tail(self.log_path)}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.config.health_url, timeout=2).status_code == 200:
                    return self
            if time.monotonic() > deadline:
                self.stop()
                raise EngineError(
                    f"server not healthy at {self.config.health_url} after "
                    f"{self.config.startup_timeout_s:.0f} s; see {self.log_path}"
                )
            time.sleep(0.25)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=self.config.stop_timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def __enter__(self) -> ManagedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
