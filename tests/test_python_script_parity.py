"""A Python stdio program ends the same way warm and cold, and may end with `exit()`.

SandboxFusion's Python runs `site`, which defines `exit()` and `quit()`; the sandbox runs
`python3 -S` (no site-packages), so both are defined by `_codeloop_script.py` as `site`
defines them, cold (its `-c` code) and warm (the zygote imports it). A correct answer
ending in `exit()` passes on every path: `check_program`, `check_many`, `/run_code`.

Then the differential test: hostile preludes (anti-cheat code in public datasets
rebinds `os._exit`, `sys.exit`, builtins, the standard streams, registers atexit
handlers) prepended to a few stdio programs, each run in the worker's warm sandbox and
in a cold one: the same status, exit code and stdout. The zygote once called
`os._exit` from the module the program had changed (`os._exit = None` answered rc 120).
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from codeloop.config import SandboxLimits
from codeloop.sandbox import check_many, check_program
from codeloop.sandbox.check import Sandbox
from codeloop.sandbox.request import CheckRequest, RunRequest
from codeloop.serve.limits import Settings
from tests.support.serve import running

pytestmark = pytest.mark.timeout(300)
LIMITS = SandboxLimits(time_s=3.0, memory_mib=256, output_kib=64, processes=32, workdir_mib=16)

ENDS_IN_EXIT = {
    "exit()": "a, b = map(int, input().split())\nprint(a + b)\nexit()\n",
    "quit()": "a, b = map(int, input().split())\nprint(a + b)\nquit()\n",
    "exit(0) in a function": (
        "def main():\n    a, b = map(int, input().split())\n    print(a + b)\n    exit(0)\n\n"
        "main()\nprint('never')\n"
    ),
}

PRELUDES = {
    "os._exit = None": "import os\nos._exit = None\n",
    "os.close = None": "import os\nos.close = None\n",
    "sys.exit = None": "import sys\nsys.exit = None\n",
    "posix._exit = None": "import posix\nposix._exit = None\n",
    "builtins rebound": (
        "import builtins\nbuiltins.isinstance = None\nbuiltins.SystemExit = None\n"
        "builtins.BaseException = None\nbuiltins.getattr = None\n"
    ),
    "builtins.print wrapped": (
        "import builtins\n_print = builtins.print\n"
        "builtins.print = lambda *a, **k: _print('>', *a, **k)\n"
    ),
    "contextlib and traceback broken": (
        "import contextlib, traceback\ncontextlib.suppress = None\n"
        "traceback.print_exception = None\n"
    ),
    "stdout replaced, earlier output buffered": (
        "import io, sys\nprint('early')\nsys.stdout = io.StringIO()\n"
    ),
    "stdout rewrapped": (
        "import io, sys\n"
        "sys.stdout = io.TextIOWrapper(io.FileIO(1, 'w', closefd=False), write_through=False)\n"
    ),
    "stdout is stderr": "import sys\nsys.stdout = sys.stderr\n",
    "stdout None": "import sys\nsys.stdout = None\n",
    "atexit prints": "import atexit\natexit.register(lambda: print('at exit'))\n",
    "atexit exits": "import atexit, os\natexit.register(os._exit, 7)\n",
    "excepthook prints": "import sys\nsys.excepthook = lambda *a: print('hooked', a[0].__name__)\n",
    "excepthook None": "import sys\nsys.excepthook = None\n",
    "threading._shutdown broken": "import threading\nthreading._shutdown = None\n",
    "exit rebound": "exit = quit = None\n",
    "a thread prints late": (
        "import threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(0.1), print('late'))).start()\n"
    ),
    "stdout closed": "import sys\nsys.stdout.close()\n",
    "__main__ replaced": "import sys, types\nsys.modules['__main__'] = types.ModuleType('x')\n",
}

PROGRAMS = {
    "sum": ("print(sum(map(int, input().split())))\n", "1 2 3\n"),
    "ends in exit(3)": ("print(input()[::-1])\nexit(3)\n", "abc\n"),
    "raises": ("print('before')\nraise ValueError('no')\n", ""),
    "sys.exit message": ("import sys as _s\nprint('x')\n_s.exit('bad')\n", ""),
}


@pytest.fixture(scope="module")
def boxes():
    warm = Sandbox("bwrap", worker=21)
    assert warm.warm is not None, "CODELOOP_WARM is off in this environment"
    assert warm.warm.start() is None, warm.warm.problem
    cold = Sandbox("bwrap", worker=22)
    cold.warm = None
    yield warm, cold
    warm.warm.stop()


@pytest.mark.parametrize("name", sorted(ENDS_IN_EXIT))
def test_a_correct_program_ending_in_exit_passes_check_program(name: str) -> None:
    program = ENDS_IN_EXIT[name]
    found = check_program("python", program, [{"input": "2 3\n", "output": "5\n"}], limits=LIMITS)
    assert found.status == "passed", found.feedback


def test_programs_ending_in_exit_pass_check_many_and_wrong_ones_fail() -> None:
    requests = [
        CheckRequest(language="python", program=program, cases=[{"input": "2 3", "output": "5"}])
        for program in ENDS_IN_EXIT.values()
    ]
    wrong = "print(4)\nexit()\n"
    requests.append(
        CheckRequest(language="python", program=wrong, cases=[{"input": "", "output": "5"}])
    )
    found = [check.status for check in check_many(requests)]
    assert found == ["passed"] * len(ENDS_IN_EXIT) + ["wrong_answer"], found


@pytest.mark.parametrize("name", sorted(ENDS_IN_EXIT))
def test_exit_is_defined_warm_and_cold(boxes: tuple[Sandbox, Sandbox], name: str) -> None:
    for box in boxes:
        run = box.run_program(
            RunRequest(language="python", program=ENDS_IN_EXIT[name], stdin="2 3\n", limits=LIMITS)
        ).run
        assert run is not None and (run.status, run.exit_code, run.stdout) == ("finished", 0, "5\n")
    assert boxes[0].warm is not None and boxes[0].warm.problem is None


def test_exit_and_quit_are_sites_own_and_user_site_packages_stay_off(
    boxes: tuple[Sandbox, Sandbox],
) -> None:
    probe = (
        "import sys\nprint(repr(exit), repr(quit), type(exit).__module__)\n"
        "print(sys.flags.no_site, sys.flags.ignore_environment, 'site' in sys.modules)\n"
        "print([p for p in sys.path if 'site-packages' in p or 'dist-packages' in p])\n"
    )
    seen = []
    for box in boxes:
        run = box.run_program(RunRequest(language="python", program=probe, limits=LIMITS)).run
        assert run is not None and run.exit_code == 0, run
        seen.append(run.stdout)
    assert seen[0] == seen[1]
    assert seen[0] == (
        "Use exit() or Ctrl-D (i.e. EOF) to exit Use quit() or Ctrl-D (i.e. EOF) to exit "
        "_sitebuiltins\n1 1 False\n[]\n"
    )


def test_run_code_scores_a_program_ending_in_exit() -> None:
    settings = Settings(token=None, workers=1)
    with running(settings) as url:
        body = {"code": ENDS_IN_EXIT["exit()"], "stdin": "2 3\n", "language": "python"}
        request = urllib.request.Request(
            f"{url}/run_code",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            found = json.loads(answer.read())
    assert found["status"] == "Success", found
    assert found["run_result"]["stdout"] == "5\n" and found["run_result"]["return_code"] == 0


def test_verls_sandbox_fusion_client_scores_a_solution_ending_in_exit_1() -> None:
    """verl's own reward client, unchanged, through `/run_code`: the right program that
    ends in `exit()` scores 1.0 (a NameError once scored it 0), a wrong one 0.0."""
    verl = Path(sys.prefix) / "verl-pkgs"
    if not verl.is_dir():
        pytest.skip("verl is installed by `make setup-test` (.venv/verl-pkgs)")
    if str(verl) not in sys.path:
        sys.path.append(str(verl))  # appended: nothing there shadows the project's packages
    from verl.utils.reward_score.sandbox_fusion import compute_score

    tests = {"inputs": ["2 3\n", "10 -4\n"], "outputs": ["5\n", "6\n"]}
    wrong = ENDS_IN_EXIT["exit()"].replace("a + b", "a * b")
    with running(Settings(token=None, workers=1)) as url:
        semaphore = threading.Semaphore(2)
        scores = [
            compute_score(f"{url}/run_code", semaphore, 1024, f"```python\n{code}```", tests)[0]
            for code in (ENDS_IN_EXIT["exit()"], ENDS_IN_EXIT["quit()"], wrong)
        ]
    assert scores == [1.0, 1.0, 0.0], scores


CASES = sorted(itertools.product(PRELUDES, PROGRAMS))


@pytest.mark.parametrize(("prelude", "program"), CASES)
def test_a_hostile_prelude_ends_the_same_warm_and_cold(
    boxes: tuple[Sandbox, Sandbox], prelude: str, program: str
) -> None:
    source, stdin = PROGRAMS[program]
    request = RunRequest(
        language="python", program=PRELUDES[prelude] + source, stdin=stdin, limits=LIMITS
    )
    warm_box, cold_box = boxes
    warm = warm_box.run_program(request).run
    cold = cold_box.run_program(request).run
    assert warm_box.warm is not None and warm_box.warm.problem is None, warm_box.warm.problem
    assert warm is not None and cold is not None
    assert (warm.status, warm.exit_code, warm.stdout) == (
        cold.status,
        cold.exit_code,
        cold.stdout,
    ), (
        warm,
        cold,
    )
