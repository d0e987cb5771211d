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


def test_messages_show_statement_public_examples_and_fence_tag_only() -> None:
    system, user = recipe.messages(TASK)
    assert system["role"] == "system" and user["role"] == "user"
    assert TASK["statement"] in user["content"]
    assert "Example 1" in user["content"] and "1 2" in user["content"]
    assert "```rust" in user["content"]
    assert "HIDDEN" not in system["content"] + user["content"]


def test_function_task_messages_embed_the_code_prompt() -> None:
    task = {
        "language": "python",
        "kind": "function",
        "public_cases": [],
        "statement": 'def add(a, b):\n    """Add."""\n',
    }
    user = recipe.messages(task)[1]["content"]
    assert "```python\ndef add(a, b):" in user and "Complete this Python code" in user


def test_correction_turn_carries_only_the_feedback_it_is_given() -> None:
    conversation = recipe.correction(TASK, "```rust\nfn main(){}\n```", "Test 1: wrong answer")
    assert [turn["role"] for turn in conversation] == ["system", "user", "assistant", "user"]
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


def test_ends_code_block() -> None:
    assert not recipe.ends_code_block("```python\nprint(1)\n")
    assert recipe.ends_code_block("```python\nprint(1)\n```")
