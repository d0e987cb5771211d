"""Which HumanEval-X tasks does a trivial answer pass? Every trivial program, checked.

For each task of each language, the trivial programs validation runs before a
function task may enter a pool (`codeloop/tasks/trivial.py`: the zero value, the
first argument, and in Python a public example's value) go through the sandbox
against the task's hidden test. A task one of them passes has a test too weak to
train on. Prints per language how many checks each kind got and how they ended,
names the tasks passed trivially, and appends the table to bench/RESULTS.md.

    .venv/bin/python -m bench.experiments.trivial [--languages python,cpp] [--workers 2]
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter

from bench.results import record
from codeloop.config import SandboxConfig
from codeloop.evaluate import load_humaneval_x
from codeloop.evaluate.data import HUMANEVAL_X_FILES, language_of
from codeloop.sandbox import check_many
from codeloop.tasks.checks import request
from codeloop.tasks.schema import Provenance
from codeloop.tasks.sources.humaneval_x import problem_of
from codeloop.tasks.trivial import trivial_programs

LANGUAGES = ["python", "javascript", "cpp", "java", "go", "rust"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    languages = [lang for lang in args.languages.split(",") if lang]
    unknown = sorted(set(languages) - set(HUMANEVAL_X_FILES))
    if unknown:
        raise SystemExit(f"unknown languages {unknown}; choose from {sorted(HUMANEVAL_X_FILES)}")
    problems = load_humaneval_x(None, languages)
    provenance = Provenance(
        dataset="humaneval-x", revision="shipped", source_row_sha256="0" * 64, license="Apache-2.0"
    )
    requests, names = [], []
    for task_id, row in problems.rows.items():
        language = language_of(task_id)
        if language in languages:
            task = problem_of(language, row, provenance).tasks[0]
            for kind, program in trivial_programs(task).items():
                requests.append(request(task, program, SandboxConfig()))
                names.append((language, task_id, re.sub(r"example \d+", "example N", kind)))
    started = time.monotonic()
    checks = check_many(requests, workers=args.workers)
    seconds = time.monotonic() - started

    counts: Counter[tuple[str, str, str]] = Counter()
    passed: list[str] = []
    for (language, task_id, kind), check in zip(names, checks, strict=True):
        counts[language, kind, check.status] += 1
        if check.passed:
            passed.append(f"{task_id} ({kind})")
    statuses = sorted({status for _l, _k, status in counts})
    lines = [
        f"{len(requests)} trivial programs of {len(problems.rows)} tasks, "
        f"{args.workers} workers, {seconds:.0f} s",
        "",
        "| language | trivial program | " + " | ".join(statuses) + " |",
        "|---|---|" + "---|" * len(statuses),
    ]
    for language in languages:
        kinds = sorted({kind for lang, kind, _s in counts if lang == language})
        for kind in kinds:
            cells = " | ".join(str(counts[language, kind, status]) for status in statuses)
            lines.append(f"| {language} | {kind} | {cells} |")
    lines += ["", "Passed by a trivial program: " + (", ".join(passed) or "none")]
    record("Trivial answers to HumanEval-X (bench/trivial.py)", lines)


if __name__ == "__main__":
    main()
