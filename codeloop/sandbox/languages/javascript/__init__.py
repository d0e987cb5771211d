"""JavaScript: node, and function tests in two sandboxes (`box`): `console.assert` only
prints "Assertion failed" and exits 0, so that phrase is a failure marker.
"""

from __future__ import annotations

import json
import re

from codeloop.sandbox.home import Home
from codeloop.sandbox.language import BOX, NODE_PATH, HumanEvalX, Language
from codeloop.sandbox.languages.javascript import box
from codeloop.sandbox.languages.javascript.trivial import trivial_programs
from codeloop.sandbox.testbuild import (
    BuildHost,
    TaskRefused,
    TestBuild,
    TestContext,
    make_nonce,
    vacuous,
)

LANGUAGE = Language(
    aliases=("nodejs", "js"),
    name="javascript",
    source="main.js",
    run=("/usr/bin/node", "--max-old-space-size={mem}", "{box}/main.js"),
    version=("/usr/bin/node", "--version"),
    tools=("/usr/bin/node",),
    install="apt-get install nodejs",
    # npm's modules and Debian's (lodash: MBXP's tests `require` it).
    env={"NODE_PATH": NODE_PATH},
    address_space=False,
    virtual_overhead_mib=1024,
    processes=32,
    startup_s=0.2,
    memory_overhead_mib=64,
    out_of_memory=("heap out of memory", "Allocation failed"),
    compile_error=("SyntaxError:",),
    compile_error_with=("internalCompileFunction", "wrapSafe"),
    needs_entry_point=True,
)


def compose_test(
    sandbox: BuildHost,
    language: Language,
    program: str,
    test: str,
    memory_mib: int,
    context: TestContext,
) -> TestBuild:
    entry_point = context.entry_point or _javascript_entry(context.prompt)
    if entry_point:
        setup = {
            "nonce": make_nonce(),
            "prompt": context.prompt,
            "test": test,
            "entry_point": entry_point,
        }
        node = language.run_argv(memory_mib)[:-1]  # node and its flags, without the file
        return TestBuild(
            files={language.source: program.encode(), **box.sources()},
            run=[*node, f"{BOX}/{box.DRIVER}", "{requests}", "{replies}"],
            partner=[*node, f"{BOX}/{box.SERVER}", "{requests}", "{replies}"],
            solution_files=(language.source, box.SERVER, box.CODEC),
            env=dict(language.env),
            success_marker=setup["nonce"],
            vacuous_marker=vacuous(setup["nonce"]),
            stdin=json.dumps(setup).encode(),
            syntax_exit=3,
        )
    raise TaskRefused(
        "a javascript function test needs an entry point: pass `entry_point`, or a prompt "
        "that declares the function under test"
    )


def _javascript_entry(prompt: str) -> str | None:
    """The function a HumanEval-X JavaScript prompt leaves open: its last declaration."""
    found = re.findall(
        r"^(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=|^function\s+([A-Za-z_$][\w$]*)",
        prompt,
        re.MULTILINE,
    )
    if not found:
        return None
    last = found[-1]
    return last[0] or last[1]


HOME = Home(
    language=LANGUAGE,
    title="JavaScript",
    fences=("javascript", "js", "node"),
    worked_answer=(
        'const [a, b] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\n'
        "console.log(2 * a + b);\n"
    ),
    hello="console.log(require('fs').readFileSync(0, 'utf8').trim());\n",
    humaneval_x=HumanEvalX(
        "js", "JavaScript", position=1, entry_point=r"const\s+(\w+)\s*=|function\s+(\w+)\s*\("
    ),
    compose_test=compose_test,
    trivial_programs=trivial_programs,
)
