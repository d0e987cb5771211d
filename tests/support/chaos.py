"""The chaos machinery: kill a round while its phases work, then compare with a calm run.

Shared by the chaos tests (`tests/test_loop_e2e.py`, the fixture's tiny round) and
`bench/chaos.py` (a cpu-demo round with the bundled model). Nothing here runs
model-written code: rounds run in `codeloop run` processes, whose sandbox does.
"""

from __future__ import annotations

import contextlib
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from codeloop import store
from codeloop.loop.common import PHASES

# Timings, and how a run got there (resumed_from: the checkpoint a resume started from;
# calls: the engine calls that asked an attempt file's answers, split where a kill fell).
VOLATILE = {
    "calls",
    "heartbeat_at",
    "seconds",
    "wall_seconds",
    "train_seconds",
    "tokens_per_s",
    "dataset",
    "resumed_from",
}


def run(session: Path, rounds: int = 1, output: IO[str] | None = None) -> subprocess.Popen[str]:
    """`codeloop run` on `session`; its output piped (read it), or appended to `output`."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codeloop",
            "run",
            "--session",
            str(session),
            "--rounds",
            str(rounds),
        ],
        stdout=output if output is not None else subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def artifacts(root: Path) -> dict[str, object]:
    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if "checkpoint-" in relative or path.name == "progress.json" or not path.is_file():
            continue
        if path.suffix == ".json":
            found[relative] = strip(json.loads(path.read_text()))
        elif path.name in ("train.jsonl", "adapter_model.safetensors"):
            found[relative] = store.sha256_file(path)
    return found


def saved_answers(folder: Path) -> set[str]:
    """The model calls whose answers a round has saved, as the replay engine logs them:
    `adapter_sha256:task_id:attempt` (the same task is asked of parent and candidate)."""
    keys: set[str] = set()
    for path in folder.rglob("*-attempt.json"):
        saved = store.read(path)
        adapter = saved["binding"]["adapter_sha256"] or "none"
        keys |= {
            f"{adapter}:{task}:{attempt}"
            for task, tried in saved["attempts"].items()
            for attempt in tried
        }
    return keys


def asked_again(log: list[str], kills: list[tuple[int, set[str]]]) -> list[str]:
    """Model calls made after a kill for answers that were saved before it."""
    return [key for position, saved in kills for key in log[position:] if key in saved]


def phase_process(launcher: subprocess.Popen[str]):
    """The launcher's running phase process, or None."""
    import psutil

    try:
        for child in psutil.Process(launcher.pid).children():
            with contextlib.suppress(psutil.Error):  # gone, or a zombie not yet reaped
                if "phase" in child.cmdline():
                    child.create_time()  # cached: due() can read it after the exit
                    return child
    except psutil.Error:
        pass
    return None


class Chaos:
    """Kills a round while its phases work, alternating launcher and phase process.

    A kill is due in phase P when P's process is past start-up (it wrote a heartbeat
    after it started) and, for phases that save as they go, when it saved something
    since the last kill (an answer, a training checkpoint): so kills land in real
    work, and every restart makes progress.
    """

    def __init__(
        self,
        session: Path,
        log: Path,
        per_phase: int = 3,
        poll_s: float = 0.01,
        output: IO[str] | None = None,
    ) -> None:
        """`log`: the call log; `poll_s`: how often to look for a due kill (a longer
        round can afford to look less often); `output`: where launchers write (a
        round with more output than a pipe holds must not block on it)."""
        self.session, self.log = session, log
        self.poll_s, self.output = poll_s, output
        self.folder = session / "round-000001"
        self.budget = dict.fromkeys(PHASES, per_phase)
        self.kills: list[tuple[str, str]] = []  # (phase, "launcher" | "phase")
        self.positions: list[tuple[int, set[str]]] = []
        self.marks: dict[str, object] = {}

    def progress_mark(self, phase: str) -> object:
        if phase == "train":  # the newest checkpoint's step (older ones are pruned)
            steps = [int(p.name.split("-")[1]) for p in self.folder.glob("adapter/checkpoint-*")]
            return max(steps, default=0)
        if phase in ("collect", "baseline", "candidate", "audit-parent", "audit-candidate"):
            return len(saved_answers(self.folder))
        return None

    def due(self, process) -> str | None:
        beat = store.read(self.folder / "progress.json", None)
        if not beat or self.budget.get(beat["phase"], 0) <= 0:
            return None
        phase = beat["phase"]
        if (self.folder / f"{phase}.json").exists():
            return None
        if (self.folder / "progress.json").stat().st_mtime < process.create_time():
            return None  # the heartbeat is the previous run's: still starting up
        mark = self.progress_mark(phase)
        if mark is not None and (not mark or self.marks.get(phase) == mark):
            return None  # nothing saved since the last kill
        return phase

    def run(self, deadline: float) -> None:
        rng = random.Random(2026)
        while True:
            assert time.monotonic() < deadline, f"chaos run did not finish; kills: {self.kills}"
            launcher = run(self.session, output=self.output)
            while launcher.poll() is None:
                process = phase_process(launcher)
                phase = self.due(process) if process is not None else None
                if phase is None:
                    time.sleep(self.poll_s)
                    continue
                time.sleep(rng.uniform(0.0, 0.05))
                whom = "phase" if len(self.kills) % 2 else "launcher"
                (process if whom == "phase" else launcher).kill()
                if whom == "phase":
                    with contextlib.suppress(Exception):
                        process.wait(timeout=60)
                else:
                    launcher.wait(timeout=60)
                    with contextlib.suppress(Exception):
                        process.wait(timeout=60)  # dies with its launcher
                self.budget[phase] -= 1
                self.marks[phase] = self.progress_mark(phase)
                self.kills.append((phase, whom))
                lines = self.log.read_text().splitlines() if self.log.exists() else []
                self.positions.append((len(lines), saved_answers(self.folder)))
            launcher.wait(timeout=900)
            if launcher.returncode == 0:
                return
