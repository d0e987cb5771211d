"""`verify --regenerate N`: ask the recorded weights again for N recorded answers.

`--recheck` re-runs a recorded answer, so a verdict that is not its answer's fails; but
nothing there ties the answer to the model said to have written it: a forger can put a
passing program (the reference solution, or the parent's sample) where the candidate's
answer was, with its verdict, and every re-run agrees. Regenerating it can: the answer
is a function of the weights, the prompt, the sampling settings and the seed, all of
which the session records (the adapter's sha256 in each rows file's binding, the prompt
in `recipe`, temperatures and seeds from the config and the task id, exactly as the
phases computed them), and of the conditions the phase recorded when it generated it
(`loop/conditions.py`: engine and versions, weights file, threads, KV type, and the
engine call that asked it, so whether it came from a batch).

Which answers: N picked at random with a printed seed, weighted towards those a decision
rests on (the gate's and audit's confirmation samples and greedy rows count three
times a collect answer). Each is asked again under its recorded conditions (threads and
KV type set as recorded) and compared as text:

1. alone (batch 1): the same text is `same`;
2. a different text of an answer generated alone, or by an engine whose answers never
   depend on their batch (replay, and llama.cpp in process: `conditions.BATCH_INVARIANT`),
   is `differs`: a forgery, or a record that lies;
3. an answer decoded in a batch is decoded again with its recorded batch (hf: its slice
   of the call, which hf decodes exactly again; the servers: its whole call). The same
   text is `same`. A different one is `differs` for hf, and for the servers (vLLM, an
   OpenAI-compatible one) `unreproducible`: their batches also share a prefix cache whose
   state is not recorded, and they promise no batch-invariant kernels, so the difference
   is named, not called a forgery;
4. conditions this machine cannot reproduce (another engine version, another weights
   file, another CPU or GPU) turn a different text into `unreproducible`, by name.

A setting recorded at generation that is not config.toml's (seed, temperature,
max_tokens, min_p, top_p, batch_size, engine), or weights other than the file's binding,
is `differs`: the answer was not asked as this session says it was. An answer with no
recorded generation (a session from before they were recorded) is judged strictly.

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
from codeloop.config import SessionConfig
from codeloop.engines import create_for
from codeloop.evaluate.scoring import sample_seed
from codeloop.loop import conditions
from codeloop.loop.common import Round
from codeloop.loop.confirm import AUDIT, GATE, SEED_OFFSET, SIDES
from codeloop.tasks.schema import Task

DECISIVE_WEIGHT = 3
"""How much likelier a pick is for an answer a decision rests on than a collect answer."""
CALL_CAP = 64
"""The largest recorded batch decoded again for one differing answer (a bound on time)."""


@dataclass(frozen=True)
class Made:
    """How a recorded answer was generated: the conditions, and its engine call."""

    conditions: dict[str, Any]
    temperature: float
    call: list[str]
    """The `TASK:ATTEMPT` keys of its engine call, in the order asked."""


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
    adapter_sha256: str | None = None
    """The weights the attempt file is bound to."""
    made: Made | None = None
    """None: no generation recorded for it (a session from before they were)."""

    @property
    def label(self) -> str:
        return f"round {self.round} {self.file} {self.task.id} {self.attempt}"

    @property
    def key(self) -> str:
        return f"{self.task.id}:{self.attempt}"


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


def _calls(attempt_file: Path) -> dict[str, Made]:
    """Each key an attempt file's engine calls asked, with how it was made (its
    generation record, `loop/conditions.py`; none for a session from before them)."""
    generation = store.read(conditions.path_for(attempt_file), None) or {}
    known = generation.get("conditions") or []
    found: dict[str, Made] = {}
    for call in generation.get("calls") or []:
        index = call.get("conditions")
        if not isinstance(index, int) or not 0 <= index < len(known):
            continue
        keys = [str(key) for key in call.get("keys") or []]
        made = Made(known[index], float(call.get("temperature", -1.0)), keys)
        found.update(dict.fromkeys(keys, made))
    return found


def generations(root: Path) -> dict[tuple[str | None, str], Made]:
    """Every recorded engine call of the session, by (adapter, key): an answer taken from
    the answer cache was generated by another phase, whose generation record holds its
    call."""
    found: dict[tuple[str | None, str], Made] = {}
    for path in sorted(root.glob("round-*/**/*-attempt.json")):
        saved = store.read(path, {})
        adapter = (saved.get("binding") or {}).get("adapter_sha256")
        found.update({(adapter, key): made for key, made in _calls(path).items()})
    return found


def recorded_answers(
    r: Round, tasks: dict[str, Task], made: dict[tuple[str | None, str], Made] | None = None
) -> list[Recorded]:
    """Every answer the round's attempt files saved, of a task in `tasks`, with how it
    was generated (its own file's call, else the session's `made`, else None)."""
    found: list[Recorded] = []
    for name, side, decisive in _files(r.folder):
        saved = store.read(r.folder / name)
        adapter = (saved.get("binding") or {}).get("adapter_sha256")
        own = _calls(r.folder / name)
        for task_id, answers in sorted(saved.get("attempts", {}).items()):
            task = tasks.get(task_id)
            if task is None:
                continue
            for attempt, text in sorted(answers.items()):
                if not isinstance(text, str):
                    continue
                key = f"{task_id}:{attempt}"
                how = own.get(key) or (made or {}).get((adapter, key))
                found.append(
                    Recorded(r.number, name, side, task, attempt, text, decisive, adapter, how)
                )
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


def settings(
    config: SessionConfig, file: str, task_id: str, attempt: str
) -> tuple[float, int] | None:
    """(temperature, seed) the phase asked this answer with; None when it cannot be asked
    again from the session's files alone (a correction turn)."""
    if attempt == "greedy":
        return 0.0, 0
    if attempt.startswith("sample-"):
        index = int(attempt.removeprefix("sample-"))
        return config.round.sample_temperature, sample_seed(config.seed, task_id, index)
    if attempt.startswith("confirm-"):
        index = SEED_OFFSET + int(attempt.removeprefix("confirm-"))
        section = config.gate if file.startswith(GATE) else config.audit
        return section.confirm_temperature, sample_seed(config.seed, task_id, index)
    return None


def side_weights(r: Round, side: str) -> tuple[str | None, bool]:
    """(the adapter `side` answered with, None for the base model; whether its weights are
    deleted): a rejected candidate's are, by design, so nothing can ask it again."""
    if side == "parent":
        return r.parent_path, False
    adapter = r.candidate_adapter
    return str(adapter), not (adapter / "adapter_model.safetensors").is_file()


def _engine(r: Round, group: list[Recorded]) -> Any:
    """The session's engine, with the recorded threads and KV type where the engine takes
    them (llama.cpp's are fixed when it starts; hf's are set per answer)."""
    recorded = next((a.made.conditions for a in group if a.made is not None), {})
    kind, threads = r.config.engine.kind, recorded.get("threads")
    if kind == "llamacpp" and isinstance(threads, int) and not r.config.cluster.address:
        from codeloop.engines.llamacpp import LlamaCppEngine

        engine = LlamaCppEngine(r.config.engine, threads=threads)
        if recorded.get("kv_cache"):
            engine.decoder.kv_type = recorded["kv_cache"]
        return engine
    return create_for(r.config)


def _threads(kind: str, made: Made | None) -> None:
    """hf: torch's threads as recorded (its CPU kernels' sums can depend on them)."""
    threads = made.conditions.get("threads") if made is not None else None
    if kind == "hf" and isinstance(threads, int):
        import torch

        torch.set_num_threads(threads)


def regenerate(
    r: Round, answers: list[Recorded], tasks: dict[str, Task] | None = None
) -> list[tuple[Recorded, str, str]]:
    """(answer, outcome, detail) for each: `same`, `differs`, `unreproducible` or `not
    regenerable`; one engine for the round, each adapter loaded once, each answer asked
    alone, then with its recorded batch where it differs (`tasks`: the round's tasks, to
    rebuild a batch's neighbours)."""
    by_side: dict[str, list[Recorded]] = defaultdict(list)
    for answer in answers:
        by_side[answer.side].append(answer)
    known = tasks or {a.task.id: a.task for a in answers}
    results: list[tuple[Recorded, str, str]] = []
    engine: Any = None
    try:
        for side, group in sorted(by_side.items()):
            adapter, deleted = side_weights(r, side)
            if deleted:
                why = "the candidate's weights are deleted (rejected), so it cannot be regenerated"
                results += [(a, "not regenerable", why) for a in group]
                continue
            engine = engine or _engine(r, answers)
            engine.load_adapter(adapter)
            asker = _Asker(r, engine, known)
            results += [asker.judge(answer) for answer in group]
    finally:
        if engine is not None:
            engine.close()
    return results


class _Asker:
    """Asks one side's weights again, and judges each answer against its record."""

    def __init__(self, r: Round, engine: Any, tasks: dict[str, Task]) -> None:
        self.r, self.engine, self.tasks = r, engine, tasks
        self.kind = r.config.engine.kind
        self._here: dict[Any, dict[str, Any]] = {}

    def here(self, made: Made | None) -> dict[str, Any]:
        """The conditions this machine generates under, threads set as `made` records."""
        _threads(self.kind, made)
        threads = made.conditions.get("threads") if made is not None else None
        if threads not in self._here:
            self._here[threads] = conditions.observe(self.engine, self.r.config)
        return self._here[threads]

    def ask(self, file: str, items: list[tuple[Task, str]], temperature: float) -> list[str]:
        """The texts of `items` (task, attempt) asked in one engine call, in order."""
        seeds = [settings(self.r.config, file, task.id, attempt) for task, attempt in items]
        results = self.engine.generate(
            [recipe.messages(task) for task, _attempt in items],
            max_tokens=self.r.config.engine.max_tokens,
            temperature=temperature,
            seed=[asked[1] if asked else 0 for asked in seeds],
            keys=[f"{task.id}:{attempt}" for task, attempt in items],
        )
        return [completion.text for [completion] in results]

    def judge(self, answer: Recorded) -> tuple[Recorded, str, str]:
        """(answer, outcome, detail): its record checked against the session, then the
        answer asked again (module docstring, steps 1 to 4)."""
        asked = settings(self.r.config, answer.file, answer.task.id, answer.attempt)
        if asked is None:
            why = "a correction turn's prompt holds the public tests' feedback"
            return answer, "not regenerable", why
        temperature, _seed = asked
        made = answer.made
        here = self.here(made)
        wrong = self.inconsistent(answer, here, temperature)
        if wrong:
            return answer, "differs", f"not asked as the session says: {'; '.join(wrong)}"
        [text] = self.ask(answer.file, [(answer.task, answer.attempt)], temperature)
        if text == answer.answer:
            return answer, "same", ""
        if made is None:
            return _compare(answer, text, "asked alone; no generation conditions recorded")
        missing = conditions.unreproducible(made.conditions, here)
        if missing:
            return (
                answer,
                "unreproducible",
                (
                    f"{_differs(answer, text)} when asked alone, and it was generated under "
                    f"conditions this machine does not reproduce: {', '.join(missing)}"
                ),
            )
        return self.batched(answer, made, text, temperature)

    def inconsistent(self, answer: Recorded, here: dict[str, Any], temperature: float) -> list[str]:
        """What in the answer's record, or in the weights loaded, is not what the session
        says it was asked with (a difference of settings, not of machines)."""
        wrong = []
        if here.get("adapter_sha256") != answer.adapter_sha256:
            wrong.append(
                f"the weights loaded ({str(here.get('adapter_sha256'))[:12]}) are not those "
                f"the attempt file is bound to ({str(answer.adapter_sha256)[:12]})"
            )
        made = answer.made
        if made is None:
            return wrong
        wrong += conditions.against_config(made.conditions, self.r.config)
        if made.temperature != temperature:
            wrong.append(f"temperature {made.temperature} (config.toml {temperature})")
        recorded_adapter = made.conditions.get("adapter_sha256", answer.adapter_sha256)
        if recorded_adapter != answer.adapter_sha256:
            wrong.append(f"adapter {str(recorded_adapter)[:12]}, not the file's binding")
        return wrong

    def batched(
        self, answer: Recorded, made: Made, alone: str, temperature: float
    ) -> tuple[Recorded, str, str]:
        """An answer that differs when asked alone: judged with its recorded batch."""
        batch = _batch(made, answer.key, self.kind)
        if self.kind in conditions.BATCH_INVARIANT:
            return _compare(answer, alone, f"{self.kind} answers never depend on their batch")
        if self.kind in conditions.SLICED and batch == [answer.key]:
            return _compare(answer, alone, "asked alone, as it was generated")
        if batch == [answer.key]:
            return (
                answer,
                "unreproducible",
                (
                    f"{_differs(answer, alone)}; it was asked alone, but {self.kind} decoded it "
                    "with prompt prefixes cached by earlier calls (or a server's batch), whose "
                    "state is not recorded: not evidence of a forgery"
                ),
            )
        items = [self._item(key) for key in batch]
        rebuilt = [item for item in items if item is not None]
        if len(rebuilt) < len(batch) or len(batch) > CALL_CAP:
            why = "it held a correction turn" if len(batch) <= CALL_CAP else "it is too large"
            return (
                answer,
                "unreproducible",
                (
                    f"{_differs(answer, alone)} when asked alone; it was decoded in a batch of "
                    f"{len(batch)}, which cannot be decoded again here ({why})"
                ),
            )
        texts = self.ask(answer.file, rebuilt, temperature)
        if texts[batch.index(answer.key)] == answer.answer:
            return answer, "same", ""
        if self.kind in conditions.SLICED:
            return _compare(
                answer, texts[batch.index(answer.key)], f"its batch of {len(batch)} decoded again"
            )
        return (
            answer,
            "unreproducible",
            (
                f"{_differs(answer, alone)} alone and with its call of {len(batch)} decoded "
                f"again; {self.kind} shares a continuous batch and a prefix cache whose state is "
                "not recorded, and promises no batch-invariant kernels: not evidence of a forgery"
            ),
        )

    def _item(self, key: str) -> tuple[Task, str] | None:
        task_id, _, attempt = key.partition(":")
        task = self.tasks.get(task_id)
        if task is None or attempt == "correction":
            return None
        return task, attempt


def _batch(made: Made, key: str, kind: str) -> list[str]:
    """The keys decoded together with `key`: hf's slice of `batch_size` of its call, the
    whole call for the engines that batch a call continuously."""
    if key not in made.call:
        return []
    if kind not in conditions.SLICED:
        return made.call
    size = int(made.conditions.get("batch_size") or 1)
    start = made.call.index(key) // size * size
    return made.call[start : start + size]


def _differs(answer: Recorded, text: str) -> str:
    at = next(
        (i for i, (a, b) in enumerate(zip(text, answer.answer, strict=False)) if a != b),
        min(len(text), len(answer.answer)),
    )
    return (
        f"regenerated text differs from the recorded answer from character {at} "
        f"({len(answer.answer)} recorded, {len(text)} regenerated)"
    )


def _compare(answer: Recorded, text: str, how: str = "") -> tuple[Recorded, str, str]:
    if text == answer.answer:
        return answer, "same", ""
    return answer, "differs", _differs(answer, text) + (f" ({how})" if how else "")
