"""Shared set-up of the test process.

The math settings that make training reproducible are set here, before any test
module imports torch, as `codeloop.cli.main` sets them in every phase process:
tests that train in-process then round as the loop's own processes do. (`import
codeloop` no longer sets them; see tests/test_config.py.)
"""

from codeloop.train.determinism import use_reproducible_math

use_reproducible_math()

import os  # noqa: E402

if not os.environ.get("CODELOOP_THIRD_PARTY"):
    # Third-party test files (tests/third_party) run unchanged in a pytest process of
    # their own (tests/test_third_party.py): their imports (verl sets logging and Ray
    # flags when imported) stay out of this one.
    collect_ignore = ["third_party"]
