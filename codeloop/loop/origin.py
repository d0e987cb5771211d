"""Where a session's config.toml came from, recorded when the session is created.

config.toml decides everything a round does (learning rate, audit margin, gate rule),
yet it sits outside every phase's hash: an edit to it changes what the recomputed
decision means without any sha256 noticing. So the session records how its config was
made, and `codeloop verify` rebuilds it from that record instead of trusting it:

- a bundled preset: its name, the sha256 of its text as codeloop shipped it, and the
  overrides (every field whose value differs from the preset's). verify rebuilds the
  preset codeloop ships now plus the overrides and compares the result with config.toml
  field by field; a field that differs fails by its dotted name. The overrides
  themselves are listed as taken on trust, since nothing can re-derive a user's choice.
- a user's own file: its path and sha256 are recorded, and the config is named as taken
  on trust (nothing in the session can rebuild it);
- made some other way (a script that builds a config in code and cannot name a preset):
  recorded as taken on trust, with the maker's reason.

The record is one small file, `config-origin.json`, hashed into the round digests
(`loop/digest.py`), so a later rewrite of it shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop import config as session_config
from codeloop import store
from codeloop.errors import ConfigError

ORIGIN_FILE = "config-origin.json"


def _plain(config: session_config.SessionConfig) -> dict[str, Any]:
    """Every field of a config as JSON values, unset ones as None (so an override can
    unset a field the preset sets)."""
    return config.model_dump(mode="json", by_alias=True)


def overrides_of(base: Any, wanted: Any) -> dict[str, Any]:
    """The nested tables of `wanted` whose values differ from `base` (lists whole)."""
    found: dict[str, Any] = {}
    for key, value in wanted.items():
        old = base.get(key) if isinstance(base, dict) else None
        if isinstance(value, dict) and isinstance(old, dict):
            inner = overrides_of(old, value)
            if inner:
                found[key] = inner
        elif not isinstance(base, dict) or key not in base or value != old:
            found[key] = value
    return found


def _merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overrides.items():
        old = merged.get(key)
        merged[key] = (
            _merged(old, value) if isinstance(value, dict) and isinstance(old, dict) else value
        )
    return merged


def dotted_fields(overrides: dict[str, Any], prefix: str = "") -> list[str]:
    """The dotted names of the fields an overrides table sets."""
    names: list[str] = []
    for key, value in overrides.items():
        name = f"{prefix}{key}"
        names += dotted_fields(value, f"{name}.") if isinstance(value, dict) else [name]
    return names


def from_preset(name: str, config: session_config.SessionConfig) -> dict[str, Any]:
    """The record of a config made from preset `name` (with whatever fields differ)."""
    text = session_config.preset_text(name)
    preset = session_config.parse(text, f"preset {name}")
    return {
        "kind": "preset",
        "preset": name,
        "preset_sha256": store.sha256_bytes(text.encode("utf-8")),
        "overrides": overrides_of(_plain(preset), _plain(config)),
    }


def from_file(path: str | Path) -> dict[str, Any]:
    """The record of a config read from a user's own file."""
    source = Path(path)
    return {"kind": "file", "file": str(source), "file_sha256": store.sha256_file(source)}


def on_trust(why: str) -> dict[str, Any]:
    """The record of a config whose maker says it cannot be rebuilt, and why: verify names
    it as taken on trust with that reason (never as rebuilt)."""
    return {"kind": "trust", "why": why}


def record(root: str | Path, origin: dict[str, Any]) -> Path:
    """Write a session's origin record (once, when the session is created)."""
    return store.write_json(Path(root) / ORIGIN_FILE, origin)


@dataclass(frozen=True)
class Rebuilt:
    """What the origin record gives: the rebuilt config (None when it cannot be rebuilt),
    why not, and what in it is taken on trust."""

    config: session_config.SessionConfig | None
    why_not: str = ""
    trusted: str = ""


def rebuild(root: str | Path) -> Rebuilt:
    """The session's config rebuilt from its origin record, with what stays on trust."""
    path = Path(root) / ORIGIN_FILE
    origin = store.read(path, None)  # a corrupt record raises IntegrityError: a failure
    if origin is None:
        return Rebuilt(None, f"no {ORIGIN_FILE} (a session made by hand or before it existed)")
    if origin.get("kind") == "file":
        return Rebuilt(
            None,
            f"it came from the user's own file {origin.get('file')} "
            f"(sha256 {str(origin.get('file_sha256'))[:12]}), which the session cannot rebuild",
        )
    if origin.get("kind") == "trust":
        return Rebuilt(None, f"its maker recorded it as taken on trust: {origin.get('why')}")
    if origin.get("kind") != "preset":
        raise ConfigError(f"{path}: kind {origin.get('kind')!r} is not 'preset', 'file' or 'trust'")
    name = str(origin.get("preset"))
    try:
        text = session_config.preset_text(name)
    except ConfigError as error:
        return Rebuilt(None, f"{path.name}: {error}")
    shipped = store.sha256_bytes(text.encode("utf-8"))
    if shipped != origin.get("preset_sha256"):
        return Rebuilt(
            None,
            f"preset {name} as codeloop ships it now (sha256 {shipped[:12]}) is not the one "
            f"the session recorded ({str(origin.get('preset_sha256'))[:12]}); verify with "
            "the codeloop version that made the session",
        )
    overrides = origin.get("overrides") or {}
    base = _plain(session_config.parse(text, f"preset {name}"))
    config = session_config.validate(_merged(base, overrides), f"{path.name} overrides")
    fields = dotted_fields(overrides)
    trusted = f"overrides of preset {name}: {', '.join(fields)}" if fields else ""
    return Rebuilt(config, trusted=trusted)


def differences(saved: Any, rebuilt: Any, where: str = "") -> list[str]:
    """The dotted fields where two plain configs differ, as `field (config.toml X, rebuilt Y)`."""
    if isinstance(saved, dict) and isinstance(rebuilt, dict):
        found: list[str] = []
        for key in sorted(set(saved) | set(rebuilt)):
            inner = f"{where}.{key}" if where else key
            found += differences(saved.get(key), rebuilt.get(key), inner)
        return found
    if saved == rebuilt:
        return []
    return [f"{where} (config.toml {saved!r}, rebuilt {rebuilt!r})"]


def compare(root: str | Path) -> tuple[list[str], Rebuilt]:
    """(fields where config.toml differs from its rebuilt config, the rebuild)."""
    rebuilt = rebuild(root)
    if rebuilt.config is None:
        return [], rebuilt
    saved = session_config.load(store.SessionPaths(root).config)
    return differences(_plain(saved), _plain(rebuilt.config)), rebuilt
