"""Sampling both models again, for the gate's and the audit's rules, and reading it back.

A greedy answer per task is one coin that lands differently after any change of
weights, so the rules in `codeloop/evaluate/guard.py` (the gate's and the audit's; see
docs/GUARD.md) ask both models again: `confirm_samples` answers per side at
`confirm_temperature`, with the same seed for sample i of a task on both sides, so that
each sample is a pair. Which tasks are sampled is the rule's choice
(`guard.gate_sample_ids`, `guard.audit_sample_ids`): only the greedy flips under the
`confirmed` and greedy-with-samples rules, every task under `paired`. This module owns
asking and saving, resumably; the verdicts are the guard's.

Answers are saved before they are checked and bound to the tasks, the prompt and the
adapter (`Collector`), so a killed finish asks the model nothing twice. Saved samples
count only while that binding holds: when they are reused (`complete`), and when a
decision reads them (`saved_passes`), each side's file must be bound to exactly the
tasks asked and to the weights that side's validation rows were answered with, so
samples of another adapter or task list can never decide a round (a rejected
candidate's weights may be gone by then, so the binding is read from its rows).
"""

from __future__ import annotations

from typing import Any

from codeloop import recipe, store
from codeloop.errors import IntegrityError
from codeloop.evaluate import guard
from codeloop.evaluate.guard import one_sided_p
from codeloop.evaluate.scoring import sample_seed
from codeloop.loop.collect import Collector, check_answers
from codeloop.loop.common import Round
from codeloop.tasks.schema import Task

__all__ = ["evidence", "one_sided_p", "sample", "saved_passes"]

SEED_OFFSET = 1000
"""Confirmation sample i uses sample index SEED_OFFSET + i: other seeds than collect's."""
SIDES = ("parent", "candidate")
AUDIT = "audit-confirm"
GATE = "gate-confirm"
"""The round's folders of confirmation samples: the audit's and the gate's."""
_ROWS_OF_SIDE = {"parent": "baseline-rows.json", "candidate": "candidate-rows.json"}
"""Where each side's adapter binding is read from: its answers on the validation tasks."""


def folder(r: Round, name: str = AUDIT):
    return r.path(name)


def rows_file(r: Round, side: str, name: str = AUDIT):
    return folder(r, name) / f"{side}.json"


def _settings(r: Round, name: str) -> tuple[int, float]:
    """(samples per side, temperature) of the audit's or the gate's confirmation."""
    section = r.config.gate if name.startswith(GATE) else r.config.audit
    return section.confirm_samples, section.confirm_temperature


def look_name(samples: int) -> str:
    """The folder of a sequential gate's look that brings each side to `samples` samples."""
    return f"{GATE}-look-{samples}"


class _Sampler(Collector):
    """Asks the confirmation's seeded answers per task; a row lists each one's verdict."""

    def __init__(
        self, *args: Any, name: str = AUDIT, span: tuple[int, int] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        samples, self.temperature = _settings(self.r, name)
        self.span = span or (0, samples)
        """Sample indices [first, last): a sequential gate's look asks only its new ones,
        with the seeds they would have had in one go."""

    def _chunk(self, chunk: list[Task], attempts: dict[str, dict[str, str]]) -> list[dict]:
        passes: dict[str, list[bool]] = {task.id: [] for task in chunk}
        keys = [f"confirm-{index}" for index in range(*self.span)]
        pairs = [(task, key) for key in keys for task in chunk]
        # every sample of the chunk in one engine call and one sandbox batch (Collector._ask)
        self._ask(
            attempts,
            pairs,
            recipe.messages,
            self.temperature,
            lambda task, key: sample_seed(
                self.r.config.seed, task.id, SEED_OFFSET + int(key.removeprefix("confirm-"))
            ),
        )
        checks = check_answers(self.r, [(task, attempts[task.id][key]) for task, key in pairs])
        for (task, _key), check in zip(pairs, checks, strict=True):
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


def expected_binding(r: Round, side: str, ids: list[str]) -> dict[str, Any]:
    """The binding a side's samples of `ids` must carry: those tasks, this prompt, and
    the adapter that side answered the validation tasks with."""
    answered = store.read(r.path(_ROWS_OF_SIDE[side]))
    return {
        "tasks_sha256": store.sha256_json(ids),
        "adapter_sha256": answered["binding"]["adapter_sha256"],
        "prompt_sha256": recipe.prompt_sha256(),
    }


def complete(r: Round, side: str, ids: list[str], name: str = AUDIT) -> bool:
    """Whether `side`'s samples of exactly `ids`, bound to its adapter, are all saved."""
    saved = store.read(rows_file(r, side, name), None)
    return (
        saved is not None
        and [row["id"] for row in saved["rows"]] == ids
        and saved.get("binding") == expected_binding(r, side, ids)
    )


def sample(
    r: Round,
    tasks: list[Task],
    adapters: dict[str, str | None],
    name: str = AUDIT,
    span: tuple[int, int] | None = None,
) -> None:
    """Make sure both sides' confirmation answers exist for `tasks` (resumably), in the
    round's folder `name` (AUDIT, GATE or a look's); `span`: the sample indices to ask
    (default: all of the rule's)."""
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
            span=span,
        ).run()


def saved_passes(
    r: Round, name: str, ids: list[str], samples: int | None = None
) -> dict[str, dict[str, list[bool]]]:
    """Each side's sample verdicts per task id, refused unless each side's file holds
    exactly `ids`, every one complete (`samples` each, default the rule's), bound to that
    side's adapter and this prompt."""
    if not ids:
        return {side: {} for side in SIDES}
    saved = {}
    for side in SIDES:
        path = rows_file(r, side, name)
        data = store.read(path, None)
        if data is None:
            raise IntegrityError(f"{path}: no confirmation samples for {len(ids)} task(s)")
        found = [row["id"] for row in data["rows"]]
        if found != ids:
            missing = next((i for i in ids if i not in found), None)
            raise IntegrityError(
                f"{path}: holds samples of {len(found)} task(s), the rule asks for "
                f"{len(ids)}" + (f" (none for {missing})" if missing else "")
            )
        expected = expected_binding(r, side, ids)
        if data.get("binding") != expected:
            changed = [k for k in expected if (data.get("binding") or {}).get(k) != expected[k]]
            raise IntegrityError(
                f"{path}: samples bound to other {', '.join(changed)} than the {side}'s "
                f"answers in {_ROWS_OF_SIDE[side]}; they cannot decide this round"
            )
        wanted = samples if samples is not None else _settings(r, name)[0]
        short = [row["id"] for row in data["rows"] if len(row["passes"]) != wanted]
        if short:
            raise IntegrityError(f"{path}: {short[0]} has not {wanted} samples")
        saved[side] = {row["id"]: row["passes"] for row in data["rows"]}
    return saved


def saved_looks(r: Round, ids: list[str], upto: int | None = None) -> dict[str, dict]:
    """A sequential gate's samples so far: each look's saved file in order (until the
    first look not yet asked, or `upto` samples), concatenated per task and side."""
    joined: dict[str, dict[str, list[bool]]] = {side: {i: [] for i in ids} for side in SIDES}
    previous = 0
    for k in r.config.gate.looks:
        if (upto is not None and k > upto) or not all(
            rows_file(r, side, look_name(k)).exists() for side in SIDES
        ):
            break
        found = saved_passes(r, look_name(k), ids, samples=k - previous)
        for side in SIDES:
            for i in ids:
                joined[side][i] += found[side][i]
        previous = k
    return joined


def evidence(r: Round, greedy: dict[str, Any], ids: list[str] | None = None) -> dict[str, Any]:
    """The audit rule's sample evidence from the saved rows only; `ids`: every audit task
    (default: the greedy flips, enough for the `confirmed` rule)."""
    rule = r.config.audit
    ids = ids if ids is not None else [*greedy["lost_ids"], *greedy["gained_ids"]]
    sides = saved_passes(r, AUDIT, guard.audit_sample_ids(rule, greedy, ids))
    return guard.audit_verdict(rule, greedy, sides, ids)[1] or {}
