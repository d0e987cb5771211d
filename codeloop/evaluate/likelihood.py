"""The likelihood audit's measure: how probable each model finds verified right programs.

Where a model passes almost nothing (cpu-demo's parent passes 1.6% of audit samples), a
pass rate cannot fall far enough to be seen, but the probability the model gives a right
program still can. For every audit task with a verified reference program in its
language, one forward pass with teacher forcing scores that program as the answer to
the round's own prompt (the very chat rows training builds, `train.encode`), and the
task's score is the mean log-probability per answer token. Both sides score the same
tokens, so the per-task differences are paired (`guard.likelihood_verdict`).

What it does not see: a model that keeps the likelihood of right programs but decodes
worse ones (sampling, formatting drift the reference does not exercise). The gpu preset,
whose model passes enough, keeps pass rate as the audit's measure.

Deterministic: float32, no dropout, one sequence at a time (no padding), so the same
weights give the same scores; `codeloop verify` can score again and compare.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from codeloop import recipe, store
from codeloop.config import SessionConfig
from codeloop.evaluate.suites import suite_tasks
from codeloop.tasks.schema import Task

SCHEMA = "codeloop-likelihood-1"
"""The scores file's schema: what was scored, with what, and the per-task means."""


def reference_program(task: Task) -> str | None:
    """The task's first verified reference in its own language (None: nothing to score)."""
    return next((ref.code for ref in task.references if ref.language == task.language), None)


def select(config: SessionConfig, audit: list[Task]) -> list[Task]:
    """The tasks the likelihood audit scores: those of `audit.likelihood_suites` (or else
    `audit`, the round's audit tasks) with a reference in their language, at most
    `audit.likelihood_limit` per suite, spread evenly over the suite's order."""
    rule = config.audit
    if not rule.likelihood_suites:
        return scorable(audit)
    chosen: list[Task] = []
    for name in rule.likelihood_suites:
        found = scorable(suite_tasks(config, name))
        if rule.likelihood_limit and len(found) > rule.likelihood_limit:
            step = len(found) / rule.likelihood_limit
            found = [found[int(i * step)] for i in range(rule.likelihood_limit)]
        chosen += found
    return chosen


def reference_row(task: Task, conversation: str) -> dict[str, Any] | None:
    """The chat row that scores `task`'s reference: the prompt training would build, then
    the reference as the answer (fenced as the model is asked to answer)."""
    program = reference_program(task)
    if program is None:
        return None
    turns = recipe.contract_messages(task) if conversation == "contract" else recipe.messages(task)
    answer = {"role": "assistant", "content": recipe.fenced(program, task.language)}
    return {"task_id": task.id, "language": task.language, "messages": [*turns, answer]}


def scorable(tasks: Iterable[Task]) -> list[Task]:
    """The tasks the likelihood audit scores: those with a reference in their language."""
    return [task for task in tasks if reference_program(task) is not None]


def mean_logprob(model: Any, input_ids: list[int], labels: list[int]) -> float:
    """Mean log-probability per labelled token of one sequence under `model` (teacher
    forcing: token t is predicted from tokens before it)."""
    import torch

    ids = torch.tensor([input_ids])
    targets = torch.tensor(labels[1:])
    scored = targets != -100
    # Only the positions that predict a labelled token go through the vocabulary
    # projection (about a fifth of a token's work in SmolLM2-135M): the prompt's need none.
    positions = scored.nonzero().squeeze(1)
    with torch.no_grad():
        logits = model(input_ids=ids, logits_to_keep=positions).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    picked = logprobs.gather(1, targets[scored].unsqueeze(1)).squeeze(1)
    return float(picked.mean())


def load_scorer(base: str, adapter: str | None, precision: str) -> tuple[Any, Any]:
    """(model, tokenizer): the base model in `precision` with `adapter` applied, or the
    base alone for None (the first round's parent)."""
    from codeloop.train.model import load_model, load_tokenizer, resolve_dtype, resolve_model

    source = resolve_model(base)
    tokenizer = load_tokenizer(source)
    model = load_model(source, resolve_dtype(precision))
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    model.eval()
    return model, tokenizer


def score_tasks(
    base: str,
    adapter: str | None,
    precision: str,
    tasks: list[Task],
    conversation: str = "plain",
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, float]:
    """Each task's mean log-probability per token of its reference program (tasks without
    a reference in their language are left out; see `scorable`)."""
    from codeloop.train.encode import encode_row

    model, tokenizer = load_scorer(base, adapter, precision)
    chosen = scorable(tasks)
    scores: dict[str, float] = {}
    for done, task in enumerate(chosen, 1):
        row = reference_row(task, conversation)
        assert row is not None  # scorable
        example = encode_row(tokenizer, row)
        scores[task.id] = mean_logprob(model, example.input_ids, example.labels)
        if progress is not None:
            progress(done, len(chosen))
    return scores


def write_scores(
    path: Path, scores: dict[str, float], tasks: list[Task], binding: dict[str, Any]
) -> None:
    """The scores file: per-task means in the tasks' order, bound to what produced them."""
    store.write_json(
        path,
        {
            "schema": SCHEMA,
            "binding": {**binding, "tasks_sha256": store.sha256_json([t.id for t in tasks])},
            "scores": [{"id": t.id, "mean_logprob": scores[t.id]} for t in tasks if t.id in scores],
        },
    )
