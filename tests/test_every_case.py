"""`CheckRequest.every_case`: partial credit counts every passing case, not the prefix
before the first failure; the verdict stays the first failure's."""

from __future__ import annotations

from codeloop.sandbox import CheckRequest, SandboxLimits, check_many

CASES = [
    {"input": "1\n", "output": "1\n"},
    {"input": "2\n", "output": "2\n"},
    {"input": "3\n", "output": "3\n"},
]
# fails case 1 by looping, case 2 by a wrong answer, passes case 3
PROGRAM = "n = int(input())\nif n == 1:\n    while True:\n        pass\nprint(n if n == 3 else 0)\n"


def test_every_case_counts_all_passing_cases_and_keeps_the_first_failure() -> None:
    limits = SandboxLimits(time_s=1.0)
    ask = CheckRequest(language="python", program=PROGRAM, cases=CASES, limits=limits)
    every, prefix, broken = check_many(
        [
            ask.model_copy(update={"every_case": True}),
            ask,
            ask.model_copy(update={"every_case": True, "program": "print(1"}),
        ],
        workers=2,
    )
    assert (every.status, every.cases_passed, every.cases_total) == ("timeout", 1, 3)
    assert (prefix.status, prefix.cases_passed) == ("timeout", 0)
    # a program that does not parse fails once, not once per case
    assert (broken.status, broken.cases_passed) == ("compile_error", 0)
