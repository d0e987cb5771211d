"""Shared set-up of the test process.

The math settings that make training reproducible are set here, before any test
module imports torch, as `codeloop.cli.main` sets them in every phase process:
tests that train in-process then round as the loop's own processes do. (`import
codeloop` no longer sets them; see tests/test_config.py.)
"""

from codeloop.train.determinism import use_reproducible_math

use_reproducible_math()
