"""Can a wrong answer forge a function-level "passed"? The adversarial answers, counted.

Runs every attack of tests/support/attacks.py (wrong answers that print the
success marker, exit 0 early, neutralise asserts, shadow the test's names, reach the
test process, escape by an exception or an exit, ...) through the sandbox of the
codeloop this script imports, plus the canonical solutions of the attacked tasks, and
prints per language how many wrong answers were judged "passed" (forged) and how many
canonical ones passed. Appends the table to bench/RESULTS.md with the commit it ran on.

Every module-level dict of the attacks file is an attack table, and every table is run:
its entries are `name -> (HumanEval-X task id, generation)`, or `name -> generation` in
a table named for its task (`CPP_22_ATTACKS`: CPP/22; `GO_ATTACKS`: Go/0). A table of
another shape or name stops the bench before it checks anything, and so does a
`wrong_answers()` in the file (what the tests run) that disagrees with these tables.

Run it from an older checkout (copy this file and the tests file there) to count
the forgeries that checkout allows:

    .venv/bin/python -m bench.forgery [--attacks tests/support/attacks.py]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
from collections import Counter
from pathlib import Path
from types import ModuleType

from bench.results import record
from codeloop.data import HUMANEVAL_X
from codeloop.evaluate import load_humaneval_x
from codeloop.evaluate.data import TASK_PREFIXES
from codeloop.evaluate.humaneval import humaneval_x_job
from codeloop.sandbox import CheckRequest, check_many

ROOT = Path(__file__).resolve().parent.parent
TABLE_OF_ONE_TASK = re.compile(r"([A-Z]+)(?:_(\d+))?_ATTACKS")
"""The name of a table whose entries are bare generations: its language, then its task
number (0 when absent)."""


def load(path: Path) -> ModuleType:
    """The attacks file, executed as a module of its own (data, not an import of tests/)."""
    spec = importlib.util.spec_from_file_location("attacks", path)
    assert spec is not None and spec.loader is not None
    attacks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(attacks)
    return attacks


def tables(attacks: ModuleType) -> dict[str, dict]:
    """Every attack table of the file: each public module-level dict, in file order."""
    return {
        name: value
        for name, value in vars(attacks).items()
        if isinstance(value, dict) and not name.startswith("_") and name.isupper()
    }


def task_of(table: str) -> str:
    """The HumanEval-X task of a table of bare generations, from its name."""
    named = TABLE_OF_ONE_TASK.fullmatch(table)
    prefix = named and next((p for p in TASK_PREFIXES if p.upper() == named[1]), None)
    if prefix is None:
        raise SystemExit(
            f"bench.forgery: attacks table {table} holds bare generations, but its name "
            f"names no HumanEval-X task (LANG_N_ATTACKS, LANG one of {sorted(TASK_PREFIXES)})"
        )
    return f"{prefix}/{named[2] or 0}"


def attacks_of(attacks: ModuleType) -> list[tuple[str, str, str]]:
    """(task id, attack name, generation) of every entry of every table, or a loud stop
    on an entry this bench would not know how to run."""
    found = []
    origin: dict[tuple[str, str], str] = {}
    for table, entries in tables(attacks).items():
        for name, entry in entries.items():
            if isinstance(entry, str):
                task_id, body = task_of(table), entry
            elif isinstance(entry, tuple) and len(entry) == 2:
                task_id, body = entry
            else:
                raise SystemExit(f"bench.forgery: {table}[{name!r}] is no generation to run")
            if task_id.split("/")[0] not in TASK_PREFIXES:
                raise SystemExit(f"bench.forgery: {table}[{name!r}]: no HumanEval-X task {task_id}")
            found.append((task_id, name, body))
            origin[task_id, body] = table
    if hasattr(attacks, "wrong_answers"):
        agree(found, attacks.wrong_answers(), origin)
    return found


def agree(
    found: list[tuple[str, str, str]],
    tested: list[tuple[str, str, str]],
    origin: dict[tuple[str, str], str],
) -> None:
    """Stop unless the tables hold exactly the (task, generation) pairs that the file's
    `wrong_answers()`, what the tests run, holds."""
    ours = Counter((task_id, body) for task_id, _name, body in found)
    theirs = Counter((task_id, body) for task_id, _name, body in tested)
    if ours != theirs:
        untested = sorted({origin[key] for key in ours - theirs})
        raise SystemExit(
            "bench.forgery: the attacks file's wrong_answers() (what the tests run) misses "
            f"entries of {', '.join(untested) or 'no table'} and holds "
            f"{sum((theirs - ours).values())} entries that no table holds"
        )


def language_of(task_id: str) -> str:
    return TASK_PREFIXES[task_id.split("/")[0]]


def request(row: dict, generation: str) -> CheckRequest:
    job = humaneval_x_job(row, generation)
    fields = {"language": job.language, "program": job.program, "test": job.test}
    # Checkouts before the two-process checks have no trusted prompt to pass.
    if "prompt" in CheckRequest.model_fields and getattr(job, "prompt", ""):
        fields["prompt"] = job.prompt
        fields["entry_point"] = getattr(job, "entry_point", None)
    return CheckRequest(**fields)


def requests(found: list[tuple[str, str, str]]) -> list[tuple[str, str, CheckRequest]]:
    """(language, "attack NAME" or "canonical", request): every attack, then the canonical
    solution of each attacked task, once."""
    languages = list(dict.fromkeys(language_of(task_id) for task_id, _n, _b in found))
    rows = load_humaneval_x(HUMANEVAL_X, languages).rows
    wanted = [(language_of(t), f"attack {name}", request(rows[t], body)) for t, name, body in found]
    for task_id in dict.fromkeys(task_id for task_id, _n, _b in found):
        row = rows[task_id]
        wanted.append((language_of(task_id), "canonical", request(row, row["canonical_solution"])))
    return wanted


def table(wanted: list[tuple[str, str, CheckRequest]], checks: list) -> list[str]:
    """One row per language: wrong answers, forged, canonical passed, the forged ones."""
    lines = [
        "| language | wrong answers | forged | canonical passed | forged attacks |",
        "|---|---|---|---|---|",
    ]
    for language in dict.fromkeys(lang for lang, _n, _r in wanted):
        mine = [(n, c) for (lang, n, _r), c in zip(wanted, checks, strict=True) if lang == language]
        wrong = [(n, c) for n, c in mine if n.startswith("attack")]
        forged = [n.removeprefix("attack ") for n, c in wrong if c.status == "passed"]
        canonical = [c for n, c in mine if n == "canonical"]
        passed = sum(c.status == "passed" for c in canonical)
        lines.append(
            f"| {language} | {len(wrong)} | {len(forged)} | {passed}/{len(canonical)} | "
            f"{', '.join(forged) or '-'} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attacks", type=Path, default=ROOT / "tests" / "support" / "attacks.py")
    parser.add_argument(
        "--url",
        default=None,
        help="check through this `codeloop serve` (its /v1/check/batch, token from "
        "$CODELOOP_SERVE_TOKEN) instead of the sandbox in this process",
    )
    parser.add_argument("--languages", default=None, help="comma-separated (default: all)")
    args = parser.parse_args()
    attacks = load(args.attacks)
    found = attacks_of(attacks)
    if args.languages is not None:
        found = [f for f in found if language_of(f[0]) in args.languages.split(",")]
    if not found:
        raise SystemExit(
            f"bench.forgery: no attack in {args.attacks} for --languages {args.languages}"
        )
    wanted = requests(found)
    asked = [req for _l, _n, req in wanted]
    if args.url:
        from codeloop.serve.client import ServeClient

        with ServeClient(args.url) as remote:
            checks = remote.check_many(asked)
    else:
        checks = check_many(asked, workers=2)
    path = f"codeloop serve at {args.url} (/v1/check/batch)" if args.url else "the sandbox"
    source = args.attacks.relative_to(ROOT) if args.attacks.is_relative_to(ROOT) else args.attacks
    lines = [
        f"Wrong answers from {source} (tables {', '.join(tables(attacks))}) through {path};"
        " forged = a wrong answer judged passed.",
        "",
        *table(wanted, checks),
    ]
    record("Forged function verdicts (bench/forgery.py)", lines)


if __name__ == "__main__":
    main()
