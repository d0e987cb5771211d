"""`verify --recheck` under `audit.rule = "likelihood"`: each side's scores scored again.

A likelihood audit decides on numbers, not verdicts: each side's `likelihood.json` holds
the mean per-token log-likelihood its weights give every audit task's reference program
(`evaluate/likelihood.py`). A forger who nudges the candidate's numbers up, and rewrites
every sha256 after them, leaves a decision that `verify` recomputes from the forged
numbers and agrees with. The scorer is deterministic (float32, no dropout, one sequence
at a time, no padding), so the recheck scores the same references with the retained
weights again and compares each task's number within `TOLERANCE`:

- the parent: the base model (round 1) or the parent adapter, which an accepted round
  keeps;
- the candidate: the round's adapter while it exists (accepted). A rejected candidate's
  weights are deleted by design: its scores are named as not re-scorable, on trust.

The tasks scored are rebuilt as the phase chose them (`audit.likelihood_tasks`), so a
task dropped from or added to a scores file fails by id; the binding (weights, base
model, precision, prompt, conversation form, task list) must be the one the round's
config gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop import store
from codeloop.engines.base import adapter_sha256
from codeloop.evaluate import likelihood
from codeloop.loop.audit import LIKELIHOOD, likelihood_binding, likelihood_tasks
from codeloop.loop.common import Round
from codeloop.loop.regenerate import side_weights

TOLERANCE = 1e-5
"""The largest difference between a recorded and a re-scored mean log-likelihood (nats
per token) that still counts as the same number: float32 on another CPU may round the
last bits differently; a forged score moves far more."""
SIDES = (("audit-parent", "parent"), ("audit-candidate", "candidate"))


@dataclass(frozen=True)
class Rescored:
    """One side's scores file judged: holds, fails (with why), or is taken on trust."""

    file: str
    ok: bool
    detail: str = ""
    trusted: bool = False


class Rescorer:
    """Scores references again, each (weights, tasks) once per verify run: a kept
    candidate is the next round's parent, with the same scores."""

    def __init__(self) -> None:
        self._done: dict[tuple[Any, ...], dict[str, float]] = {}

    def scores(self, r: Round, adapter: str | None, tasks: list[Any]) -> dict[str, float]:
        cfg = r.config
        base = cfg.train.base_model or cfg.engine.model
        key = (
            base,
            adapter_sha256(adapter),
            cfg.engine.precision,
            cfg.export.conversation,
            tuple(task.id for task in tasks),
        )
        if key not in self._done:
            self._done[key] = likelihood.score_tasks(
                base, adapter, cfg.engine.precision, tasks, cfg.export.conversation
            )
        return self._done[key]

    def judge(self, r: Round, phase: str, side: str) -> Rescored | None:
        """One side's likelihood.json against its scores computed again (None: the side
        wrote none)."""
        name = f"{phase}/{LIKELIHOOD}"
        path: Path = r.path(phase) / LIKELIHOOD
        if not path.is_file():
            return None
        saved = store.read(path)
        adapter, deleted = side_weights(r, side)
        recorded = {str(row["id"]): float(row["mean_logprob"]) for row in saved["scores"]}
        binding = saved.get("binding") or {}
        if deleted:
            bound = str(binding.get("adapter_sha256"))[:12]
            why = f"the candidate's weights are deleted (rejected), so {name} (bound to {bound})"
            return Rescored(name, True, f"not re-scorable: {why} cannot be scored again", True)
        tasks = likelihood_tasks(r)
        expected = {
            **likelihood_binding(r, adapter),
            "tasks_sha256": store.sha256_json([task.id for task in tasks]),
        }
        keys = set(expected) | set(binding)
        differing = sorted(k for k in keys if expected.get(k) != binding.get(k))
        if differing:
            return Rescored(
                name,
                False,
                f"{name}: bound to other {', '.join(differing)} than the round's retained "
                "weights and config give",
            )
        return Rescored(name, *_compare(name, recorded, self.scores(r, adapter, tasks)))


def _compare(name: str, recorded: dict[str, float], rescored: dict[str, float]) -> tuple[bool, str]:
    """(holds, why not): every task scored, none added, each number within TOLERANCE."""
    problems = [f"{task}: not in the file" for task in rescored if task not in recorded]
    problems += [f"{task}: not one the audit scores" for task in recorded if task not in rescored]
    problems += [
        f"{task}: recorded {recorded[task]:.6f}, re-scored {value:.6f}"
        for task, value in rescored.items()
        if task in recorded and abs(recorded[task] - value) > TOLERANCE
    ]
    return not problems, (
        f"{name}: {len(problems)} score(s) not what the weights give (tolerance {TOLERANCE}): "
        + "; ".join(problems[:3])
    )


def rescore(r: Round, rescorer: Rescorer | None = None) -> list[Rescored]:
    """Both audit sides' likelihood scores of round `r`, each judged."""
    rescorer = rescorer or Rescorer()
    found = [rescorer.judge(r, phase, side) for phase, side in SIDES]
    return [item for item in found if item is not None]
