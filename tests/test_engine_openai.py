"""The openai engine against a real OpenAI-compatible server on loopback.

The server is llama-cpp-python's `llama_cpp.server` serving the bundled SmolLM2
GGUF, started and stopped by the engine itself (a managed server).
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp.server.app")

from codeloop.config import EngineConfig, ManagedServer
from codeloop.engines.openai import OpenAIEngine
from codeloop.errors import EngineError
from codeloop.models import bundled_gguf

pytestmark = pytest.mark.timeout(300)
HELLO = [{"role": "user", "content": "Write a Python program that prints hello."}]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def config(port: int, **extra) -> EngineConfig:
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(bundled_gguf()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "1024",
        "--model_alias",
        "smollm2",
        "--n_threads",
        "1",
    ]
    server = ManagedServer(
        command=command,
        health_url=f"http://127.0.0.1:{port}/v1/models",
        startup_timeout_s=120,
        stop_timeout_s=10,
    )
    return EngineConfig(kind="openai", model="smollm2", server=server, concurrency=2, **extra)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    port = free_port()
    engine = OpenAIEngine(config(port, max_retries=1), log_dir=tmp_path_factory.mktemp("log"))
    yield engine
    engine.close()


def test_generates_and_repeats_seeded_samples(engine) -> None:
    [[greedy]] = engine.generate([HELLO], max_tokens=32)
    assert greedy.text and greedy.tokens > 0
    first = engine.generate([HELLO, HELLO], max_tokens=24, temperature=0.8, seed=[7, 8])
    again = engine.generate([HELLO, HELLO], max_tokens=24, temperature=0.8, seed=[7, 8])
    assert [r[0].text for r in first] == [r[0].text for r in again]
    assert engine.info()["engine"] == "openai" and engine.info()["adapter_sha256"] is None


def test_samples_follow_top_p_and_min_p_not_the_server_defaults(engine) -> None:
    """A tiny top-p, or a min-p near 1, reaches llama.cpp's server: samples at a high
    temperature become the greedy answer."""
    greedy = engine.generate([HELLO], max_tokens=24)[0][0].text
    options = {"max_tokens": 24, "temperature": 1.5, "seed": [11, 12, 13]}
    assert any(r[0].text != greedy for r in engine.generate([HELLO] * 3, **options))
    original = engine.config
    try:
        for narrow in ({"top_p": 1e-6}, {"min_p": 0.999}):
            engine.config = original.model_copy(update=narrow)
            assert [r[0].text for r in engine.generate([HELLO] * 3, **options)] == [greedy] * 3
    finally:
        engine.config = original


def test_a_refused_request_is_a_clear_error_without_retries(engine) -> None:
    with pytest.raises(EngineError, match="refused the request: HTTP 404"):
        engine._post("/no-such-endpoint", {})


def test_a_server_without_runtime_lora_says_how_to_get_it(engine, tmp_path: Path) -> None:
    (tmp_path / "adapter_config.json").write_text("{}")
    (tmp_path / "adapter_model.safetensors").write_bytes(b"not served here")
    with pytest.raises(EngineError, match="VLLM_ALLOW_RUNTIME_LORA_UPDATING"):
        engine.load_adapter(tmp_path)
    assert engine.info()["adapter_sha256"] is None


def test_server_killed_mid_batch_is_a_clear_error_not_an_empty_answer(tmp_path: Path) -> None:
    port = free_port()
    engine = OpenAIEngine(config(port, max_retries=2, request_timeout_s=30), log_dir=tmp_path)
    try:
        assert engine.server is not None and engine.server.process is not None
        process = engine.server.process
        killer = threading.Timer(1.0, process.kill)
        killer.start()
        started = time.monotonic()
        with pytest.raises(EngineError, match="failed after 3 attempts"):
            engine.generate([HELLO] * 8, max_tokens=200)
        assert time.monotonic() - started < 120
        killer.join()
    finally:
        engine.close()
    assert (tmp_path / "server.log").stat().st_size > 0


def test_server_that_never_gets_healthy_is_reported(tmp_path: Path) -> None:
    port = free_port()
    broken = [sys.executable, "-c", "import sys; print('cannot start'); sys.exit(3)"]
    server = ManagedServer(
        command=broken, health_url=f"http://127.0.0.1:{port}/v1/models", startup_timeout_s=30
    )
    with pytest.raises(EngineError, match="exited with 3"):
        OpenAIEngine(EngineConfig(kind="openai", server=server), log_dir=tmp_path)
