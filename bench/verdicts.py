"""Verdicts of HumanEval-X canonical solutions and mutants, to compare across a refactor.

Checks, through the sandbox, every HumanEval-X canonical solution (164 tasks x 6
languages) and one mutant of each: the canonical solution with the first applicable
one-token change of a fixed list (`+` to `-`, `<` to `<=`, `==` to `!=`, `0` to `1`,
`true` to `false`, ...), the hidden-mutant style of wrong answer. Writes every
verdict (status, and whether it passed) to a JSON file; with `--compare`, reads an
earlier file and lists every check whose verdict differs. A refactor of the sandbox
or of the language homes must change none.

    python -m bench.verdicts --out before.json
    python -m bench.verdicts --out after.json --compare before.json
    python -m bench.verdicts --languages python --out ...   # one language's home only

Prints a table per language (canonical passed, mutants passed, differences) and
appends it to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from bench.results import record
from codeloop.evaluate import load_humaneval_x
from codeloop.evaluate.data import language_of
from codeloop.evaluate.humaneval import humaneval_x_job
from codeloop.sandbox import CheckRequest, check_many

LANGUAGES = ["python", "cpp", "java", "javascript", "go", "rust"]
MUTATIONS: list[tuple[str, str]] = [
    (r" \+ ", " - "),
    (r" < ", " <= "),
    (r" > ", " >= "),
    (r" == ", " != "),
    (r"\btrue\b", "false"),
    (r"\bTrue\b", "False"),
    (r"\b0\b", "1"),
    (r"\b1\b", "2"),
    (r"\breturn\b", "return 0 *"),
]
"""One-token changes, tried in order; the first that applies makes the mutant."""


def mutant(solution: str) -> str | None:
    """The canonical solution with the first applicable change, or None if none applies."""
    for pattern, replacement in MUTATIONS:
        changed, count = re.subn(pattern, replacement, solution, count=1)
        if count:
            return changed
    return None


def requests(languages: list[str]) -> tuple[list[str], list[CheckRequest]]:
    """Names (`task/canonical` or `task/mutant`) and check requests of every program."""
    problems = load_humaneval_x(None, languages)
    names, made = [], []
    for task_id, row in problems.rows.items():
        variants = {
            "canonical": row["canonical_solution"],
            "mutant": mutant(row["canonical_solution"]),
        }
        for variant, text in variants.items():
            if text is None:
                continue
            job = humaneval_x_job(row, text)
            names.append(f"{task_id}/{variant}")
            made.append(job.request())
    return names, made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--languages",
        default=",".join(LANGUAGES),
        help="comma-separated; a file from a run over more languages compares on these",
    )
    args = parser.parse_args()
    languages = args.languages.split(",")
    unknown = sorted(set(languages) - set(LANGUAGES))
    if unknown:
        parser.error(f"--languages: not in HumanEval-X: {', '.join(unknown)}")
    names, made = requests(languages)
    started = time.time()
    checks = check_many(made, workers=args.workers)
    seconds = time.time() - started
    verdicts = {
        name: {"status": check.status, "passed": check.passed, "task_error": check.task_error}
        for name, check in zip(names, checks, strict=True)
    }
    args.out.write_text(json.dumps(verdicts, indent=1, sort_keys=True) + "\n")
    before = json.loads(args.compare.read_text()) if args.compare else None
    if before is not None:  # only the languages checked now
        before = {name: v for name, v in before.items() if language_of(name) in languages}
    differing = sorted(
        name for name in verdicts if before is not None and before.get(name) != verdicts[name]
    )
    lines = [
        "| language | canonical passed | mutants passed | verdicts differing |",
        "|---|---|---|---|",
    ]
    for language in languages:
        own = {name: v for name, v in verdicts.items() if language_of(name) == language}
        canonical = [v for name, v in own.items() if name.endswith("/canonical")]
        mutants = [v for name, v in own.items() if name.endswith("/mutant")]
        differ = sum(1 for name in differing if language_of(name) == language)
        lines.append(
            f"| {language} | {sum(v['passed'] for v in canonical)}/{len(canonical)} | "
            f"{sum(v['passed'] for v in mutants)}/{len(mutants)} | "
            f"{differ if before is not None else 'not compared'} |"
        )
    lines += [
        "",
        f"{len(made)} checks in {seconds:.0f} s, {args.workers} workers; "
        + (
            f"compared with {args.compare.name}: {len(differing)} verdicts differ"
            + (f" ({', '.join(differing[:20])})" if differing else "")
            if before is not None
            else "not compared"
        ),
    ]
    record("HumanEval-X canonical and mutant verdicts (bench/verdicts.py)", lines)


if __name__ == "__main__":
    main()
