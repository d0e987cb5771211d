"""Evaluation suites: HumanEval-X and HumanEval scored in the sandbox, with a bound summary.

Public API:
    load_humaneval_x(data_dir, languages) / load_humaneval(data_dir) -> Problems
    canonical_samples(suite, problems, limit) -> list[Sample]
    read_samples(path, suite) -> list[Sample]
    evaluate(suite, problems, samples, out, languages=...) -> Evaluation
"""

from __future__ import annotations

from codeloop.evaluate.data import Problems, load_humaneval, load_humaneval_x
from codeloop.evaluate.runner import Evaluation, evaluate, read_samples
from codeloop.evaluate.suites import SUITES, Job, Sample, canonical_samples, make_job

__all__ = [
    "SUITES",
    "Evaluation",
    "Job",
    "Problems",
    "Sample",
    "canonical_samples",
    "evaluate",
    "load_humaneval",
    "load_humaneval_x",
    "make_job",
    "read_samples",
]
