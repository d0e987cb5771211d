"""C: gcc (stdio tasks only)."""

from __future__ import annotations

from codeloop.sandbox.language import Language

LANGUAGE = Language(
    name="c",
    canary="int main(void) { return 0; }\n",
    source="main.c",
    compile=(
        "/usr/bin/gcc",
        "-O2",
        "-std=gnu17",
        "-o",
        "{box}/main",
        "{box}/main.c",
        "-lm",
    ),
    run=("{box}/main",),
    version=("/usr/bin/gcc", "--version"),
    tools=("/usr/bin/gcc",),
    install="apt-get install gcc libc6-dev",
)

compose_test = None


compile_setup = None
"""No compile extras beyond `LANGUAGE`."""

NAME = "C"
"""The language's name in prompts."""
FENCES = ("c",)
"""Code-fence tags an answer may use; the first is the one prompts ask for."""
WORKED_ANSWER = (
    "#include <stdio.h>\n"
    "\n"
    "int main(void) {\n"
    "    long long a, b;\n"
    '    if (scanf("%lld %lld", &a, &b) != 2) return 1;\n'
    '    printf("%lld\\n", 2 * a + b);\n'
    "    return 0;\n"
    "}\n"
)
"""The ideal answer to the prompt's worked example (`recipe.WORKED_PROBLEM`)."""
HUMANEVAL_X = None
"""How HumanEval-X names this language (None: not in HumanEval-X)."""
trivial_programs = None
"""No trivial-answer builder: the language has no function tasks."""
