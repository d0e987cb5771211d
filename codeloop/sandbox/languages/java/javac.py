"""javac's start-up paid once: a class-data archive of javac, and the batch compiler jar
the worker's javac service runs (`javac_service`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from codeloop.sandbox.language import BOX, Language, version_of
from codeloop.sandbox.languages.java import box
from codeloop.sandbox.languages.java.libraries import class_path
from codeloop.sandbox.testbuild import (
    BuildHost,
    build_once,
    failed_archives,
)
from codeloop.store import sha256_json

_JAVAC_CDS_MOUNT = "/javacds"
_JAVAC_WARMUP = """import java.util.*;
import java.util.stream.*;

class Solution {
    public List<Integer> f(List<Integer> xs, String s) {
        Map<Character, Integer> seen = new HashMap<>();
        for (char c : s.toCharArray()) seen.merge(c, 1, Integer::sum);
        return xs.stream().filter(x -> x % 2 == 0).map(x -> x * seen.size())
            .collect(Collectors.toList());
    }
}

public class Main {
    public static void main(String[] args) {
        Solution s = new Solution();
        List<Boolean> correct = Arrays.asList(
            s.f(new ArrayList<>(Arrays.asList(1, 2)), "ab").equals(List.of(4))
        );
        if (correct.contains(false)) {
            throw new AssertionError();
        }
    }
}
"""
"""A typical test program: compiling it loads the compiler classes a check needs, and
the archive dumped from that run (`javac_batch`) maps them into every later compile."""


JAVAC_BATCH_MOUNT = "/javacbatch"
JAVAC_BATCH_JAR = "codeloop-javac.jar"
_JAVAC_BATCH_ARCHIVE = "codeloop-javac.jsa"


@dataclass(frozen=True)
class _JavaCompile:
    """The compile step of a Java function test: its argv and the folders it needs."""

    argv: list[str]
    binds: list[tuple[str, str, bool]]


def _javac_steps(sandbox: BuildHost, language: Language, sources: list[str]) -> _JavaCompile:
    """Compile each of `sources` (paths in the box) apart, into its own folder.

    The test and the solution are two compilations (their classes must not meet).
    One JVM runs both (`CodeloopJavac`, mapping the compiler's classes from a
    class-data archive) where that could be built: measured here, 0.41 s against
    0.76 s for two javac starts with their own archive. Otherwise `javac A && javac B`.
    The options are javac's own either way, and `-proc:none`: no annotation processor
    runs, whatever the source says.
    """
    assert language.compile is not None
    # Without its JVM flags, output folder, class path and source: each half has its own.
    options = [
        part
        for part in language.compile[1:]
        if not part.startswith(("-J", "{box}", "-d", "-classpath"))
    ]
    # javac's own default class path is the working folder (the box); in one JVM it
    # would be the JVM's (our jar), so it is given, with the libraries (`libraries`).
    options += ["-proc:none", "-classpath", class_path(BOX)]
    groups = [
        [*options, "-d", f"{BOX}/{Path(source).parent}", f"{BOX}/{source}"] for source in sources
    ]
    batch = javac_batch(sandbox, language)
    if batch is None:
        steps = [[language.compile[0], *_javac_jvm_flags(language, "-J"), *g] for g in groups]
        return _JavaCompile(["/bin/sh", "-c", " && ".join(map(shlex.join, steps))], [])
    jar_folder, archive_folder = batch
    argv = [language.run[0], *_javac_jvm_flags(language, "")]
    binds = [(str(jar_folder), JAVAC_BATCH_MOUNT, False)]
    if archive_folder is not None:
        argv.append(f"-XX:SharedArchiveFile={_JAVAC_CDS_MOUNT}/{_JAVAC_BATCH_ARCHIVE}")
        binds.append((str(archive_folder), _JAVAC_CDS_MOUNT, False))
    argv += ["-cp", f"{JAVAC_BATCH_MOUNT}/{JAVAC_BATCH_JAR}", "CodeloopJavac"]
    for index, group in enumerate(groups):
        argv += [*(["--"] if index else []), *group]
    return _JavaCompile(argv, binds)


def _javac_jvm_flags(language: Language, prefix: str) -> list[str]:
    """The JVM flags javac runs with (`-J...` in the registry), each with `prefix`."""
    assert language.compile is not None
    return [prefix + part[2:] for part in language.compile if part.startswith("-J")]


def javac_batch(sandbox: BuildHost, language: Language) -> tuple[Path, Path | None] | None:
    """(folder of codeloop-javac.jar, folder of its class-data archive or None), built
    once per JDK; None where the jar cannot be built (then each compile is a javac).

    The archive is dumped from a run that loads the jar from the same path every check
    mounts it at: the JVM uses an archive only for the same class path, jar and mtime.
    """
    jvm_flags = _javac_jvm_flags(language, "")
    key = sha256_json(
        {
            "javac": version_of(language),
            "flags": jvm_flags,
            "source": box.batch_compiler_source(),
        }
    )[:16]
    if key in failed_archives:
        return None
    build = (
        f"{language.compile[0]} -proc:none -d {BOX}/classes {BOX}/CodeloopJavac.java && "
        f"{Path(language.compile[0]).parent}/jar cf {BOX}/{JAVAC_BATCH_JAR} -C {BOX}/classes ."
    )
    try:
        jar_folder = build_once(
            sandbox,
            "javac-batch",
            key,
            {"CodeloopJavac.java": box.batch_compiler_source()},
            ["/bin/sh", "-c", build],
            {},
            JAVAC_BATCH_JAR,
        )
    except ValueError:
        failed_archives.add(key)
        return None
    if key + "-cds" in failed_archives:
        return jar_folder, None
    dump = [
        language.run[0],
        *jvm_flags,
        f"-XX:ArchiveClassesAtExit={BOX}/{_JAVAC_BATCH_ARCHIVE}",
        "-cp",
        f"{JAVAC_BATCH_MOUNT}/{JAVAC_BATCH_JAR}",
        "CodeloopJavac",
        "-proc:none",
        "-d",
        f"{BOX}/classes",
        f"{BOX}/Main.java",
    ]
    try:
        archive_folder = build_once(
            sandbox,
            "javac-batch-cds",
            key,
            {"Main.java": _JAVAC_WARMUP},
            dump,
            {},
            _JAVAC_BATCH_ARCHIVE,
            binds=[(str(jar_folder), JAVAC_BATCH_MOUNT, False)],
        )
    except ValueError:
        failed_archives.add(key + "-cds")
        return jar_folder, None
    return jar_folder, archive_folder
