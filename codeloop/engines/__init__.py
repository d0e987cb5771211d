"""Inference engines behind one protocol (see `base.Engine`), and the factory that builds them.

`create(config.engine)` returns the engine `EngineConfig.kind` names; `create_for(config)`
the one a session's phases use (Ray actors when `[cluster]` asks for them). Each engine
module, with its heavy dependencies (torch, llama.cpp, vLLM, Ray), is imported only when
that kind is built.
"""

from __future__ import annotations

from codeloop.config import EngineConfig, SessionConfig
from codeloop.engines.base import Completion, Engine, request_seed
from codeloop.errors import ConfigError

__all__ = ["Completion", "Engine", "create", "create_for", "request_seed"]


def create(config: EngineConfig) -> Engine:
    """The engine the config names (imports its heavy dependencies only now)."""
    if config.kind == "hf":
        from codeloop.engines.hf import HFEngine

        return HFEngine(config)
    if config.kind == "llamacpp":
        from codeloop.engines.llamacpp import LlamaCppEngine

        return LlamaCppEngine(config)
    if config.kind == "openai":
        from codeloop.engines.openai import OpenAIEngine

        return OpenAIEngine(config)
    if config.kind == "vllm":
        from codeloop.engines.vllm import VLLMEngine

        return VLLMEngine(config)
    if config.kind == "replay":
        from codeloop.engines.replay import ReplayEngine

        return ReplayEngine(config)
    raise ConfigError(f"engine.kind: unknown engine {config.kind!r}")


def create_for(config: SessionConfig) -> Engine:
    """The engine a session's phases use: one local engine, or Ray actors (`[cluster]`)."""
    cluster = config.cluster
    if cluster.address and cluster.engine_replicas:
        from codeloop.engines.ray_pool import RayEngine

        return RayEngine(
            config.engine,
            address=cluster.address,
            replicas=cluster.engine_replicas,
            make=create,
            num_cpus=cluster.engine_cpus,
            num_gpus=cluster.engine_gpus,
        )
    return create(config.engine)
