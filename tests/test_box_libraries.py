"""Libraries public benchmarks' programs import, in the real sandbox (issue 66, part 2).

- Java: MultiPL-E's tests `import org.javatuples.*` (Debian's libjavatuples-java): the
  jar is on the class path of every compile and run, one-shot and in the javac service,
  stdio programs and both halves of a function test.
- JavaScript and TypeScript: MBXP's tests `require('lodash')` (Debian's node-lodash):
  Debian's module folder is on NODE_PATH, and its types on tsc's type roots, so an
  `import` of lodash compiles too.
- Python: the optional scientific runtime (`make science`, `science.txt`), bound
  read-only into every sandbox and appended to the box Python's path (still -S). Where it
  is installed, numpy programs pass cold and warm, as stdio programs and function tests,
  and verl's own sandbox_fusion client scores one 1.0 through `codeloop serve`. Where it
  is not (a server pointed at an empty folder), `/run_code` and `/v1/check` name the
  make target beside an unchanged verdict.

Every program runs in the sandbox; the Debian packages come with `make setup-test`, the
runtime with `make science` (the tests that need one skip, saying so, without it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from codeloop.config import SandboxLimits
from codeloop.sandbox import check_program, languages
from codeloop.sandbox.check import Sandbox
from codeloop.sandbox.language import DEBIAN_NODE_MODULES
from codeloop.sandbox.languages.java import libraries
from codeloop.sandbox.languages.python import box as pybox
from codeloop.sandbox.languages.python import science
from codeloop.sandbox.request import Check, CheckRequest, RunRequest
from codeloop.serve.limits import Settings
from tests.support.serve import running

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[1]
VERL = Path(sys.prefix) / "verl-pkgs"
LIMITS = SandboxLimits(time_s=10.0, memory_mib=512, output_kib=64, processes=32, workdir_mib=16)

needs_javatuples = pytest.mark.skipif(
    not os.path.exists(libraries.JAVATUPLES),
    reason=f"{libraries.JAVATUPLES} is missing: `make setup-test` installs libjavatuples-java",
)
needs_lodash = pytest.mark.skipif(
    not os.path.isdir(f"{DEBIAN_NODE_MODULES}/lodash"),
    reason=f"{DEBIAN_NODE_MODULES}/lodash is missing: `make setup-test` installs node-lodash",
)
needs_science = pytest.mark.skipif(
    not science.installed(),
    reason="the optional scientific Python runtime is not installed: `make science` "
    f"({science.host_folder()})",
)

# --- Java: javatuples ---------------------------------------------------------------------

JAVA_PAIR = (
    "import java.util.Scanner;\n"
    "import org.javatuples.Pair;\n"
    "\n"
    "public class Main {\n"
    "    public static void main(String[] args) {\n"
    "        Scanner in = new Scanner(System.in);\n"
    "        Pair<Integer, String> pair = Pair.with(in.nextInt(), in.next());\n"
    '        System.out.println(pair + " " + pair.getValue0() * 2);\n'
    "    }\n"
    "}\n"
)
JAVA_CASES = [{"input": "21 x\n", "output": "[21, x] 42\n"}]

JAVA_PROMPT = (
    "import java.util.*;\n"
    "import org.javatuples.Pair;\n"
    "\n"
    "class Solution {\n"
    "    public int sumPair(int a, int b) {\n"
)
JAVA_TEST = (
    "public class Main {\n"
    "    public static void main(String[] args) {\n"
    "        Solution s = new Solution();\n"
    "        Pair<Integer, Integer> given = Pair.with(3, 4);\n"
    "        if (s.sumPair(given.getValue0(), given.getValue1()) != 7) {\n"
    "            throw new AssertionError();\n"
    "        }\n"
    "    }\n"
    "}\n"
)


def java_function(body: str) -> CheckRequest:
    """A function test whose prompt, solution and test all use javatuples at run time."""
    return CheckRequest(
        language="java",
        program=JAVA_PROMPT + body + "    }\n}\n",
        test=JAVA_TEST,
        prompt=JAVA_PROMPT,
        entry_point="sumPair",
        limits=LIMITS,
    )


@pytest.fixture
def java_boxes(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Sandbox]]:
    """A worker compiling in its javac service, and one compiling one-shot."""
    monkeypatch.delenv("CODELOOP_JAVAC_SERVICE", raising=False)
    served = Sandbox("bwrap", worker=61)
    monkeypatch.setenv("CODELOOP_JAVAC_SERVICE", "off")
    one_shot = Sandbox("bwrap", worker=62)
    assert served.compiler.services.get("java") is not None
    assert one_shot.compiler.services.get("java") is None
    yield {"javac service": served, "one-shot javac": one_shot}
    served.close()
    one_shot.close()


def fresh(request: CheckRequest, salt: str) -> CheckRequest:
    """`request` with a program no compile cache holds: each compile path compiles it."""
    return request.model_copy(update={"program": f"{request.program}\n// {salt}\n"})


@needs_javatuples
def test_java_programs_compile_and_run_with_javatuples(java_boxes: dict[str, Sandbox]) -> None:
    salt = os.urandom(8).hex()
    stdio = CheckRequest(language="java", program=JAVA_PAIR, cases=JAVA_CASES, limits=LIMITS)
    right = java_function("        Pair<Integer, Integer> p = Pair.with(a, b);\n"
                          "        return p.getValue0() + p.getValue1();\n")  # fmt: skip
    wrong = java_function("        return Pair.with(a, b).getValue0() - b;\n")
    for path, box in java_boxes.items():
        found = {
            name: box.check(fresh(request, f"{salt} {path}"))
            for name, request in (("stdio", stdio), ("right", right), ("wrong", wrong))
        }
        assert found["stdio"].status == "passed", (path, found["stdio"].feedback)
        assert found["right"].status == "passed", (path, found["right"].feedback)
        assert found["wrong"].status == "wrong_answer", (path, found["wrong"].feedback)


# --- JavaScript and TypeScript: lodash -------------------------------------------------------

JS_LODASH = (
    "const _ = require('lodash');\n"
    "const xs = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
    "console.log(JSON.stringify(_.chunk(xs, 2)), _.sum(xs));\n"
)
TS_LODASH = (
    'import * as fs from "fs";\n'
    'import * as L from "lodash";\n'
    "const _ = require('lodash');\n"
    'const xs: number[] = fs.readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\n'
    "console.log(JSON.stringify(L.chunk(xs, 2)), _.sum(xs));\n"
)
LODASH_CASES = [{"input": "1 2 3\n", "output": "[[1,2],[3]] 6\n"}]


@needs_lodash
@pytest.mark.parametrize(
    ("language", "program"), [("javascript", JS_LODASH), ("typescript", TS_LODASH)]
)
def test_lodash_is_required_and_imported_in_javascript_and_typescript(
    language: str, program: str
) -> None:
    found = check_program(language, program, LODASH_CASES, limits=LIMITS)
    assert found.status == "passed", found.feedback
    wrong = check_program(language, program, [{"input": "1 2\n", "output": "[[1,2]] 4\n"}])
    assert wrong.status == "wrong_answer", wrong.feedback


@needs_lodash
def test_a_javascript_function_test_may_require_lodash() -> None:
    """MBXP's JavaScript tests start with `const _ = require('lodash')`: the test's own
    process finds it too."""
    test = (
        "const _ = require('lodash');\n"
        "if (!_.isEqual(doubled([1, 2]), [2, 4])) { throw new Error('doubled'); }\n"
    )
    right = "function doubled(xs) { return xs.map((x) => 2 * x); }\n"
    wrong = "function doubled(xs) { return xs; }\n"
    statuses = [
        check_program_test("javascript", program, test, "doubled").status
        for program in (right, wrong)
    ]
    assert statuses == ["passed", "wrong_answer"], statuses


def check_program_test(language: str, program: str, test: str, entry: str) -> Check:
    box = Sandbox("bwrap", worker=63)
    try:
        request = CheckRequest(
            language=language, program=program, test=test, entry_point=entry, limits=LIMITS
        )
        return box.check(request)
    finally:
        box.close()


# --- Python: the optional scientific runtime ----------------------------------------------

NUMPY_STDIO = (
    "import numpy as np\n"
    "import pandas as pd\n"
    "import scipy.optimize\n"
    "import sympy\n"
    "import networkx as nx\n"
    "xs = np.array(list(map(int, input().split())))\n"
    "graph = nx.path_graph(len(xs))\n"
    "root = scipy.optimize.brentq(lambda x: x * x - 2, 0, 2)\n"
    "print(int(xs.sum()), int(pd.Series(xs).max()), nx.diameter(graph))\n"
    "print(sympy.factor(sympy.Symbol('x') ** 2 - 1), round(root, 6), [np.float64(0.5)])\n"
)
NUMPY_CASES = [{"input": "3 1 2\n", "output": "6 3 2\n(x - 1)*(x + 1) 1.414214 [0.5]\n"}]


def test_the_box_entry_files_append_the_runtimes_box_folder() -> None:
    """The box's Python finds the runtime where the sandbox binds it (`science.BOX_FOLDER`):
    every entry file names that folder, after the standard library, and -S stays."""
    folder = Path(pybox.__file__).parent
    for name in (pybox.SCRIPT, pybox.DRIVER, pybox.SERVER):
        lines = (folder / name).read_text().splitlines()
        named = [line.strip() for line in lines if f"{science.BOX_FOLDER}/python" in line]
        assert len(named) == 1 and named[0].startswith("sys.path.append("), (name, named)
    assert science.mount() in languages.get("python").mounts
    assert science.mount() == (str(science.host_folder()), science.BOX_FOLDER)


@needs_science
def test_every_module_of_the_runtime_imports_in_the_box() -> None:
    program = (
        "import importlib, sys\n"
        f"names = {sorted(science.MODULES)!r}\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(len(names), sys.flags.no_site)\n"
        "print([p for p in sys.path if 'site-packages' in p or 'dist-packages' in p])\n"
    )
    cases = [{"input": "", "output": f"{len(science.MODULES)} 1\n[]\n"}]
    found = check_program("python", program, cases, limits=LIMITS)
    assert found.status == "passed", found.feedback


@pytest.fixture(scope="module")
def python_boxes() -> Iterator[dict[str, Sandbox]]:
    warm = Sandbox("bwrap", worker=64)
    assert warm.warm is not None and warm.warm.start() is None, "no warm sandbox here"
    cold = Sandbox("bwrap", worker=65)
    cold.warm = None
    yield {"warm": warm, "cold": cold}
    warm.close()
    cold.close()


@needs_science
def test_numpy_programs_pass_warm_and_cold(python_boxes: dict[str, Sandbox]) -> None:
    stdio = CheckRequest(language="python", program=NUMPY_STDIO, cases=NUMPY_CASES, limits=LIMITS)
    wrong_stdio = stdio.model_copy(update={"program": NUMPY_STDIO.replace("xs.sum()", "xs[0]")})
    test = (
        "import numpy as np\n\n"
        "def check(f):\n    assert f([1, 2, 3]) == int(np.prod([2, 3]))\n\n"
        "check(total)\n"
    )
    right = "import numpy as np\n\ndef total(xs):\n    return int(np.sum(xs))\n"
    wrong = "import numpy as np\n\ndef total(xs):\n    return int(np.max(xs))\n"
    # A numpy scalar returned as it is, as SandboxFusion (one process) passes it: it was
    # a wrong answer here until the codec sent numpy scalars as their `.item()`.
    scalar = "import numpy as np\n\ndef total(xs):\n    return np.sum(xs)\n"
    wrong_scalar = "import numpy as np\n\ndef total(xs):\n    return np.max(xs)\n"
    programs = {"right": right, "wrong": wrong, "scalar": scalar, "wrong scalar": wrong_scalar}
    function = {
        name: CheckRequest(language="python", program=program, test=test, limits=LIMITS)
        for name, program in programs.items()
    }
    for path, box in python_boxes.items():
        statuses = [box.check(request).status for request in (stdio, wrong_stdio)]
        statuses += [box.check(request).status for request in function.values()]
        assert statuses == ["passed", "wrong_answer"] + ["passed", "wrong_answer"] * 2, (
            path,
            statuses,
        )
    warm = python_boxes["warm"].warm
    assert warm is not None and warm.problem is None, "the warm sandbox fell back to cold"


@needs_science
def test_the_runtime_under_a_tight_memory_limit_neither_hangs_nor_errs(
    python_boxes: dict[str, Sandbox],
) -> None:
    """numpy's BLAS pool is one thread in the box: a thread per CPU each reserved memory,
    and under a 128 MiB address-space limit a matrix product hung until its timeout."""
    program = "import numpy as np\nprint(np.ones((300, 300)).dot(np.ones((300, 300))).sum())\n"
    tight = LIMITS.model_copy(update={"memory_mib": 128, "time_s": 5.0})
    for path, box in python_boxes.items():
        run = box.run_program(RunRequest(language="python", program=program, limits=tight)).run
        assert run is not None and (run.status, run.stdout) == ("finished", "27000000.0\n"), (
            path,
            run,
        )
    # A native module the limit refuses to map (an ImportError in Python's words) is the
    # memory limit's doing, as a MemoryError is: never the program's runtime error.
    found = python_boxes["cold"].check(
        CheckRequest(
            language="python",
            program="import sklearn.linear_model\nprint(3)\n",
            cases=[{"input": "", "output": "3\n"}],
            limits=tight,
        )
    )
    assert found.status == "memory_limit", found.feedback


# --- the service: numpy through /run_code and verl's client, and when the runtime is absent ---


@needs_science
def test_verls_sandbox_fusion_client_scores_a_numpy_solution_1() -> None:
    if not VERL.is_dir():
        pytest.skip("verl is installed by `make setup-test` (.venv/verl-pkgs)")
    if str(VERL) not in sys.path:
        sys.path.append(str(VERL))  # appended: nothing there shadows the project's packages
    from verl.utils.reward_score.sandbox_fusion import compute_score

    tests = {"inputs": ["3 1 2\n", "5 5\n"], "outputs": ["6 3 2\n(x - 1)*(x + 1) 1.414214 [0.5]\n",
             "10 5 1\n(x - 1)*(x + 1) 1.414214 [0.5]\n"]}  # fmt: skip
    wrong = NUMPY_STDIO.replace("xs.sum()", "xs[0]")
    with running(Settings(token=None, workers=1)) as url:
        semaphore = threading.Semaphore(2)
        scores = [
            compute_score(f"{url}/run_code", semaphore, 1024, f"```python\n{code}```", tests)[0]
            for code in (NUMPY_STDIO, wrong)
        ]
    assert scores == [1.0, 0.0], scores


@pytest.fixture
def empty_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A server whose runtime folder is empty (as before `make science`): its workers
    bind that folder, so no box finds numpy, whether or not this machine has it."""
    folder = tempfile.mkdtemp(prefix="codeloop-no-science-", dir="/tmp")
    os.chmod(folder, 0o755)  # the sandbox's uids must reach it, as they would the real one
    monkeypatch.setenv(science.ENV, folder)
    try:
        with running(Settings(token=None, workers=1)) as url:
            yield url
    finally:
        os.rmdir(folder)


def test_without_the_runtime_run_code_and_check_name_the_make_target(empty_runtime: str) -> None:
    with httpx.Client(base_url=empty_runtime, timeout=60) as client:

        def run_code(code: str) -> dict:
            answer = client.post("/run_code", json={"code": code, "language": "python"})
            assert answer.status_code == 200, answer.text
            return answer.json()

        missing = run_code("import numpy as np\nprint(np.arange(3).sum())\n")
        assert missing["status"] == "Failed", missing
        assert "No module named 'numpy'" in missing["run_result"]["stderr"], missing
        assert "numpy" in missing["message"] and science.MAKE_TARGET in missing["message"]
        submodule = run_code("from scipy.optimize import brentq\n")
        assert science.MAKE_TARGET in submodule["message"], submodule
        # Not the runtime's: no note. A program that runs: no note.
        assert run_code("import nosuchmodule_codeloop\n")["message"] == ""
        ran = run_code("print(1)\n")
        assert (ran["status"], ran["message"]) == ("Success", ""), ran
        check = CheckRequest(
            language="python",
            program="import pandas\nprint(input())\n",
            cases=[{"input": "1\n", "output": "1\n"}],
        )
        answer = client.post("/v1/check", json=check.model_dump(mode="json")).json()
        assert answer["status"] == "runtime_error", answer
        assert science.MAKE_TARGET in answer["message"] and "pandas" in answer["message"]
        passing = check.model_copy(update={"program": "print(input())\n"})
        answer = client.post("/v1/check", json=passing.model_dump(mode="json")).json()
        assert answer["passed"] and "message" not in answer, answer


def test_make_science_refuses_a_folder_the_sandbox_could_not_reach(tmp_path: Path) -> None:
    """The sandbox's uids bind the runtime's folder: one under a folder only root may enter
    would fail every Python run, so the set-up stops first, saying why."""
    hidden = tmp_path / "private"
    hidden.mkdir(mode=0o700)
    done = subprocess.run(
        ["scripts/setup_science.sh"],
        cwd=ROOT,
        env={**os.environ, science.ENV: str(hidden / "science")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not searchable by other users" in done.stderr, done.stderr
    assert not (hidden / "science" / f"python{science.python_version()}").exists()
