"""Runs a stdio program as `python3 main.py` runs it, with `exit` and `quit` defined.

The sandbox starts Python with -S: no `site`, so no site-packages (user or system) and
no .pth files. But `site` is also what defines `exit()` and `quit()`, and model-written
stdio programs often end with one (a NameError there scores a correct answer 0). `run`
defines both as `site` does (its own `_sitebuiltins.Quitter`), then runs the program as
the interpreter runs a script: a fresh `__main__` with its own argv and folder, an
uncaught exception printed by `sys.excepthook` without this module's frame, then exit
status 1.

Cold, this text is the `-c` code of `python3 -S -E -B -c CODE /box/main.py`; warm,
the zygote imports it and calls `run` in each check process, then ends the process as
the interpreter would (`status` and the zygote's `_script`). One text for both paths.
What runs after the program is bound before it starts (locals, default arguments), so a
program that rebinds builtins or module attributes does not change how it ends.
The text holds no curly brackets: the language's argv templates are `str.format`ted.
"""

import os
import sys


def run(path, source=None):
    """Run the program at `path` (its `source` bytes, if read already) as `__main__`;
    raises SystemExit as the interpreter would end (1 after an uncaught exception)."""
    modules, system_exit, base_exception = sys.modules, SystemExit, BaseException
    fallback = sys.__excepthook__
    sys.path[0] = path.rpartition("/")[0]  # before any import: nothing shadows them
    # The optional scientific runtime (`make science`), bound read-only where installed,
    # after the standard library: it never shadows a standard module. Its BLAS and
    # OpenMP pools get one thread, as the run gets one CPU: a thread per CPU each
    # reserves memory, and past the run's address-space limit numpy's import hangs.
    sys.path.append("/opt/codeloop-science/python%d.%d" % sys.version_info[:2])  # noqa: UP031
    os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    sys.argv[:] = [path]
    import _sitebuiltins
    import builtins

    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
    if source is None:
        with open(path, "rb") as handle:
            source = handle.read()
    main = type(sys)("__main__")
    main.__file__ = path
    main.__builtins__ = builtins
    main.__cached__ = None
    modules["__main__"] = main
    try:
        exec(compile(source, path, "exec", dont_inherit=True), main.__dict__)
    except system_exit:
        raise
    except base_exception as error:
        # The hook prints the exception's own traceback: this frame is cut there.
        error.__traceback__ = error.__traceback__.tb_next
        shown = (type(error), error, error.__traceback__)
        try:
            sys.excepthook(*shown)
        except base_exception:
            fallback(*shown)
        raise system_exit(1) from None


def status(code, _int=int, _str=str, _isinstance=isinstance, _base=BaseException):
    """The exit status the interpreter gives `SystemExit(code)`: 0 for None, an int's
    low byte, else the code printed on stderr and 1."""
    if code is None:
        return 0
    if _isinstance(code, _int):
        return code & 0xFF
    try:  # noqa: SIM105 (contextlib is not bound; nothing is imported here)
        sys.stderr.write(_str(code) + "\n")
    except _base:
        pass
    return 1


if __name__ == "__main__":
    run(sys.argv[1])
