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


def one_sided_p(wins: int, losses: int) -> float:
    """P(X >= wins) for X ~ Binomial(wins + losses, 1/2): how likely this many of the
    discordant pairs go one way if both sides were equally good (1.0 with none)."""
    n = wins + losses
    if n == 0:
        return 1.0
    return sum(comb(n, i) for i in range(wins, n + 1)) / 2**n


def folder(r: Round):
    return r.path("audit-confirm")


def rows_file(r: Round, side: str):
    return folder(r) / f"{side}.json"


class _Sampler(Collector):
    """Asks `audit.confirm_samples` seeded answers per task; a row lists each one's verdict."""

    def _chunk(self, chunk: list[Task], attempts: dict[str, dict[str, str]]) -> list[dict]:
        audit = self.r.config.audit
        passes: dict[str, list[bool]] = {task.id: [] for task in chunk}
        for index in range(audit.confirm_samples):
            key = f"confirm-{index}"
            self._ask(
                attempts,
                [(task, key) for task in chunk],
                recipe.messages,
                audit.confirm_temperature,
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


def complete(r: Round, side: str, ids: list[str]) -> bool:
    saved = store.read(rows_file(r, side), None)
    return saved is not None and [row["id"] for row in saved["rows"]] == ids


def sample(r: Round, tasks: list[Task], adapters: dict[str, str | None]) -> None:
    """Make sure both sides' confirmation answers exist for `tasks` (resumably)."""
    ids = [task.id for task in tasks]
    for side in SIDES:
        if not tasks or complete(r, side, ids):
            continue
        folder(r).mkdir(parents=True, exist_ok=True)
        phase = f"audit-confirm-{side}"
        _Sampler(r, phase, tasks, adapters[side], explore=False, rows_file=rows_file(r, side)).run()


def evidence(r: Round, greedy: dict[str, Any]) -> dict[str, Any]:
    """Which of the greedy audit's flips the samples confirm, from the saved rows only.

    `greedy`: `compare(parent_rows, candidate_rows)` of the audit. Returns the counted
    losses and gains, each flipped task's evidence, and the pooled test.
    """
    audit = r.config.audit
    # Without a greedy loss nothing needs confirming (and nothing was sampled).
    flipped = [*greedy["lost_ids"], *greedy["gained_ids"]] if greedy["lost_ids"] else []
    saved = {}
    for side in SIDES:
        data = store.read(rows_file(r, side), {"rows": []}) if flipped else {"rows": []}
        saved[side] = {row["id"]: row["passes"] for row in data["rows"]}
    tasks: list[dict[str, Any]] = []
    parent_only = candidate_only = 0
    for task_id in flipped:
        lost = task_id in greedy["lost_ids"]
        if task_id not in saved["parent"] or task_id not in saved["candidate"]:
            raise KeyError(f"no confirmation samples for the flipped audit task {task_id}")
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
