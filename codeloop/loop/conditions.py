"""The conditions an answer was generated under, recorded once per attempt file.

`verify --regenerate` asks the recorded weights again for a recorded answer and compares
the text. That is exact only if the second generation runs under the conditions of the
first: the same engine and version, the same weights file, the same seed and sampling
settings, and, for engines whose kernels are not batch-invariant, the same batch. So
each answering phase records, beside its answers (`PHASE-attempt.json`), in
`PHASE.generation.json`:

- `conditions`: a short list (one entry per distinct set; a phase resumed on another
  machine adds a second) of what the engine said about itself when it started: engine
  kind and package versions, model, revision, the weights file's sha256, the adapter's,
  precision, device, threads, KV cache type, and the session settings that shape an
  answer (seed, max_tokens, min_p, top_p, batch_size);
- `calls`: each engine call in order, as the `TASK:ATTEMPT` keys it asked, its
  temperature and which conditions it ran under. An answer's call tells whether it came
  from a batch and which neighbours shared it.

The record is the answers' provenance, not an input of the decision: finish does not
list it among its inputs (a run killed and resumed splits its calls differently from
an uninterrupted one, with the same answers), while the round's digest covers it, so a
later edit of it shows (`loop/digest.py`).

What the engines guarantee (and so what a regeneration can reproduce):

- replay: answers from a file; never depends on a batch.
- hf: every request samples from its own seeded generator, but a call is decoded in
  slices of `batch_size` left-padded sequences, and float kernels of a batched forward
  pass need not give the bits of a lone one. An answer asked alone is exact; one decoded
  in a slice is exact when that slice is decoded again (same prompts, order, seeds,
  threads, versions and device).
- llamacpp: one sampler per sequence, seeded by its request, but sequences share a
  continuous batch and prompt prefixes cached by earlier calls, whose state is not
  recorded; llama.cpp does not promise batch-invariant kernels. An answer that differs
  when asked alone, and again when its whole call is decoded again, is named as not
  reproducible here, not as a forgery.
- vllm, openai: batching is the server's; the same as llama.cpp, and an OpenAI-compatible
  server does not say which engine version it runs.
"""

from __future__ import annotations

import contextlib
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from codeloop import __version__, store
from codeloop.config import SessionConfig
from codeloop.errors import CodeloopError
from codeloop.models import resolve
from codeloop.paths import cache_root

SUFFIX = ".generation.json"
"""How the record of an attempt file is named: `PHASE-attempt.json` -> `PHASE.generation.json`."""
BATCH_INVARIANT = frozenset({"replay", "llamacpp"})
"""Engines whose answer never depends on what shares its batch. llama.cpp in process is
built so (`engines/llamacpp_batch.py`: a stream of cells per sequence, one attention
kernel, one token per sequence per step, a prefix cache that restores the very bytes)
and tested so (tests/test_engine_llamacpp.py: batched greedy equals one by one, a seeded
sample ignores its neighbours and their order, prefix sharing changes no output), under
the same threads and KV type, which regeneration sets as recorded."""
SLICED = frozenset({"hf"})
"""Engines that decode a call in fixed slices of `batch_size`, each decoded again exactly."""
PACKAGES = {
    "hf": ("torch", "transformers", "peft"),
    "llamacpp": ("llama_cpp_python", "gguf"),
    "vllm": ("vllm", "torch"),
}
"""The packages whose version decides an engine's numbers."""
SETTINGS = ("seed", "max_tokens", "min_p", "top_p", "batch_size")
"""The session settings an answer was asked under, compared with config.toml's."""
REPRODUCIBLE = ("threads", "kv_cache")
"""Conditions a regeneration sets to the recorded value instead of taking this machine's."""
ENVIRONMENT = (
    "versions",
    "model",
    "revision",
    "weights_sha256",
    "weights_type",
    "adapter_merged",
    "precision",
    "device",
    "share_prefix",
)
"""Conditions of the machine and its files: a difference here cannot be undone by verify."""


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def versions(kind: str) -> dict[str, str | None]:
    """codeloop's version and the versions of the packages that compute `kind`'s answers."""
    return {"codeloop": __version__} | {name: _version(name) for name in PACKAGES.get(kind, ())}


def _cpu() -> str:
    """The CPU's model name: kernels (AVX-512, AMX) and so the bits differ between CPUs."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _weight_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    patterns = ("*.safetensors", "*.bin", "*.gguf", "config.json")
    return sorted({file for pattern in patterns for file in path.glob(pattern) if file.is_file()})


def weights_sha256(model: str, revision: str | None = None) -> str | None:
    """The sha256 of the model's weights as found here: a GGUF file's, or one over a local
    folder's weight files and config (None for a hub id: its revision names it).

    Hashing is cached by file path, size and modification time (cache_root()), so each
    phase pays for it once per model file, not once per start."""
    ref = resolve(model, revision)
    files = _weight_files(Path(ref.path)) if ref.local else []
    if not files:
        return None
    cache_file = cache_root() / "weights-sha256.json"
    try:
        cache = store.read(cache_file, {})
    except (CodeloopError, OSError, ValueError):  # a corrupt cache is only a slower start
        cache = {}
    found: dict[str, str] = {}
    for file in files:
        stat = file.stat()
        key = f"{file.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
        if key not in cache:
            cache[key] = store.sha256_file(file)
        found[file.name] = cache[key]
    with contextlib.suppress(OSError):  # a cache that cannot be written: hashed again
        store.write_json(cache_file, cache)
    return found[files[0].name] if Path(ref.path).is_file() else store.sha256_json(found)


def _device(engine: Any, kind: str) -> tuple[str, int | None]:
    """(device, threads) the engine computes on."""
    if kind == "hf":
        import torch

        device = str(getattr(engine, "device", "cpu"))
        if device.startswith("cuda"):
            return f"cuda: {torch.cuda.get_device_name()}", None
        return f"cpu: {_cpu()}", torch.get_num_threads()
    if kind == "llamacpp":
        return f"cpu: {_cpu()}", getattr(engine, "threads", None)
    if kind == "vllm":
        return "gpu", None
    return "n/a", None


def observe(engine: Any, config: SessionConfig) -> dict[str, Any]:
    """The conditions `engine` (started, its adapter loaded) generates under now."""
    info = engine.info()
    kind = str(info.get("engine", config.engine.kind))
    device, threads = _device(engine, kind)
    if kind == "replay":
        weights = (
            store.sha256_file(config.engine.replay_path) if config.engine.replay_path else None
        )
    elif kind == "openai":
        weights = None
    else:
        weights = weights_sha256(config.engine.model, config.engine.revision)
    decoder = getattr(engine, "decoder", None)
    engine_settings = config.engine
    return {
        "engine": kind,
        "versions": versions(kind),
        # (the replay engine's model is its file, named by weights_sha256, not its path)
        "model": None if kind == "replay" else info.get("model"),
        "revision": info.get("revision"),
        "weights_sha256": weights,
        "weights_type": info.get("weights"),
        "adapter_merged": info.get("adapter_merged"),
        "adapter_sha256": info.get("adapter_sha256"),
        "precision": info.get("precision"),
        "device": device,
        "threads": threads,
        "kv_cache": info.get("kv_cache") or getattr(decoder, "kv_type", None),
        "share_prefix": getattr(engine, "share_prefix", None),
        "base_url": info.get("base_url"),
        "seed": config.seed,
        "max_tokens": engine_settings.max_tokens,
        "min_p": engine_settings.min_p,
        "top_p": engine_settings.top_p,
        "batch_size": engine_settings.batch_size,
    }


def path_for(attempt_file: Path) -> Path:
    """The generation record beside an attempt file."""
    return attempt_file.with_name(attempt_file.name.removesuffix("-attempt.json") + SUFFIX)


def empty() -> dict[str, Any]:
    """An attempt file's generation record before any call."""
    return {"conditions": [], "calls": []}


def record_call(
    generation: dict[str, Any], conditions: dict[str, Any], temperature: float, keys: list[str]
) -> None:
    """Add one engine call (its keys in the order asked) to an attempt file's record; the
    conditions are stored once, and each call names the entry it ran under."""
    known = generation.setdefault("conditions", [])
    if conditions not in known:
        known.append(conditions)
    generation.setdefault("calls", []).append(
        {"conditions": known.index(conditions), "temperature": temperature, "keys": list(keys)}
    )


def against_config(recorded: dict[str, Any], config: SessionConfig) -> list[str]:
    """The settings an answer was asked under that are not config.toml's, by name: the
    answer was not asked under this session's config (or the record was edited)."""
    now = {"seed": config.seed} | {
        name: getattr(config.engine, name) for name in SETTINGS if name != "seed"
    }
    now["engine"] = config.engine.kind
    return [
        f"{name} {recorded.get(name)!r} (config.toml {value!r})"
        for name, value in now.items()
        if name in recorded and recorded.get(name) != value
    ]


def unreproducible(recorded: dict[str, Any], here: dict[str, Any]) -> list[str]:
    """The recorded conditions this machine cannot reproduce, by name (recorded, here)."""
    found = []
    for name in (*ENVIRONMENT, *REPRODUCIBLE):
        if name not in recorded:
            continue
        old, new = recorded.get(name), here.get(name)
        if name == "versions" and isinstance(old, dict) and isinstance(new, dict):
            found += [
                f"{package} {old.get(package)} (here {new.get(package)})"
                for package in sorted(set(old) | set(new))
                if old.get(package) != new.get(package)
            ]
        elif old != new:
            found.append(f"{name} {old!r} (here {new!r})")
    return found
