"""One phase of one round: `codeloop phase --session S --round R --phase P [--resume]`.

Each phase is idempotent: it writes PHASE.json last, atomically, and a phase that
finds its PHASE.json is done. Everything between is resumable work bound to its
inputs. Adapter paths are stored relative to the session folder, so that a
session can be moved (and two sessions compared file by file).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from codeloop import clock, store
from codeloop import config as session_config
from codeloop.engines.base import adapter_sha256
from codeloop.errors import ConfigError, IntegrityError
from codeloop.loop import audit, export, finish, gate, prepare
from codeloop.loop.collect import Collector
from codeloop.loop.common import PHASES, Paused, Round
from codeloop.sandbox.dispatch import use_cluster


def _collect(r: Round, resume: bool) -> dict[str, Any]:
    return Collector(r, "collect", r.tasks("train"), r.parent_path, explore=True).run()


def _baseline(r: Round, resume: bool) -> dict[str, Any]:
    exported = r.result("export")
    if not exported["ready"]:
        return {"completed": True, "skipped": True, "reason": exported["reason"]}
    tasks = r.tasks("validation")
    return Collector(r, "baseline", tasks, r.parent_path, explore=False).run()


def _train(r: Round, resume: bool) -> dict[str, Any]:
    exported = r.result("export")
    if not exported["ready"]:
        return {
            "completed": True,
            "skipped": True,
            "reason": f"export not ready: {exported['reason']}",
        }
    data = r.path("train.jsonl")
    if store.sha256_file(data) != exported["data_sha256"]:
        raise IntegrityError(
            f"{data}: verified training data changed after export (sha256 differs from "
            "export.json); restore it or delete export.json to export again"
        )
    from codeloop.train.trainer import TrainRequest, run

    cfg = r.config
    parent = r.parent_path
    outcome = run(
        TrainRequest(
            dataset=data,
            manifest=r.path("train.jsonl.manifest.json"),
            output=r.candidate_adapter,
            base=cfg.train.base_model or cfg.engine.model,
            train=cfg.train,
            export=cfg.export,
            languages=list(cfg.tasks.languages),
            seed=cfg.seed + r.number,
            initial_adapter=Path(parent) if parent and cfg.train.start == "parent" else None,
            resume=resume,
            pause_file=r.session.pause_file,
            precision=cfg.engine.precision,
            echo=False,
        )
    )
    if outcome.status == "paused":
        raise Paused(f"round {r.number}: training paused at step {outcome.steps}; run again")
    return {
        "completed": True,
        "skipped": False,
        "steps": outcome.steps,
        "adapter_sha256": adapter_sha256(r.candidate_adapter),
    }


def _candidate(r: Round, resume: bool) -> dict[str, Any]:
    trained = r.result("train")
    if trained.get("skipped"):
        return {"completed": True, "skipped": True, "reason": trained["reason"]}
    return Collector(
        r, "candidate", r.tasks("validation"), str(r.candidate_adapter), explore=False
    ).run()


def _audit(phase: str):
    def run(r: Round, resume: bool) -> dict[str, Any]:
        return audit.run(r, phase, resume)

    return run


RUNNERS = {
    "prepare": prepare.run,
    "collect": _collect,
    "export": export.run,
    "baseline": _baseline,
    "train": _train,
    "candidate": _candidate,
    "gate": gate.run,
    "audit-parent": _audit("audit-parent"),
    "audit-candidate": _audit("audit-candidate"),
    "finish": finish.run,
}


def open_round(session: str | Path, number: int) -> Round:
    paths = store.SessionPaths(Path(session).resolve())
    if not paths.config.exists():
        raise ConfigError(f"{paths.config}: not a codeloop session (no config.toml)")
    return Round(paths, session_config.load(paths.config), number)


def run_phase(session: str | Path, number: int, phase: str, resume: bool = False) -> bool:
    """Run one phase; False when it was already done."""
    if phase not in RUNNERS:
        raise ConfigError(f"unknown phase {phase!r}; phases: {', '.join(PHASES)}")
    r = open_round(session, number)
    r.folder.mkdir(parents=True, exist_ok=True)
    if r.phase_done(phase):
        return False
    use_cluster(r.config.cluster.address, r.config.cluster.chunk)
    earlier = PHASES[: PHASES.index(phase)]
    missing = [p for p in earlier if not r.phase_done(p)]
    if missing:
        raise ConfigError(f"round {number}: phase {phase} needs {missing[0]} to finish first")
    r.progress(phase)
    clock.reset()
    started = time.monotonic()
    value = RUNNERS[phase](r, resume)
    # What this process waited on (a resumed phase: since it resumed); written before
    # the phase's result, whose time marks the phase's end (bench/learning.py).
    store.write_json(
        r.path(phase + clock.SUFFIX),
        {"seconds": clock.spent(), "wall_seconds": round(time.monotonic() - started, 3)},
    )
    store.write_json(r.path(f"{phase}.json"), value)
    r.progress(phase, 1, 1)
    return True
