"""The round's verdicts: a program cannot halt a round by imitating a sandbox error.

An `environment_error` is never a failed answer, so the collector stops the round
on a real one. A model-written program can print what the sandbox prints when it
cannot start (`bwrap: ...` and exit 1); if that stopped the round, every restart
would meet the same saved answer and stop again. The sandbox knows a setup failure
from bwrap's status pipe, never from the program's stderr, so the imitation is a
failed run already; behind that, the collector still tells a real environment error
from a failed answer by running a known-good program of the same language. Real
sandbox, no mocks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop import recipe, store
from codeloop.config import load_preset
from codeloop.loop.collect import check_answers, probe_languages, request
from codeloop.loop.common import Round
from codeloop.sandbox import check_many
from codeloop.tasks.schema import Case, Provenance, make_task

pytestmark = pytest.mark.timeout(300)

IMITATOR = "import sys\nsys.stderr.write('bwrap: Creating new namespace failed\\n')\nsys.exit(1)\n"


def _round(tmp_path: Path) -> Round:
    return Round(store.SessionPaths(tmp_path), load_preset("cpu-demo"), 1)


def _task():
    return make_task(
        family="test/double",
        language="python",
        kind="stdio",
        statement="Read an integer n. Print 2 * n.",
        cases=[Case(input="2\n", output="4\n")],
        provenance=Provenance(
            dataset="test", revision="1", source_row_sha256="0" * 64, license="Apache-2.0"
        ),
        split="train",
    )


def test_a_program_imitating_a_sandbox_error_is_a_failed_answer_not_a_halt(
    tmp_path: Path,
) -> None:
    r, task = _round(tmp_path), _task()
    # The sandbox does not take the program's word for it ...
    (raw,) = check_many([request(task, IMITATOR, r)], workers=1)
    assert raw.status == "runtime_error"
    # ... and neither does the round.
    imitator, right = check_answers(
        r,
        [
            (task, recipe.fenced(IMITATOR, "python")),
            (task, recipe.fenced("print(2 * int(input()))\n", "python")),
        ],
    )
    assert imitator.status == "runtime_error" and not imitator.passed
    assert right.passed


def test_the_known_good_programs_pass_in_every_configured_language(tmp_path: Path) -> None:
    r = _round(tmp_path)
    checks = probe_languages(r, list(r.config.tasks.languages))
    assert {lang: c.status for lang, c in checks.items()} == {
        lang: "passed" for lang in r.config.tasks.languages
    }
