"""Confirming the audit's flips by samples: a lost task counts only when sampling says so.

The greedy audit asks each model once per task. On a small model that answer is a coin
that lands differently after any change of weights: on cpu-demo's 32-task audit the
parent passes 1 to 3 tasks, and one flip decided every rejection recorded in
bench/RESULTS.md, while each rejected candidate was better held-out. So under the
`confirmed` rule (`audit.rule`), when the greedy audit lost any task, every task it
flipped (lost or gained) is asked again: `audit.confirm_samples` answers from the parent
and as many from the candidate, at `audit.confirm_temperature`, with the same seed for
sample i of a task on both sides, so that each sample is a pair. With the greedy answers
as one more pair, a task's loss counts when the candidate is significantly worse on its
pairs: a one-sided exact binomial test of the discordant pairs at 1/2, p <=
`audit.confirm_alpha` (at least 5 of 5 discordant pairs going the parent's way, 7 of 8
or 8 of 9). A gain counts by the same test the other way. Pooled over all flipped tasks,
the candidate must not be significantly worse either, so many small losses that no
single task confirms still reject it.

The gate can be confirmed the same way (`gate.confirm_samples`): the validation tasks
the greedy gate flipped are sampled on both sides, and the candidate is promising only
if it is significantly better there, pooled. Only the samples count there, not the
greedy pairs: those flips were chosen because the greedy answers differed, so they would
count the same coin twice, and a candidate whose greedy gains are noise (its weights
moved, its skill did not) then shows no gain. This asks for evidence of a gain before
the audit asks for the absence of a loss.

Answers are saved before they are checked and bound to the tasks and the adapter
(`Collector`), so a killed finish asks the model nothing twice; once both files are
complete, deciding reads them only (a rejected candidate's weights may be gone).
"""

from __future__ import annotations

from math import comb
from typing import Any

from codeloop import recipe, store
from codeloop.evaluate.scoring import sample_seed
from codeloop.loop.collect import Collector, check_answers
from codeloop.loop.common import Round
from codeloop.tasks.schema import Task

SEED_OFFSET = 1000
"""Confirmation sample i uses sample index SEED_OFFSET + i: other seeds than collect's."""
SIDES = ("parent", "candidate")
AUDIT = "audit-confirm"
GATE = "gate-confirm"
"""The round's folders of confirmation samples: the audit's flips and the gate's."""


def one_sided_p(wins: int, losses: int) -> float:
    """P(X >= wins) for X ~ Binomial(wins + losses, 1/2): how likely this many of the
    discordant pairs go one way if both sides were equally good (1.0 with none)."""
    n = wins + losses
    if n == 0:
        return 1.0
    return sum(comb(n, i) for i in range(wins, n + 1)) / 2**n


def folder(r: Round, name: str = AUDIT):
    return r.path(name)


def rows_file(r: Round, side: str, name: str = AUDIT):
    return folder(r, name) / f"{side}.json"


def _settings(r: Round, name: str) -> tuple[int, float]:
    """(samples per side, temperature) of the audit's or the gate's confirmation."""
    section = r.config.gate if name == GATE else r.config.audit
    return section.confirm_samples, section.confirm_temperature


class _Sampler(Collector):
    """Asks the confirmation's seeded answers per task; a row lists each one's verdict."""

    def __init__(self, *args: Any, name: str = AUDIT, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.samples, self.temperature = _settings(self.r, name)

    def _chunk(self, chunk: list[Task], attempts: dict[str, dict[str, str]]) -> list[dict]:
        passes: dict[str, list[bool]] = {task.id: [] for task in chunk}
        for index in range(self.samples):
            key = f"confirm-{index}"
            self._ask(
                attempts,
                [(task, key) for task in chunk],
                recipe.messages,
                self.temperature,
                lambda task, i=index: sample_seed(self.r.config.seed, task.id, SEED_OFFSET + i),
            )
            checks = check_answers(self.r, [(task, attempts[task.id][key]) for task in chunk])
            for task, check in zip(chunk, checks, strict=True):
                passes[task.id].append(check.passed)
        return [
            {
                "id": task.id,
                "language": task.language,
                "passed": any(passes[task.id]),
                "passes": passes[task.id],
            }
            for task in chunk
        ]


def complete(r: Round, side: str, ids: list[str], name: str = AUDIT) -> bool:
    saved = store.read(rows_file(r, side, name), None)
    return saved is not None and [row["id"] for row in saved["rows"]] == ids


def sample(r: Round, tasks: list[Task], adapters: dict[str, str | None], name: str = AUDIT) -> None:
    """Make sure both sides' confirmation answers exist for `tasks` (resumably), in the
    round's folder `name` (AUDIT or GATE)."""
    ids = [task.id for task in tasks]
    for side in SIDES:
        if not tasks or complete(r, side, ids, name):
            continue
        folder(r, name).mkdir(parents=True, exist_ok=True)
        _Sampler(
            r,
            f"{name}-{side}",
            tasks,
            adapters[side],
            explore=False,
            rows_file=rows_file(r, side, name),
            name=name,
        ).run()


def _saved_passes(r: Round, name: str, ids: list[str]) -> dict[str, dict[str, list[bool]]]:
    """Each side's sample verdicts per task id, refused when a task has none."""
    saved = {}
    for side in SIDES:
        data = store.read(rows_file(r, side, name), {"rows": []}) if ids else {"rows": []}
        saved[side] = {row["id"]: row["passes"] for row in data["rows"]}
    for task_id in ids:
        if task_id not in saved["parent"] or task_id not in saved["candidate"]:
            raise KeyError(f"no confirmation samples ({name}) for the flipped task {task_id}")
    return saved


def gate_evidence(r: Round, greedy: dict[str, Any]) -> dict[str, Any]:
    """Whether the samples confirm the gate's gain, from the saved rows only.

    `greedy`: the gate's `compare(baseline_rows, candidate_rows)`. Pooled over every
    flipped validation task's sample pairs (the greedy pairs left out), the candidate
    must pass where the parent fails significantly more often than the other way.
    """
    gate = r.config.gate
    flipped = [*greedy["gained_ids"], *greedy["lost_ids"]]
    saved = _saved_passes(r, GATE, flipped)
    tasks: list[dict[str, Any]] = []
    parent_only = candidate_only = 0
    for task_id in flipped:
        pairs = list(zip(saved["parent"][task_id], saved["candidate"][task_id], strict=True))
        parent_only += sum(p and not c for p, c in pairs)
        candidate_only += sum(c and not p for p, c in pairs)
        tasks.append(
            {
                "id": task_id,
                "flip": "gained" if task_id in greedy["gained_ids"] else "lost",
                "parent_passes": sum(p for p, _c in pairs),
                "candidate_passes": sum(c for _p, c in pairs),
                "pairs": len(pairs),
            }
        )
    pooled = one_sided_p(candidate_only, parent_only)
    return {
        "samples": gate.confirm_samples,
        "temperature": gate.confirm_temperature,
        "alpha": gate.confirm_alpha,
        "tasks": tasks,
        "pooled_parent_only": parent_only,
        "pooled_candidate_only": candidate_only,
        "pooled_p": pooled,
        "confirmed": pooled <= gate.confirm_alpha,
    }


def evidence(r: Round, greedy: dict[str, Any]) -> dict[str, Any]:
    """Which of the greedy audit's flips the samples confirm, from the saved rows only.

    `greedy`: `compare(parent_rows, candidate_rows)` of the audit. Returns the counted
    losses and gains, each flipped task's evidence, and the pooled test.
    """
    audit = r.config.audit
    # Without a greedy loss nothing needs confirming (and nothing was sampled).
    flipped = [*greedy["lost_ids"], *greedy["gained_ids"]] if greedy["lost_ids"] else []
    saved = _saved_passes(r, AUDIT, flipped)
    tasks: list[dict[str, Any]] = []
    parent_only = candidate_only = 0
    for task_id in flipped:
        lost = task_id in greedy["lost_ids"]
        pairs = list(zip(saved["parent"][task_id], saved["candidate"][task_id], strict=True))
        pairs.append((lost, not lost))  # the greedy answers are a pair too
        worse = sum(p and not c for p, c in pairs)
        better = sum(c and not p for p, c in pairs)
        parent_only, candidate_only = parent_only + worse, candidate_only + better
        p = one_sided_p(worse, better) if lost else one_sided_p(better, worse)
        tasks.append(
            {
                "id": task_id,
                "flip": "lost" if lost else "gained",
                "parent_passes": sum(p for p, _c in pairs),
                "candidate_passes": sum(c for _p, c in pairs),
                "pairs": len(pairs),
                "p": p,
                "counted": p <= audit.confirm_alpha,
            }
        )
    pooled = one_sided_p(parent_only, candidate_only)
    return {
        "rule": "confirmed",
        "samples": audit.confirm_samples,
        "temperature": audit.confirm_temperature,
        "alpha": audit.confirm_alpha,
        "tasks": tasks,
        "lost_ids": [t["id"] for t in tasks if t["flip"] == "lost" and t["counted"]],
        "gained_ids": [t["id"] for t in tasks if t["flip"] == "gained" and t["counted"]],
        "excused_ids": [t["id"] for t in tasks if not t["counted"]],
        "pooled_parent_only": parent_only,
        "pooled_candidate_only": candidate_only,
        "pooled_p": pooled,
        "pooled_worse": pooled <= audit.confirm_alpha,
    }
