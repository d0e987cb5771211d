"""The prompt recipe: messages show only public examples; programs are read back from fences."""

from __future__ import annotations

import pytest

from codeloop import recipe

TASK = {
    "language": "rust",
    "kind": "stdio",
    "statement": "Read two integers and print their sum.",
    "public_cases": [{"input": "1 2\n", "output": "3\n"}],
    "cases": [{"input": "40 2\n", "output": "HIDDEN-42\n"}],
}


def test_stdio_messages_state_the_contract_and_show_a_worked_example_first() -> None:
    system, example, worked, user = recipe.messages(TASK)
    assert [system["role"], example["role"], worked["role"], user["role"]] == [
        "system",
        "user",
        "assistant",
        "user",
    ]
    assert "Rust" in system["content"] and "```rust" in system["content"]
    assert "standard input" in system["content"]
    assert example["content"] == recipe.WORKED_PROBLEM
    assert recipe.source(worked["content"], "rust") == recipe.WORKED_ANSWERS["rust"]
    assert user["content"] == TASK["statement"]
    assert "HIDDEN" not in str([system, example, worked, user])


def test_public_examples_are_shown_only_when_the_recipe_says_so(monkeypatch) -> None:
    assert "1 2" not in recipe.messages(TASK)[-1]["content"]
    monkeypatch.setattr(recipe, "SHOW_PUBLIC_EXAMPLES", True)
    user = recipe.messages(TASK)[-1]["content"]
    assert "Example 1" in user and "1 2" in user and "HIDDEN" not in user


def test_every_language_has_a_worked_answer_that_is_no_curriculum_family() -> None:
    from codeloop.tasks import curriculum

    assert set(recipe.WORKED_ANSWERS) == set(recipe.FENCE_TAGS)
    statements = {
        family.statement(family.params(__import__("random").Random(seed)))
        for family in curriculum.families()
        for seed in range(5)
    }
    assert recipe.WORKED_PROBLEM not in statements


def test_function_task_messages_embed_the_code_prompt() -> None:
    task = {
        "language": "python",
        "kind": "function",
        "public_cases": [],
        "statement": 'def add(a, b):\n    """Add."""\n',
    }
    user = recipe.messages(task)[1]["content"]
    assert "```python\ndef add(a, b):" in user and "Complete this Python code" in user


def test_contract_messages_drop_only_the_worked_example() -> None:
    full = recipe.messages(TASK)
    assert recipe.contract_messages(TASK) == [full[0], full[-1]]
    function = {"language": "python", "kind": "function", "public_cases": [], "statement": "x"}
    assert recipe.contract_messages(function) == recipe.messages(function)


def test_correction_turn_carries_only_the_feedback_it_is_given() -> None:
    conversation = recipe.correction(TASK, "```rust\nfn main(){}\n```", "Test 1: wrong answer")
    assert [turn["role"] for turn in conversation][-3:] == ["user", "assistant", "user"]
    assert conversation[:-2] == recipe.messages(TASK)
    assert "Test 1: wrong answer" in conversation[-1]["content"]
    assert "HIDDEN" not in str(conversation)


@pytest.mark.parametrize(
    ("answer", "language", "program"),
    [
        ("Here:\n```python\nprint(1)\n```\nDone.", "python", "print(1)\n"),
        ("```py\nprint(2)\n```", "python", "print(2)\n"),
        ("```\nprint(3)\n```", "python", "print(3)\n"),
        ("```text\nnotes\n```\n```cpp\nint main(){}\n```", "cpp", "int main(){}\n"),
        ("```go\npackage main\nfunc main(){}\n", "go", "package main\nfunc main(){}\n"),
    ],
)
def test_source_extracts_the_program(answer: str, language: str, program: str) -> None:
    assert recipe.source(answer, language) == program


@pytest.mark.parametrize(
    "answer", ["", "print(1)", "```python\n\n```", "```c\nx\n```\n```java\ny\n```", None]
)
def test_answers_without_a_usable_block_raise_value_error(answer) -> None:
    with pytest.raises(ValueError):
        recipe.source(answer, "python")


def test_prompt_sha256_is_stable_and_tracks_the_text(monkeypatch) -> None:
    first = recipe.prompt_sha256()
    assert first == recipe.prompt_sha256() and len(first) == 64
    monkeypatch.setattr(recipe, "SYSTEM", recipe.SYSTEM + " Be brief.")
    assert recipe.prompt_sha256() != first
    monkeypatch.setattr(recipe, "WORKED_ANSWERS", {**recipe.WORKED_ANSWERS, "go": "x"})
    assert recipe.prompt_sha256() not in (first,)


def test_ends_code_block() -> None:
    assert not recipe.ends_code_block("```python\nprint(1)\n")
    assert recipe.ends_code_block("```python\nprint(1)\n```")
