"""The helpers a function test calls to judge an answer are the task's, never the answer's.

HumanEval/38 tests `decode_cyclic` on strings made by the prompt's `encode_cyclic`. Five
of HumanEval-X's languages define that encoder in the prompt, which the test's side
carries; Rust/38's prompt does not (its canonical solution does), so its test's crate
called the solution's own, and an answer that made it the identity passed. The Rust
home now carries the task's encoder (`box.TRUSTED_HELPERS`). Composition only: the
verdicts themselves are in tests/test_function_verdicts.py (HELPER_ATTACKS).
"""

from __future__ import annotations

from typing import Any

from codeloop.data import HUMANEVAL_X
from codeloop.evaluate import load_humaneval_x
from codeloop.evaluate.humaneval import humaneval_x_job
from codeloop.sandbox.languages.rust import box

FORGERY = (
    "    s.to_string()\n}\n\npub fn encode_cyclic(s: &str) -> String {\n    s.to_string()\n}\n"
)


def _rust_38() -> dict[str, Any]:
    return load_humaneval_x(HUMANEVAL_X, ["rust"]).rows["Rust/38"]


def test_the_trusted_encoder_is_the_tasks_own() -> None:
    """The copy is the canonical solution's encoder, word for word (only not `pub`)."""
    copy = box.TRUSTED_HELPERS["decode_cyclic"]["encode_cyclic"]
    assert "pub " + copy.strip() in _rust_38()["canonical_solution"]


def test_rust_38s_test_crate_calls_the_trusted_encoder_never_the_answers() -> None:
    row = _rust_38()
    job = humaneval_x_job(row, FORGERY)
    found = box.signatures(job.prompt, job.entry_point, job.program, job.test)
    assert found is not None
    sigs, at = found
    assert [sig.name for sig in sigs] == ["decode_cyclic"]  # no proxy of the answer's encoder
    source = box.test_source(job.prompt, job.test, sigs, at)
    assert box.TRUSTED_HELPERS["decode_cyclic"]["encode_cyclic"] in source
    assert source.count("fn encode_cyclic") == 1
    # The answer's own encoder stays in its own crate, where nothing of the test calls it.
    assert "pub fn encode_cyclic" in box.server_source(job.program, sigs)


def test_a_prompt_that_defines_the_helper_keeps_its_own() -> None:
    prompt = (
        "fn encode_cyclic(s: &str) -> String {\n    s.chars().rev().collect()\n}\n"
        "fn decode_cyclic(s: &str) -> String {\n"
    )
    test = 'fn check() { assert_eq!(decode_cyclic(&encode_cyclic("abc")), "abc"); }\n'
    assert box.trusted_helpers("decode_cyclic", prompt, test) == {}
    found = box.signatures(prompt, None, prompt + "    s.to_string()\n}\n", test)
    assert found is not None
    source = box.test_source(prompt, test, *found)
    assert source.count("fn encode_cyclic") == 1


def test_only_a_helper_the_test_calls_is_carried() -> None:
    prompt = "fn decode_cyclic(s: &str) -> String {\n"
    assert box.trusted_helpers("decode_cyclic", prompt, 'assert!(decode_cyclic("") == "");') == {}
    assert box.trusted_helpers("other", prompt, 'encode_cyclic("a");') == {}
