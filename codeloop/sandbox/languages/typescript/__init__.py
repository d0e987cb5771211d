"""TypeScript: compiled by tsc to JavaScript, run under node (stdio tasks only).

tsc only transpiles (`--noCheck`): a program with a type error but right behaviour runs
and passes, as under SandboxFusion's tsx, which does not type-check either; a syntax
error is still a failed compile. (Until 2026-12-07 tsc type-checked: `1 === 2` was
error TS2367, a failed compile here and a run there.)"""

from __future__ import annotations

from codeloop.sandbox.home import Home
from codeloop.sandbox.language import DEBIAN_NODE_MODULES, NODE_MODULES, NODE_PATH, Language

LANGUAGE = Language(
    aliases=("ts",),
    name="typescript",
    canary="const canary: number = 1;\nconsole.log(canary);\n",
    source="main.ts",
    compile=(
        "/usr/bin/tsc",
        "--noCheck",
        "--target",
        "es2022",
        "--module",
        "commonjs",
        "--types",
        "node",
        # Where tsc finds types: @types/node, and Debian's @types/lodash, by which an
        # `import ... from "lodash"` resolves (only node's are global: `--types`).
        "--typeRoots",
        f"{NODE_MODULES}/@types,{DEBIAN_NODE_MODULES}/@types",
        "--strict",
        "false",
        "--skipLibCheck",
        "--pretty",
        "false",
        "--outDir",
        "{box}/out",
        "{box}/main.ts",
    ),
    run=("/usr/bin/node", "--max-old-space-size={mem}", "{box}/out/main.js"),
    version=("/usr/bin/tsc", "--version"),
    tools=("/usr/bin/node", "/usr/bin/tsc", f"{NODE_MODULES}/@types/node"),
    install="apt-get install nodejs npm && npm install -g typescript@7 @types/node@20",
    env={"NODE_PATH": NODE_PATH},  # as JavaScript's: lodash is `require`d at run time
    address_space=False,
    virtual_overhead_mib=1024,
    processes=32,
    startup_s=0.2,
    memory_overhead_mib=64,
    out_of_memory=("heap out of memory", "Allocation failed"),
)

HOME = Home(
    language=LANGUAGE,
    title="TypeScript",
    fences=("typescript", "ts"),
    worked_answer=(
        'import * as fs from "fs";\n'
        "\n"
        'const [a, b] = fs.readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\n'
        "console.log(2 * a + b);\n"
    ),
    hello="import * as fs from 'fs';\nconsole.log(fs.readFileSync(0, 'utf8').trim());\n",
)
