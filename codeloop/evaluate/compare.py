"""Before and after on the same tasks: the comparison behind the gate, the audit and reports.

A round's gate (baseline vs candidate on validation), its audit (parent vs
candidate on the benchmark) and `codeloop report` all compare two answer sets
task by task with this one function, so "gained" and "lost" mean the same thing
everywhere. Each task is a pair; the exact McNemar test asks how likely the split
of the discordant pairs is if the two sides were equally good.
"""

from __future__ import annotations

from math import comb
from typing import Any

from codeloop.errors import IntegrityError


def mcnemar_exact(gained: int, lost: int) -> float:
    """Two-sided exact McNemar p: a binomial test of the discordant pairs at 1/2."""
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(gained, lost) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _macro(rows: list[dict[str, Any]]) -> float:
    by_language: dict[str, list[bool]] = {}
    for row in rows:
        by_language.setdefault(row["language"], []).append(bool(row["passed"]))
    rates = [sum(v) / len(v) for v in by_language.values() if v]
    return sum(rates) / len(rates) if rates else 0.0


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any]:
    """Paired comparison of two row lists over the same tasks, pooled and per language.

    Totals before and after, the tasks gained (failed, now pass) and lost (passed,
    now fail) with their ids, the exact McNemar p, and macro pass@1 on both sides.
    """
    if [row["id"] for row in before] != [row["id"] for row in after]:
        raise IntegrityError("baseline and candidate answered different tasks; cannot pair them")
    languages: dict[str, dict[str, Any]] = {}
    gained: list[str] = []
    lost: list[str] = []
    for old, new in zip(before, after, strict=True):
        entry = languages.setdefault(
            old["language"],
            {
                "total": 0,
                "before": 0,
                "after": 0,
                "gained": 0,
                "lost": 0,
                "gained_ids": [],
                "lost_ids": [],
            },
        )
        entry["total"] += 1
        entry["before"] += int(old["passed"])
        entry["after"] += int(new["passed"])
        if new["passed"] and not old["passed"]:
            entry["gained"] += 1
            entry["gained_ids"].append(old["id"])
            gained.append(old["id"])
        elif old["passed"] and not new["passed"]:
            entry["lost"] += 1
            entry["lost_ids"].append(old["id"])
            lost.append(old["id"])
    return {
        "total": len(before),
        "before": sum(r["passed"] for r in before),
        "after": sum(r["passed"] for r in after),
        "gained": len(gained),
        "lost": len(lost),
        "gained_ids": gained,
        "lost_ids": lost,
        "mcnemar_p": mcnemar_exact(len(gained), len(lost)),
        "macro_before": _macro(before),
        "macro_after": _macro(after),
        "languages": dict(sorted(languages.items())),
    }
