"""Evaluation: every suite in one registry, scored by one runner in the sandbox, bound.

Layout: `suites` (the registry: every suite `codeloop eval` and an audit know, with
one base class per kind), `runner` (the one path from answers to the sandbox and
to results.jsonl and summary.json), `answers` (answers from a model or a samples
file), `scoring` (the evaluator the loop shares: a reply's verdict, re-runs,
probes, pass@k), `humaneval` (HumanEval(-X) composition), `stdio` (jsonl:PATH
problems), `jsonl` (the one JSONL reader), `data` (benchmark data), `weak` (weak
tests), `compare` (before and after), `cli` (`codeloop eval`).

Public API:
    load_humaneval_x(data_dir, languages) / load_humaneval(data_dir) -> Problems
    canonical_samples(suite, problems, limit) -> list[Sample]
    read_samples(path, suite) -> list[Sample]
    evaluate(suite, problems, samples, out, languages=...) -> Evaluation
    suite_tasks(config, name, session=None) -> list[Task]
    score(suite, tasks, answers, out, sandbox) -> summary
"""

from __future__ import annotations

from codeloop.evaluate.answers import Answers, read_answers, read_samples
from codeloop.evaluate.data import Problems, load_humaneval, load_humaneval_x
from codeloop.evaluate.humaneval import Job, Sample
from codeloop.evaluate.runner import Evaluation, evaluate, run, score
from codeloop.evaluate.suites import SUITES, canonical_samples, make_job, suite_tasks

__all__ = [
    "SUITES",
    "Answers",
    "Evaluation",
    "Job",
    "Problems",
    "Sample",
    "canonical_samples",
    "evaluate",
    "load_humaneval",
    "load_humaneval_x",
    "make_job",
    "read_answers",
    "read_samples",
    "run",
    "score",
    "suite_tasks",
]
