"""Java: javac and the JVM, and function tests as two JVMs in two sandboxes (`box`): the
test's Main and the solution compiled apart, run with assertions enabled (Java/151's
last check is an `assert`); javac starts from a class-data archive (`javac`), and each
worker keeps one javac JVM for all its compiles (`javac_service`).
"""

from __future__ import annotations

import re
from pathlib import Path

from codeloop.sandbox import harness
from codeloop.sandbox.home import Home
from codeloop.sandbox.language import BOX, BRACED_FUNCTION, HumanEvalX, Language
from codeloop.sandbox.languages.java import box, javac_service
from codeloop.sandbox.languages.java.javac import _javac_steps
from codeloop.sandbox.languages.java.libraries import class_path
from codeloop.sandbox.languages.java.trivial import trivial_programs
from codeloop.sandbox.testbuild import (
    PIPES,
    BuildHost,
    TaskRefused,
    TestBuild,
    TestContext,
    TrustedHalf,
    make_nonce,
    refuse_unsafe,
    vacuous,
)

_JVM_FAST = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto")

LANGUAGE = Language(
    debug_run_with=("-ea",),
    name="java",
    canary=(
        "public class Main {\n"
        "    public static void main(String[] args) { System.out.println(1); }\n"
        "}\n"
    ),
    source="Main.java",
    compile=(
        "/usr/bin/javac",
        *(f"-J{flag}" for flag in _JVM_FAST),
        "-d",
        "{box}",
        "-encoding",
        "UTF-8",
        # String `+` as StringBuilder calls, as before Java 9, not an
        # invokedynamic whose bootstrap every JVM start pays for: a HumanEval-X
        # check's two JVMs ran about a quarter faster. The strings are the same.
        "-XDstringConcat=inline",
        # The program's folder, as javac's default, and the libraries (`libraries`).
        "-classpath",
        class_path("{box}"),
        "{box}/Main.java",
    ),
    run=("/usr/bin/java", *_JVM_FAST, "-Xss64m", "-Xmx{mem}m", "-cp", class_path("{box}"), "Main"),
    version=("/usr/bin/javac", "-version"),
    tools=("/usr/bin/javac", "/usr/bin/java"),
    install="apt-get install default-jdk-headless",
    mounts=("/etc/java-17-openjdk",),
    address_space=False,
    virtual_overhead_mib=4096,
    processes=64,
    startup_s=0.5,
    memory_overhead_mib=256,
    out_of_memory=("java.lang.OutOfMemoryError",),
    needs_prompt=True,
)


_JAVA_MAIN = re.compile(r"\bpublic\s+class\s+Main\b")


def compose_test(
    sandbox: BuildHost,
    language: Language,
    program: str,
    test: str,
    memory_mib: int,
    context: TestContext,
) -> TestBuild:
    sig = box.signature(context.prompt, context.entry_point) if context.prompt else None
    if sig is not None and _JAVA_MAIN.search(test) and language.compile is not None:
        nonce = make_nonce()
        driver = _javac_steps(sandbox, language, ["drv/Main.java"])
        steps = _javac_steps(sandbox, language, ["srv/Main.java"])
        java = language.run_argv(memory_mib)[:-3]  # java and its flags, without -cp and class
        return TestBuild(
            files={"srv/Main.java": box.server_source(program).encode()},
            compile=steps.argv,
            # The test's classes depend on the task only: compiled once per task.
            trusted=TrustedHalf(
                files={"drv/Main.java": box.driver_source(context.prompt, test, sig).encode()},
                compile=driver.argv,
            ),
            run=[
                java[0],
                "-ea",
                *java[1:],
                "-cp",
                class_path(f"{BOX}/drv"),
                "CodeloopDriver",
                *PIPES,
            ],
            partner=[*java, "-cp", class_path(f"{BOX}/srv"), "CodeloopServer", *PIPES],
            solution_files=("srv",),
            env=dict(language.env),
            binds=steps.binds,
            success_marker=nonce,
            vacuous_marker=vacuous(nonce),
            stdin=(nonce + "\n").encode(),
        )
    if sig is not None and language.compile is not None:
        raise TaskRefused(
            "a java function test must declare `public class Main` (the test's own class, "
            "compiled apart from the solution)"
        )
    raise refuse_unsafe("java", "arrays, user-defined classes")


def _javac_service(backend: harness.Backend, scratch: Path) -> javac_service.JavacService | None:
    """The worker's javac JVM, where bubblewrap isolates and CODELOOP_JAVAC_SERVICE is not
    off (None: every Java compile starts its own)."""
    if not javac_service.enabled() or backend.name != "bwrap":
        return None
    return javac_service.JavacService(backend, scratch)


HOME = Home(
    language=LANGUAGE,
    title="Java",
    fences=("java",),
    worked_answer=(
        "import java.util.Scanner;\n"
        "\n"
        "public class Main {\n"
        "    public static void main(String[] args) {\n"
        "        Scanner in = new Scanner(System.in);\n"
        "        long a = in.nextLong();\n"
        "        long b = in.nextLong();\n"
        "        System.out.println(2 * a + b);\n"
        "    }\n"
        "}\n"
    ),
    hello=(
        "public class Main { public static void main(String[] a) {\n"
        " System.out.println(new java.util.Scanner(System.in).next()); } }\n"
    ),
    humaneval_x=HumanEvalX("java", "Java", position=3, entry_point=BRACED_FUNCTION),
    compose_test=compose_test,
    trivial_programs=trivial_programs,
    compile_service=_javac_service,
)
