"""The built-in polyglot curriculum: problem families rendered as stdio tasks in every language.

It is the embedded default source, so a laptop session needs no download: every
family has a parametric statement, a seeded input generator and a Python
reference; a (family, variant) pair is one problem whose cases are the same in
all languages, so the pool validates its reference once and renders eight tasks.
Everything is a pure function of (seed, family, variant): the same seed gives the
same tasks on every machine.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from codeloop.config import CurriculumSource
from codeloop.store import sha256_json
from codeloop.tasks.curriculum import tier1, tier2, tier3, tier4
from codeloop.tasks.curriculum.family import Family, Params
from codeloop.tasks.render import stdio_statement
from codeloop.tasks.schema import Case, Problem, Program, Provenance, make_task

DATASET = "codeloop-curriculum"
LICENSE = "Apache-2.0"
HIDDEN_CASES = 5
"""Hidden cases per problem: enough to reject most wrong programs, few enough to check fast."""
DIVERSITY_TRIES = 200
"""Extra inputs drawn to find a hidden case whose output differs from the others."""


def families() -> list[Family]:
    """Every family of the curriculum, tier by tier; names are unique."""
    found = [*tier1.FAMILIES, *tier2.FAMILIES, *tier3.FAMILIES, *tier4.FAMILIES]
    names = [family.name for family in found]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise AssertionError(f"curriculum family names repeat: {repeated}")
    return found


def family_by_name(name: str) -> Family:
    """The family called `name` (with or without the `curriculum/` prefix)."""
    bare = name.removeprefix("curriculum/")
    for family in families():
        if family.name == bare:
            return family
    raise KeyError(f"no curriculum family named {name!r}")


@cache
def revision() -> str:
    """A hash of the curriculum's code: changes whenever a family, generator or reference does."""
    digest = hashlib.sha256()
    folder = Path(__file__).parent
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _rng(seed: int, family: str, variant: int, purpose: str) -> random.Random:
    # A string seed goes through sha512 in `random`, so it is stable across runs and machines.
    return random.Random(f"codeloop-curriculum:{seed}:{family}:{variant}:{purpose}")


def variant_cases(
    family: Family, p: Params, seed: int, variant: int
) -> tuple[list[Case], list[Case]]:
    """(hidden cases, public cases) of one variant: 1-3 public examples, distinct inputs.

    The hidden outputs are made to differ from each other where the family allows,
    so that a program printing one constant (say NO) cannot pass them all.
    """
    rng = _rng(seed, family.name, variant, "cases")
    want_public = 1 + variant % 3
    inputs: list[str] = []
    for _ in range(12 * (want_public + HIDDEN_CASES)):
        text = family.generate(rng, p)
        if text not in inputs:
            inputs.append(text)
        if len(inputs) == want_public + HIDDEN_CASES:
            break
    public_count = min(want_public, max(1, len(inputs) - 1))
    cases = [Case(input=text, output=family.expected(text, p)) for text in inputs]
    hidden, public = cases[public_count:] or cases[:1], cases[:public_count]
    if len(hidden) > 1 and len({case.output for case in hidden}) == 1:
        for _ in range(DIVERSITY_TRIES):
            text = family.generate(rng, p)
            output = family.expected(text, p)
            if output != hidden[0].output and text not in inputs:
                hidden[-1] = Case(input=text, output=output)
                break
    return hidden, public


def statement(family: Family, p: Params) -> str:
    """The statement of one task: the family's problem sentence for this variant.

    The title and the language's contract are left out on purpose (see
    `codeloop.tasks.render`); the prompt recipe states the language and the contract.
    """
    return stdio_statement(family.statement(p))


def render_problem(family: Family, variant: int, seed: int, languages: Sequence[str]) -> Problem:
    """One (family, variant) as a problem: one stdio task per language, one Python reference."""
    p = family.params(_rng(seed, family.name, variant, "params"))
    hidden, public = variant_cases(family, p, seed, variant)
    reference = Program(language="python", code=family.program(p))
    provenance = Provenance(
        dataset=DATASET,
        revision=revision(),
        source_row_sha256=sha256_json(
            {"family": family.name, "variant": variant, "seed": seed, "params": p}
        ),
        license=LICENSE,
    )
    name = f"curriculum/{family.name}"
    tasks = [
        make_task(
            family=name,
            language=language,
            kind="stdio",
            statement=statement(family, p),
            cases=hidden,
            public_cases=public,
            checker=family.checker,
            tier=family.tier,
            references=[reference],
            provenance=provenance,
        )
        for language in languages
    ]
    return Problem(key=f"{name}#{variant}", family=name, tasks=tasks)


class Curriculum:
    """The `curriculum` source: families of the configured tiers, `variants` each."""

    kind = "curriculum"

    def __init__(self, config: CurriculumSource, seed: int, languages: Sequence[str]) -> None:
        self.config = config
        self.seed = seed
        self.languages = list(languages)

    def selected(self) -> list[Family]:
        """The families of the configured tiers."""
        return [family for family in families() if family.tier in self.config.tiers]

    def problems(self) -> Iterator[Problem]:
        """Variant 0 of every family first, then variant 1, ...: early batches see every family."""
        chosen = self.selected()
        for variant in range(self.config.variants):
            for family in chosen:
                yield render_problem(family, variant, self.seed, self.languages)

    def manifest(self) -> dict[str, Any]:
        """What shaped these tasks: config, code revision, seed, languages."""
        return {
            "kind": self.kind,
            "config": self.config.model_dump(mode="json"),
            "dataset": DATASET,
            "revision": revision(),
            "seed": self.seed,
            "languages": self.languages,
            "families": len(self.selected()),
        }
