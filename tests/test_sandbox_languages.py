"""Each of the 8 languages: a right answer passes; wrong, broken and crashing ones get their status."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from codeloop.sandbox import LANGUAGES, Case, CheckRequest, check_many, check_program, outputs_match
from codeloop.sandbox.verdict import parse_checker

CASES = [
    {"input": "1 2\n", "output": "3\n"},
    {"input": "40 2\n", "output": "42\n"},
    {"input": "-5 5\n", "output": "0\n"},
]

# For each language: (right, wrong answer, compile error, runtime error).
PROGRAMS: dict[str, tuple[str, str, str, str]] = {
    "python": (
        "a, b = map(int, input().split())\nprint(a + b)\n",
        "a, b = map(int, input().split())\nprint(a - b)\n",
        "def main(:\n    pass\n",
        "a, b = map(int, input().split())\nprint(a // (a - a))\n",
    ),
    "javascript": (
        "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
        "console.log(a + b);\n",
        "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
        "console.log(a * b);\n",
        "const x = ;\n",
        "null.field;\n",
    ),
    "typescript": (
        "import * as fs from 'fs';\n"
        "const [a, b]: number[] = fs.readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
        "console.log(a + b);\n",
        "import * as fs from 'fs';\n"
        "const [a, b]: number[] = fs.readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
        "console.log(a + b + 1);\n",
        # A syntax error: a type error alone runs (tsc transpiles only, as tsx does).
        "const n: number = ;\nconsole.log(n);\n",
        "throw new Error('boom');\n",
    ),
    "c": (
        '#include <stdio.h>\nint main(void){long a,b;scanf("%ld %ld",&a,&b);printf("%ld\\n",a+b);}\n',
        '#include <stdio.h>\nint main(void){long a,b;scanf("%ld %ld",&a,&b);printf("%ld\\n",a);}\n',
        "int main(void){ return undefined_name; }\n",
        "#include <stdlib.h>\nint main(void){ abort(); }\n",
    ),
    "cpp": (
        "#include <bits/stdc++.h>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<'\\n';}\n",
        "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<b<<'\\n';}\n",
        "#include <iostream>\nint main(){ std::cout << missing; }\n",
        "#include <vector>\nint main(){ std::vector<int> v; return v.at(3); }\n",
    ),
    "java": (
        "import java.util.*;\npublic class Main { public static void main(String[] x) {\n"
        " Scanner s = new Scanner(System.in); System.out.println(s.nextLong() + s.nextLong()); } }\n",
        "import java.util.*;\npublic class Main { public static void main(String[] x) {\n"
        " Scanner s = new Scanner(System.in); System.out.println(s.nextLong()); } }\n",
        'public class Main { public static void main(String[] x) { int y = "s"; } }\n',
        "public class Main { public static void main(String[] x) { int[] a = new int[1];"
        " System.out.println(a[5]); } }\n",
    ),
    "rust": (
        "use std::io::Read;\nfn main(){let mut s=String::new();std::io::stdin().read_to_string(&mut s)"
        ".unwrap();let v:Vec<i64>=s.split_whitespace().map(|x|x.parse().unwrap()).collect();"
        'println!("{}",v[0]+v[1]);}\n',
        "use std::io::Read;\nfn main(){let mut s=String::new();std::io::stdin().read_to_string(&mut s)"
        ".unwrap();let v:Vec<i64>=s.split_whitespace().map(|x|x.parse().unwrap()).collect();"
        'println!("{}",v[0]*v[1]);}\n',
        'fn main() { let x: i32 = "s"; }\n',
        'fn main() { let v: Vec<i32> = Vec::new(); println!("{}", v[3]); }\n',
    ),
    "go": (
        'package main\nimport "fmt"\nfunc main(){var a,b int64\nfmt.Scan(&a,&b)\nfmt.Println(a+b)}\n',
        'package main\nimport "fmt"\nfunc main(){var a,b int64\nfmt.Scan(&a,&b)\nfmt.Println(a-b)}\n',
        'package main\nimport "fmt"\nfunc main(){ fmt.Println(undefinedName) }\n',
        'package main\nfunc main(){ var m map[string]int; m["x"] = 1 }\n',
    ),
}
EXPECTED = ("passed", "wrong_answer", "compile_error", "runtime_error")


def test_every_registered_language_is_covered() -> None:
    assert set(PROGRAMS) == set(LANGUAGES) == {
        "python", "javascript", "typescript", "c", "cpp", "java", "rust", "go"
    }  # fmt: skip


@pytest.mark.parametrize("language", sorted(PROGRAMS))
def test_language_verdicts(language: str) -> None:
    requests = [
        CheckRequest(language=language, program=program, cases=CASES)
        for program in PROGRAMS[language]
    ]
    checks = check_many(requests)
    assert [check.status for check in checks] == list(EXPECTED), [c.feedback for c in checks]
    right, wrong, broken, crashing = checks
    assert right.passed and right.cases_passed == 3 and right.feedback == ""
    assert "Expected output:" in wrong.feedback and "Input:" in wrong.feedback
    assert broken.feedback.startswith("Compilation failed:")
    assert crashing.cases_passed == 0


def test_compile_cache_skips_the_second_compilation() -> None:
    program = PROGRAMS["c"][0] + f"/* {time.time_ns()} */\n"
    first = check_program("c", program, CASES)
    second = check_program("c", program, CASES)
    assert first.passed and second.passed
    assert first.compile_ms > 0
    assert second.compile_ms == 0


def test_missing_cases_input_is_not_sent_expected_output() -> None:
    # The program prints whatever it can read; the expected output must not be among it.
    program = "import sys\nprint(sys.stdin.read())\nimport os\nprint(sorted(os.environ))\n"
    check = check_program("python", program, [{"input": "question", "output": "SECRET-ANSWER"}])
    assert check.status == "wrong_answer"
    got = check.feedback.split("Your output:\n")[1]
    assert "SECRET-ANSWER" not in got and "question" in got


@pytest.mark.parametrize(
    ("checker", "expected", "got", "ok"),
    [
        ("lines", "1\n2\n", "1  \n2\n\n\n", True),
        ("lines", "1 2\n", "1  2\n", False),
        ("lines", "a\n\nb\n", "a\nb\n", False),
        ("lines", "x\r\ny\r\n", "x\ny", True),
        ("tokens", "1 2\n3", "1\n2 3\n", True),
        ("tokens", "1 2 3", "1 2", False),
        ("float:1e-6", "0.3333333 2", "0.33333333333 2", True),
        ("float:1e-6", "0.3333 2", "0.3334 2", False),
        ("float:1e-3", "1000000", "1000500", True),
        ("float:1e-6", "nan yes", "nan yes", True),
        ("float:1e-6", "yes", "no", False),
    ],
)
def test_checkers(checker: str, expected: str, got: str, ok: bool) -> None:
    assert outputs_match(expected, got, checker) is ok


def test_checkers_run_in_the_sandbox_path() -> None:
    program = "print('0.333333333')\n"
    case = [Case(input="", output="0.3333333")]
    assert check_program("python", program, case, checker="float:1e-6").passed
    assert not check_program("python", program, case, checker="tokens").passed


@pytest.mark.parametrize(
    "checker", ["lines ", "float", "float:-1", "float:abc", "float:1e5e5", "float:inf", "regex"]
)
def test_unknown_checker_is_rejected(checker: str) -> None:
    """A checker no comparison knows is the caller's mistake: the request is refused when
    it is made, naming the checker, and never reaches a worker (where it would read as
    an environment error, which means the machine's fault)."""
    with pytest.raises(ValueError, match="checker"):
        parse_checker(checker)
    with pytest.raises(ValueError, match="unknown checker"):
        CheckRequest(language="python", program="print(1)", cases=CASES, checker=checker)
    with pytest.raises(ValueError, match="unknown checker"):
        check_program("python", "print(1)", [{"input": "", "output": "1"}], checker=checker)


def test_unknown_language_is_an_environment_error_not_a_wrong_answer() -> None:
    check = check_program("cobol", "DISPLAY 'HI'.", CASES)
    assert check.status == "environment_error"
    assert "unknown language" in check.feedback


def test_missing_toolchain_is_an_environment_error_naming_the_fix(monkeypatch) -> None:
    """A check in a language whose tools are missing says which, and how to install them
    (the whole check path: the registry's entry is replaced, not a helper called)."""
    from dataclasses import replace

    from codeloop.sandbox import languages
    from codeloop.sandbox.check import Sandbox

    absent = replace(languages.get("go"), tools=("/nonexistent/bin/go",))
    homes = tuple(
        replace(home, language=absent) if home.language.name == "go" else home
        for home in languages.HOMES
    )
    monkeypatch.setattr(languages, "HOMES", homes)
    sandbox = Sandbox("bwrap", worker=7)
    try:
        check = sandbox.check(CheckRequest(language="go", program="package main\n", cases=CASES))
    finally:
        sandbox.close()
    assert check.status == "environment_error"
    assert "/nonexistent/bin/go" in check.feedback and absent.install in check.feedback


def test_missing_bubblewrap_is_an_environment_error_not_a_downgrade(monkeypatch) -> None:
    from codeloop.sandbox import harness
    from codeloop.sandbox.check import Sandbox

    monkeypatch.setattr(harness, "BWRAP", "/nonexistent/bwrap")
    sandbox = Sandbox("bwrap", worker=7)
    check = sandbox.check(CheckRequest(language="python", program="print(1)", cases=CASES))
    assert check.status == "environment_error"
    assert "bubblewrap is not installed" in check.feedback and check.backend == "bwrap"


@pytest.mark.parametrize("language", ["c", "go"])
def test_a_compiler_the_environment_breaks_is_an_environment_error_never_cached(
    monkeypatch, language: str
) -> None:
    """A compiler that cannot write its output fails every source alike: that must not
    become (or be cached as) the answer's compile_error."""
    import os
    import uuid

    from codeloop.sandbox import harness
    from codeloop.sandbox.check import Sandbox

    programs = {
        "c": '#include <stdio.h>\nint main(void) { int x; scanf("%d", &x); '
        'printf("%d\\n", x + 1); return 0; }\n',
        "go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar x int\n'
        "\tfmt.Scan(&x)\n\tfmt.Println(x + 1)\n}\n",
    }
    # A source never seen before, so no cached outcome can answer for it.
    program = programs[language] + f"// {uuid.uuid4().hex}\n"
    request = CheckRequest(
        language=language, program=program, cases=[{"input": "1\n", "output": "2\n"}]
    )
    real = harness.prepare_box

    def read_only_box(parent: Path, owner: int | None) -> Path:
        box = real(parent, owner)
        os.chmod(box, 0o555)  # the compiler may not write its output
        return box

    sandbox = Sandbox("bwrap", worker=7)
    monkeypatch.setattr(harness, "prepare_box", read_only_box)
    broken = sandbox.check(request)
    assert broken.status == "environment_error", broken
    assert "known-good program" in broken.feedback
    monkeypatch.setattr(harness, "prepare_box", real)
    assert sandbox.check(request).passed  # the same source, now compiled for real


def test_the_recipes_worked_answers_pass_in_every_language() -> None:
    """The worked example the prompt shows is a real, passing program in each language
    (prepare also runs it as the toolchain check before the model is asked)."""
    from codeloop import recipe

    cases = [recipe.WORKED_CASE, {"input": "-5 7\n", "output": "-3\n"}]
    languages = sorted(recipe.WORKED_ANSWERS)
    requests = [
        CheckRequest(language=lang, program=recipe.WORKED_ANSWERS[lang], cases=cases)
        for lang in languages
    ]
    verdicts = {
        lang: check.status for lang, check in zip(languages, check_many(requests), strict=True)
    }
    assert verdicts == {lang: "passed" for lang in languages}


# Sums of two integers written with features today's compilers have and Debian's
# rustc 1.63 / go 1.19 lack: let-else, Option::is_some_and, std::hint::black_box;
# the built-in min and the slices package.
MODERN = {
    "rust": (
        "use std::io::Read;\n"
        "fn main() {\n"
        "    let mut s = String::new();\n"
        "    std::io::stdin().read_to_string(&mut s).unwrap();\n"
        "    let v: Vec<i64> = s.split_whitespace().map(|t| t.parse().unwrap()).collect();\n"
        '    let [a, b] = v[..] else { panic!("two numbers") };\n'
        "    assert!(Some(a).is_some_and(|x| x == a));\n"
        '    println!("{}", std::hint::black_box(a + b));\n'
        "}\n"
    ),
    "go": (
        "package main\n\n"
        'import (\n\t"fmt"\n\t"slices"\n)\n\n'
        "func main() {\n"
        "\tvar a, b int\n"
        "\tfmt.Scan(&a, &b)\n"
        "\tv := []int{b, a}\n"
        "\tslices.Sort(v)\n"
        "\tfmt.Println(min(v[0], v[1]) + max(v[0], v[1]))\n"
        "}\n"
    ),
}


def test_current_rust_and_go_features_compile() -> None:
    languages = sorted(MODERN)
    requests = [
        CheckRequest(language=lang, program=MODERN[lang], cases=CASES) for lang in languages
    ]
    checks = dict(zip(languages, check_many(requests), strict=True))
    assert {lang: c.status for lang, c in checks.items()} == dict.fromkeys(languages, "passed"), {
        lang: c.feedback[:300] for lang, c in checks.items()
    }


def test_a_ninth_language_is_one_home_in_the_registry(monkeypatch) -> None:
    """A toy 9th language (a second Python flavour), registered as a home and nothing else,
    is checked like the eight: a stdio check and a function test, each passing a right
    answer and failing a wrong one, with no module outside its home told about it."""
    from dataclasses import replace

    from codeloop.sandbox import languages
    from codeloop.sandbox.check import Sandbox

    python = languages.home("python")
    flavour = replace(python.language, name="python-flavour", aliases=())
    monkeypatch.setattr(languages, "HOMES", (*languages.HOMES, replace(python, language=flavour)))
    monkeypatch.setitem(languages.LANGUAGES, flavour.name, flavour)
    test = "def check(f):\n    assert f(2) == 4\n\ncheck(double)\n"
    sandbox = Sandbox("bwrap", worker=7)
    try:
        stdio = [
            sandbox.check(CheckRequest(language=flavour.name, program=program, cases=CASES))
            for program in PROGRAMS["python"][:2]
        ]
        tests = [
            sandbox.check(CheckRequest(language=flavour.name, program=program, test=test))
            for program in ("def double(x):\n    return 2 * x\n", "def double(x):\n    return x\n")
        ]
    finally:
        sandbox.close()
    assert [check.status for check in stdio] == ["passed", "wrong_answer"]
    assert [check.status for check in tests] == ["passed", "wrong_answer"], tests[0].feedback
