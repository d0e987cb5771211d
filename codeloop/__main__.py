"""Allow `python -m codeloop`, which the launcher uses to run phases as subprocesses."""

from codeloop.cli import main

main()
