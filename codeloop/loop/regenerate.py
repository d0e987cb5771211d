"""`verify --regenerate N`: ask the recorded weights again for N recorded answers.

`--recheck` re-runs a recorded answer, so a verdict that is not its answer's fails; but
nothing there ties the answer to the model said to have written it: a forger can put a
passing program (the reference solution, or the parent's sample) where the candidate's
answer was, with its verdict, and every re-run agrees. Regenerating it can: the answer
is a function of the weights, the prompt, the sampling settings and the seed, all of
which the session records (the adapter's sha256 in each rows file's binding, the prompt
in `recipe`, temperatures and seeds from the config and the task id, exactly as the
phases computed them).

Which answers: N picked at random with a printed seed, weighted towards those a decision
rests on (the gate's and audit's confirmation samples and greedy rows count three
times a collect answer). Each is regenerated alone (batch 1) with its recorded seed and
sampling settings and compared as text. Engines where an answer does not depend on its
batch neighbours give the same text (the replay engine always; hf and llama.cpp with
per-request seeds where their kernels are batch-invariant); where they are not, a
difference is reported as such, never hidden: the check is exact or it fails.

Not regenerable, and named so (never reported as identical): a rejected candidate's
answers (its weights are deleted by design; the rows keep its adapter's sha256), and
correction turns (their prompt holds the public tests' feedback on the greedy answer).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop import recipe, store
from codeloop.engines import create_for
from codeloop.evaluate.scoring import sample_seed
from codeloop.loop.common import Round
from codeloop.loop.confirm import AUDIT, GATE, SEED_OFFSET, SIDES
from codeloop.tasks.schema import Task

DECISIVE_WEIGHT = 3
"""How much likelier a pick is for an answer a decision rests on than a collect answer."""


@dataclass(frozen=True)
class Recorded:
    """One recorded answer: where it is saved, who answered it and how it was asked."""

    round: int
    file: str
    """The attempt file that saved it, relative to the round folder."""
    side: str
    """`parent` or `candidate`: whose weights answered."""
    task: Task
    attempt: str
    answer: str
    decisive: bool

    @property
    def label(self) -> str:
        return f"round {self.round} {self.file} {self.task.id} {self.attempt}"


def _files(folder: Path) -> list[tuple[str, str, bool]]:
    """(attempt file, side, decisive) of every answering phase of a round."""
    found = [
        ("collect-attempt.json", "parent", False),
        ("baseline-attempt.json", "parent", True),
        ("candidate-attempt.json", "candidate", True),
        ("audit-parent/audit-parent-attempt.json", "parent", True),
        ("audit-candidate/audit-candidate-attempt.json", "candidate", True),
    ]
    found += [
        (f"{name}/{name}-{side}-attempt.json", side, True)
        for name in (GATE, AUDIT)
        for side in SIDES
    ]
    return [entry for entry in found if (folder / entry[0]).is_file()]


def recorded_answers(r: Round, tasks: dict[str, Task]) -> list[Recorded]:
    """Every answer the round's attempt files saved, of a task in `tasks`."""
    found: list[Recorded] = []
    for name, side, decisive in _files(r.folder):
        attempts = store.read(r.folder / name).get("attempts", {})
        for task_id, answers in sorted(attempts.items()):
            task = tasks.get(task_id)
            if task is None:
                continue
            found += [
                Recorded(r.number, name, side, task, attempt, text, decisive)
                for attempt, text in sorted(answers.items())
                if isinstance(text, str)
            ]
    return found


def pick(answers: list[Recorded], n: int, seed: int) -> list[Recorded]:
    """N answers without replacement, decisive ones `DECISIVE_WEIGHT` times likelier."""
    chooser = random.Random(seed)
    pool = list(answers)
    chosen: list[Recorded] = []
    while pool and len(chosen) < n:
        weights = [DECISIVE_WEIGHT if a.decisive else 1 for a in pool]
        chosen.append(pool.pop(chooser.choices(range(len(pool)), weights)[0]))
    return chosen


def settings(r: Round, answer: Recorded) -> tuple[float, int] | None:
    """(temperature, seed) the phase asked this answer with; None when it cannot be asked
    again from the session's files alone (a correction turn)."""
    config = r.config
    attempt = answer.attempt
    if attempt == "greedy":
        return 0.0, 0
    if attempt.startswith("sample-"):
        index = int(attempt.removeprefix("sample-"))
        return config.round.sample_temperature, sample_seed(config.seed, answer.task.id, index)
    if attempt.startswith("confirm-"):
        index = SEED_OFFSET + int(attempt.removeprefix("confirm-"))
        section = config.gate if answer.file.startswith(GATE) else config.audit
        return section.confirm_temperature, sample_seed(config.seed, answer.task.id, index)
    return None


def _adapter(r: Round, side: str) -> tuple[str | None, str]:
    """(the adapter to load, why not when it cannot be): a rejected candidate's weights
    are deleted by design."""
    if side == "parent":
        return r.parent_path, ""
    adapter = r.candidate_adapter
    if not (adapter / "adapter_model.safetensors").is_file():
        return None, "the candidate's weights are deleted (rejected), so it cannot be regenerated"
    return str(adapter), ""


def regenerate(r: Round, answers: list[Recorded]) -> list[tuple[Recorded, str, str]]:
    """(answer, outcome, detail) for each: `same`, `differs` or `not regenerable`; one
    engine for the round, each adapter loaded once, each answer asked alone."""
    by_side: dict[str, list[Recorded]] = defaultdict(list)
    for answer in answers:
        by_side[answer.side].append(answer)
    results: list[tuple[Recorded, str, str]] = []
    engine: Any = None
    for side, group in sorted(by_side.items()):
        adapter, why_not = _adapter(r, side)
        if why_not:
            results += [(a, "not regenerable", why_not) for a in group]
            continue
        if engine is None:
            engine = create_for(r.config)
        engine.load_adapter(adapter)
        for answer in group:
            asked = settings(r, answer)
            if asked is None:
                why = "a correction turn's prompt holds the public tests' feedback"
                results.append((answer, "not regenerable", why))
                continue
            temperature, seed = asked
            [[completion]] = engine.generate(
                [recipe.messages(answer.task)],
                max_tokens=r.config.engine.max_tokens,
                temperature=temperature,
                seed=[seed],
                keys=[f"{answer.task.id}:{answer.attempt}"],
            )
            results.append(_compare(answer, completion.text))
    return results


def _compare(answer: Recorded, text: str) -> tuple[Recorded, str, str]:
    if text == answer.answer:
        return answer, "same", ""
    at = next(
        (i for i, (a, b) in enumerate(zip(text, answer.answer, strict=False)) if a != b),
        min(len(text), len(answer.answer)),
    )
    return (
        answer,
        "differs",
        f"regenerated text differs from the recorded answer from character {at} "
        f"({len(answer.answer)} recorded, {len(text)} regenerated)",
    )
