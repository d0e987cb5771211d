"""Inference engines behind one protocol (see `base.Engine`); `create` builds one from config."""

from __future__ import annotations

from codeloop.engines.base import Completion, Engine, create, create_for, request_seed

__all__ = ["Completion", "Engine", "create", "create_for", "request_seed"]
