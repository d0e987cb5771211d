"""Can a wrong answer forge a function-level "passed"? The adversarial answers, counted.

Runs every attack of tests/support/attacks.py (wrong answers that print the
success marker, exit 0 early, neutralise asserts, shadow the test's names, reach the
test process, ...) through the sandbox of the codeloop this script imports, plus the
canonical solutions of the attacked tasks, and prints per language how many wrong
answers were judged "passed" (forged) and how many canonical ones passed. Appends
the table to bench/RESULTS.md with the commit it ran on.

Run it from an older checkout (copy this file and the tests file there) to count
the forgeries that checkout allows:

    .venv/bin/python -m bench.forgery [--attacks tests/support/attacks.py]
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from bench.results import record
from codeloop.data import HUMANEVAL_X
from codeloop.evaluate import load_humaneval_x
from codeloop.evaluate.humaneval import humaneval_x_job
from codeloop.sandbox import CheckRequest, check_many

ROOT = Path(__file__).resolve().parent.parent
# (language, attack table in the tests file, task of the attacks, or None: per attack)
TABLES = [
    ("python", "ATTACKS", None),
    ("javascript", "JS_ATTACKS", None),
    ("cpp", "CPP_ATTACKS", "CPP/0"),
    ("cpp", "CPP_22_ATTACKS", "CPP/22"),
    ("cpp", "CPP_137_ATTACKS", "CPP/137"),
    ("go", "GO_ATTACKS", "Go/0"),
    ("go", "GO_12_ATTACKS", "Go/12"),
    ("go", "GO_22_ATTACKS", "Go/22"),
    ("java", "JAVA_ATTACKS", "Java/0"),
    ("rust", "RUST_ATTACKS", "Rust/0"),
    ("rust", "RUST_12_ATTACKS", "Rust/12"),
    ("rust", "RUST_22_ATTACKS", "Rust/22"),
    ("rust", "RUST_137_ATTACKS", "Rust/137"),
]


def request(row: dict, generation: str) -> CheckRequest:
    job = humaneval_x_job(row, generation)
    fields = {"language": job.language, "program": job.program, "test": job.test}
    # Checkouts before the two-process checks have no trusted prompt to pass.
    if "prompt" in CheckRequest.model_fields and getattr(job, "prompt", ""):
        fields["prompt"] = job.prompt
        fields["entry_point"] = getattr(job, "entry_point", None)
    return CheckRequest(**fields)


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
    tables = [t for t in TABLES if args.languages is None or t[0] in args.languages.split(",")]
    spec = importlib.util.spec_from_file_location("attacks", args.attacks)
    assert spec is not None and spec.loader is not None
    attacks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(attacks)
    rows = load_humaneval_x(HUMANEVAL_X, sorted({lang for lang, _t, _k in tables})).rows
    wanted: list[tuple[str, str, CheckRequest]] = []
    for language, table, task in tables:
        for name, entry in getattr(attacks, table, {}).items():
            task_id, body = entry if task is None else (task, entry)
            wanted.append((language, f"attack {name}", request(rows[task_id], body)))
        attacked = {
            entry[0] if task is None else task for entry in getattr(attacks, table, {}).values()
        }
        for task_id in sorted(attacked):
            wanted.append(
                (language, "canonical", request(rows[task_id], rows[task_id]["canonical_solution"]))
            )
    asked = [req for _l, _n, req in wanted]
    if args.url:
        from codeloop.serve.client import ServeClient

        with ServeClient(args.url) as remote:
            checks = remote.check_many(asked)
    else:
        checks = check_many(asked, workers=2)
    path = f"codeloop serve at {args.url} (/v1/check/batch)" if args.url else "the sandbox"
    lines = [
        f"Wrong answers from {args.attacks.relative_to(ROOT) if args.attacks.is_relative_to(ROOT) else args.attacks}"
        f" through {path}; forged = a wrong answer judged passed.",
        "",
        "| language | wrong answers | forged | canonical passed | forged attacks |",
        "|---|---|---|---|---|",
    ]
    for language in dict.fromkeys(lang for lang, _t, _k in tables):
        mine = [(n, c) for (lang, n, _r), c in zip(wanted, checks, strict=True) if lang == language]
        wrong = [(n, c) for n, c in mine if n.startswith("attack")]
        forged = [n.removeprefix("attack ") for n, c in wrong if c.status == "passed"]
        canonical = [c for n, c in mine if n == "canonical"]
        passed = sum(c.status == "passed" for c in canonical)
        lines.append(
            f"| {language} | {len(wrong)} | {len(forged)} | {passed}/{len(canonical)} | "
            f"{', '.join(forged) or '-'} |"
        )
    record("Forged function verdicts (bench/forgery.py)", lines)


if __name__ == "__main__":
    main()
