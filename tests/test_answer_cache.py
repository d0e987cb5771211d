"""The session's answer cache: what makes two answers the same question, and kills."""

from __future__ import annotations

from pathlib import Path

from codeloop.config import EngineConfig
from codeloop.loop.answer_cache import AnswerCache, answer_key, engine_key

CONVERSATION = [{"role": "user", "content": "Print the sum of two integers."}]


def test_the_key_holds_what_decides_an_answer_and_not_the_batch_size() -> None:
    engine = EngineConfig(kind="hf", model="m", batch_size=8)
    key = answer_key(engine_key(engine), "a" * 64, CONVERSATION, 0.0, 0)
    wider = engine_key(engine.model_copy(update={"batch_size": 32}))
    assert answer_key(wider, "a" * 64, CONVERSATION, 0.0, 0) == key
    # a greedy answer does not depend on a seed; a sample does
    assert answer_key(engine_key(engine), "a" * 64, CONVERSATION, 0.0, 7) == key
    assert answer_key(engine_key(engine), "a" * 64, CONVERSATION, 0.8, 7) != answer_key(
        engine_key(engine), "a" * 64, CONVERSATION, 0.8, 8
    )
    others = [
        answer_key(engine_key(engine), "b" * 64, CONVERSATION, 0.0, 0),
        answer_key(engine_key(engine), None, CONVERSATION, 0.0, 0),
        answer_key(engine_key(engine), "a" * 64, [{"role": "user", "content": "x"}], 0.0, 0),
        answer_key(engine_key(engine), "a" * 64, CONVERSATION, 0.8, 0),
        answer_key(
            engine_key(engine.model_copy(update={"max_tokens": 7})), "a" * 64, CONVERSATION, 0.0, 0
        ),
        answer_key(
            engine_key(engine.model_copy(update={"model": "n"})), "a" * 64, CONVERSATION, 0.0, 0
        ),
    ]
    assert key not in others and len(set(others)) == len(others)


def test_answers_survive_a_reopen_and_a_line_cut_by_a_kill(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    cache = AnswerCache(path)
    cache.add({"k1": "one", "k2": "two\nlines"})
    cache.add({"k1": "changed"})  # never overwritten: the first answer stays
    with path.open("a") as handle:
        handle.write('{"key": "k3", "te')  # a kill in the middle of an append
    reopened = AnswerCache(path)
    assert (reopened.get("k1"), reopened.get("k2"), reopened.get("k3")) == (
        "one",
        "two\nlines",
        None,
    )
    reopened.add({"k3": "three"})
    assert AnswerCache(path).get("k3") == "three"
    assert len(path.read_text().splitlines()) == 3


def test_each_answer_names_the_phase_that_asked_for_it(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text('{"key": "old", "text": "written before answers named their asker"}\n')
    cache = AnswerCache(path)
    cache.add({"k1": "one"}, by="round-000001/collect")
    cache.add({"k1": "again", "k2": "two"}, by="round-000001/baseline")
    reopened = AnswerCache(path)
    assert [reopened.asked_by(key) for key in ("k1", "k2", "old", "absent")] == [
        "round-000001/collect",  # the first asker stays, as the first answer does
        "round-000001/baseline",
        None,
        None,
    ]
