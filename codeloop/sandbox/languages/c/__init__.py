"""C: gcc (stdio tasks only)."""

from __future__ import annotations

from codeloop.sandbox.home import Home
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

HOME = Home(
    language=LANGUAGE,
    title="C",
    fences=("c",),
    worked_answer=(
        "#include <stdio.h>\n"
        "\n"
        "int main(void) {\n"
        "    long long a, b;\n"
        '    if (scanf("%lld %lld", &a, &b) != 2) return 1;\n'
        '    printf("%lld\\n", 2 * a + b);\n'
        "    return 0;\n"
        "}\n"
    ),
    hello='#include <stdio.h>\nint main(void){char s[64];scanf("%63s",s);puts(s);}\n',
)
