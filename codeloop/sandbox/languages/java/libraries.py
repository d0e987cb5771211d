"""The jars every Java program compiles and runs with, beside its own classes.

MultiPL-E's Java tests `import org.javatuples.*` (Debian's `libjavatuples-java`, which
the Makefile's set-up installs): a correct answer to one of them must compile here as
it does there. A jar that is not installed is skipped by javac and the JVM alike (a
program that needs it then fails to compile, naming the missing package), and /usr is
read-only in every sandbox, so the program cannot change one.
"""

from __future__ import annotations

JAVATUPLES = "/usr/share/java/javatuples.jar"
LIBRARIES = (JAVATUPLES,)


def class_path(folder: str) -> str:
    """The class path of a compile or run whose own classes are in `folder`: that folder
    first (a program's class wins over a library's of the same name), then the jars."""
    return ":".join((folder, *LIBRARIES))
