"""The one small error hierarchy of codeloop.

Every error a user can cause or meet is a `CodeloopError`; the CLI prints its
message without a traceback (unless `--debug`), so each message must name the
file, field or task at fault and say what to do about it.
"""

from __future__ import annotations


class CodeloopError(Exception):
    """Base of every error the CLI reports as a plain message."""

    exit_code = 1


class ConfigError(CodeloopError):
    """The session config (or a preset, or a CLI option) is invalid."""


class IntegrityError(CodeloopError):
    """An artifact is missing, corrupt, or no longer bound to the inputs it claims."""


class SandboxEnvironmentError(CodeloopError):
    """The sandbox cannot run programs here: never a wrong answer."""


class EngineError(CodeloopError):
    """An inference engine failed to load, answer, or switch adapters."""
