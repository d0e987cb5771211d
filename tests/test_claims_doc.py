"""Every measured number the README states is a row of docs/CLAIMS.md.

A README claim is a number with a unit of time, rate or ratio in the README's prose: `56
min`, `1.43x`, `190 requests/s`, `5.8 ms`. Fenced code blocks and inline code are not
prose (commands, config values, version pins), and neither are counts, sizes or
percentages, which state a setting (95% bounds, -2 points, eight languages). Each such
number, with its unit, must appear in docs/CLAIMS.md, where its machine, command and
commit are."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNITS = r"(?:x\b|ms\b|s\b|min\b|h\b|tok/s|requests/s|checks/s|problems/s)"
CLAIM = re.compile(rf"(?<![\w.])(\d+(?:[.,]\d+)?(?:-\d+(?:[.,]\d+)?)?) ?({UNITS})")


def prose(markdown: str) -> str:
    """`markdown` without its fenced code blocks and inline code."""
    without_blocks = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", without_blocks)


def claims(markdown: str) -> set[str]:
    """The README claims in `markdown`, each as number and unit (`56 min`, `1.43x`)."""
    found = set()
    for number, unit in CLAIM.findall(prose(markdown)):
        found.add(f"{number}{unit}" if unit == "x" else f"{number} {unit}")
    return found


def missing(readme: str, claims_doc: str) -> list[str]:
    flat = " ".join(claims_doc.split())
    return sorted(claim for claim in claims(readme) if claim not in flat)


def test_claims_are_numbers_with_units_in_prose_only() -> None:
    text = (
        "A round took about 56 min, 1.43x as fast, at 190 requests/s and 5.8 ms a check.\n"
        "`codeloop run --rounds 3` takes 95% bounds, -2 points and eight languages.\n"
        "```\nmake bench  # 10 min\n```\n"
    )
    assert claims(text) == {"56 min", "1.43x", "190 requests/s", "5.8 ms"}


def test_every_readme_claim_is_in_claims_md() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    claims_doc = (ROOT / "docs" / "CLAIMS.md").read_text(encoding="utf-8")
    assert claims(readme), "the README states no measured number: is the pattern still right?"
    assert missing(readme, claims_doc) == []


def test_a_readme_claim_not_in_claims_md_fails() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    claims_doc = (ROOT / "docs" / "CLAIMS.md").read_text(encoding="utf-8")
    assert "took 14.1 min" in readme
    altered = readme.replace("took 14.1 min", "took 47 min") + "\nllamacpp is 9.73x hf.\n"
    assert missing(altered, claims_doc) == ["47 min", "9.73x"]


def test_the_guard_section_is_there() -> None:
    claims_doc = (ROOT / "docs" / "CLAIMS.md").read_text(encoding="utf-8")
    assert "## The guard" in claims_doc
    assert len(claims_doc.splitlines()) <= 150
