"""JavaScript function tests in two sandboxes, so the checked code cannot write its verdict.

The test process (`_codeloop_driver.js`) and the solution's process
(`_codeloop_server.js`, which loads the program) run in two bubblewrap sandboxes
with different uids and pid namespaces (`harness.run(..., partner=...)`): the
solution cannot see, signal or read the test process, and they share two pipes only.
The driver reads the nonce, the trusted prompt and the hidden test from stdin (never
a file the solution can read), runs the test with the entry point replaced by a proxy
that calls across the pipes, and prints the nonce only when the whole test ran (the
vacuous line, `function_tests.vacuous`, when it never called the solution). A NaN or
an infinity anywhere in a returned value ends the test process as a wrong answer.
Values cross as type-strict plain data (`_codeloop_codec.js`): no object whose
methods the solution wrote reaches the test, so patched prototypes, a frozen
`console.assert`, `process.exit(0)` or a printed marker gain it nothing. The test's
helpers (HumanEval-X's `encodeCyclic`) come from the task's prompt, run in the test
process.
"""

from __future__ import annotations

from importlib import resources

FILES = ("_codeloop_codec.js", "_codeloop_server.js", "_codeloop_driver.js")
DRIVER = "_codeloop_driver.js"
SERVER = "_codeloop_server.js"
CODEC = "_codeloop_codec.js"


def sources() -> dict[str, bytes]:
    """The trusted files of the box, by name."""
    folder = resources.files(__name__)
    return {name: folder.joinpath(name).read_bytes() for name in FILES}
