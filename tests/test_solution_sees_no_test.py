"""Nothing the solution can read holds a byte of the hidden test or the nonce (adversarial).

A function-level check runs two sandboxes: the trusted test side (driver, hidden test,
the per-check nonce on its stdin) and the solution's side, which answers calls over two
pipes. The solution's sandbox has a /box of its own, holding only the solution's
files. Under the former layout (one box for both sides) the scans below reported, and
failed: C++ /box/main /box/main.cpp, Go /box/bin/drv /box/drv/main.go, Java
/box/drv/Main.class /box/drv/Main.java, Rust /box/main /box/main.rs: the hidden test's
source and its binary (the expected value is a literal there too).

For each of the six languages the answer below runs a shell scan (SCAN) through the
language's own process API and returns its report. The scan greps every regular file
under /box, /tmp, /work, /dev/shm, /run, /var/tmp, /home and every other mount point
except /proc, /sys, /usr and /etc, plus each /proc/[0-9]*'s environ, cmdline and
regular-file descriptors (pipes and sockets are skipped, so nothing blocks), for the
run's secret and for the nonce's prefix. The hidden test holds the secret (a literal
made fresh per run) in a comment and as an expected value, prints the report and
fails unless it is "clean:<count>" with more than MIN_SCANNED files scanned: a passed
check is a clean scan.

Controls (the scan can fail the test): the same answers with a secret and a nonce-like
line planted in /tmp and /dev/shm before the scan must fail with both paths reported;
Python and JavaScript answers whose own source holds the secret must report
/box/main.py and /box/main.js; a stdio program with the secret in its own source must
report /box/main.py. And expected stdio outputs never enter the sandbox: a program
scanning for the secret that is the expected output of a later case finds it nowhere.

Python runs both ways: warm (the pool's workers fork the solution from a zygote) and
cold (the solution's own interpreter). The checks run in one batch (`check_many`),
then the two cold Python ones in a worker without a warm sandbox.
"""

from __future__ import annotations

import base64
import secrets

import pytest

from codeloop.data import HUMANEVAL_X
from codeloop.evaluate import load_humaneval_x
from codeloop.evaluate.humaneval import humaneval_x_job
from codeloop.sandbox import Check, CheckRequest, SandboxLimits, check_many
from codeloop.sandbox.check import Sandbox

SECRET = "QZXSECRET" + secrets.token_hex(8)
"""In every hidden test (and expected stdio output) of this run, never in an answer."""
MIN_SCANNED = 5
"""A scan that read no more files than this did not really run."""
LIMITS = SandboxLimits(time_s=30.0)
"""The scan reads every file in reach (shared libraries and caches bound in included)."""

# The pattern is written so that it does not match itself (in the scan's source, in
# the command lines of the processes that run it).
SCAN = r"""
exec 2>/dev/null
pattern='QZXSECRE[T]|CODELOOP-TESTS-DON[E]-'
roots='/box /tmp /work /dev/shm /run /var/tmp /home'
while read -r _id _parent _dev _root point _rest; do
  case "$point" in
    /proc|/proc/*|/sys|/sys/*|/usr|/usr/*|/etc|/etc/*) ;;
    *) roots="$roots $point" ;;
  esac
done < /proc/self/mountinfo
files=$(
  for root in $roots; do
    [ -d "$root" ] && find "$root" -xdev -type f
  done
  for p in /proc/[0-9]*; do
    printf '%s\n' "$p/environ" "$p/cmdline"
    for x in "$p"/fd/*; do [ -f "$x" ] && printf '%s\n' "$x"; done
  done
  for x in /proc/self/fd/*; do [ -f "$x" ] && printf '%s\n' "$x"; done
)
# Only regular files: find -xdev reports mount points such as /dev/null as files.
files=$(printf '%s\n' "$files" | sort -u | while IFS= read -r f; do
  [ -f "$f" ] && printf '%s\n' "$f"
done)
count=$(printf '%s\n' "$files" | grep -c .)
found=$(printf '%s\n' "$files" | xargs -r -d '\n' grep -l -s -E -e "$pattern" --)
if [ -n "$found" ]; then
  printf 'leak:%s\n' "$(printf '%s' "$found" | tr '\n' ' ')"
else
  printf 'clean:%s\n' "$count"
fi
"""
PLANT = (
    "printf 'QZXSECRE%s\\n' T > /tmp/planted-secret\n"
    "printf 'CODELOOP-TESTS-DON%s-0123\\n' E > /dev/shm/planted-nonce\n"
)
PLANTED = ("/tmp/planted-secret", "/dev/shm/planted-nonce")


def shell(script: str) -> str:
    """A /bin/sh command line running `script`: base64 travels in any language's literal."""
    return f"echo {base64.b64encode(script.encode()).decode()} | base64 -d | /bin/sh"


# HumanEval-X task 15 (string_sequence(n) -> string) in every language: the answer
# ignores n and returns its scan's report. {command} is the shell command line.
ANSWERS = {
    "python": (
        "    import subprocess\n"
        "    run = subprocess.run({command!r}, shell=True, capture_output=True, text=True)\n"
        "    return run.stdout.strip()\n"
    ),
    "javascript": (
        "  return require('child_process').execSync('{command}', {{encoding: 'utf8'}}).trim()\n}}\n"
    ),
    "cpp": (
        '    FILE* pipe = popen("{command}", "r");\n'
        '    if (pipe == NULL) return "scan-failed";\n'
        "    string out;\n"
        "    char buffer[4096];\n"
        "    size_t got;\n"
        "    while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, got);\n"
        "    pclose(pipe);\n"
        "    while (!out.empty() && (out.back() == '\\n' || out.back() == ' ')) out.pop_back();\n"
        "    return out;\n"
        "}}\n"
    ),
    "go": (
        '    out, err := exec.Command("/bin/sh", "-c", "{command}").Output()\n'
        "    if err != nil {{\n"
        '        return "scan-failed: " + err.Error()\n'
        "    }}\n"
        "    return strings.TrimSpace(string(out))\n"
        "}}\n"
    ),
    "java": (
        "        try {{\n"
        '            Process p = new ProcessBuilder("/bin/sh", "-c", "{command}").start();\n'
        "            String out = new String(p.getInputStream().readAllBytes());\n"
        "            p.waitFor();\n"
        "            return out.trim();\n"
        "        }} catch (Exception e) {{\n"
        '            return "scan-failed: " + e;\n'
        "        }}\n"
        "    }}\n"
        "}}\n"
    ),
    "rust": (
        '    match std::process::Command::new("/bin/sh").arg("-c").arg("{command}").output() {{\n'
        "        Ok(out) => String::from_utf8_lossy(&out.stdout).trim().to_string(),\n"
        '        Err(e) => format!("scan-failed: {{}}", e),\n'
        "    }}\n"
        "}}\n"
    ),
}

# The hidden tests: the secret in a comment and as an expected value; the report is
# printed (it comes back in a failed check's feedback), and only a clean one passes.
TESTS = {
    "python": (
        "import sys\n\n"
        "# {secret}: no file the solution can read holds this line.\n"
        "def check(string_sequence):\n"
        "    report = string_sequence(1)\n"
        "    print('scan report:', report, file=sys.stderr)\n"
        "    assert report != '{secret}'\n"
        "    assert report.startswith('clean:'), report\n"
        "    assert int(report[len('clean:'):]) > {least}, report\n\n"
        "check(string_sequence)\n"
    ),
    "javascript": (
        "// {secret}: no file the solution can read holds this line.\n"
        "const testStringSequence = () => {{\n"
        "  const report = stringSequence(1)\n"
        "  console.error('scan report: ' + report)\n"
        "  if (report === '{secret}') throw new Error(report)\n"
        "  if (!report.startsWith('clean:')) throw new Error(report)\n"
        "  if (!(parseInt(report.slice(6), 10) > {least})) throw new Error(report)\n"
        "}}\n\n"
        "testStringSequence()\n"
    ),
    "cpp": (
        "#undef NDEBUG\n"
        "#include<assert.h>\n"
        "// {secret}: no file the solution can read holds this line.\n"
        "int main(){{\n"
        "    string report = string_sequence(1);\n"
        '    fprintf(stderr, "scan report: %s\\n", report.c_str());\n'
        '    assert (report != "{secret}");\n'
        '    assert (report.rfind("clean:", 0) == 0);\n'
        "    assert (atoi(report.c_str() + 6) > {least});\n"
        "}}\n"
    ),
    "go": (
        "// {secret}: no file the solution can read holds this line.\n"
        "func TestStringSequence(t *testing.T) {{\n"
        "    assert := assert.New(t)\n"
        "    report := StringSequence(1)\n"
        '    fmt.Fprintln(os.Stderr, "scan report: "+report)\n'
        '    assert.NotEqual("{secret}", report)\n'
        '    assert.True(strings.HasPrefix(report, "clean:"), report)\n'
        '    count, err := strconv.Atoi(strings.TrimPrefix(report, "clean:"))\n'
        "    assert.Nil(err, report)\n"
        "    assert.Greater(count, {least}, report)\n"
        "}}\n"
    ),
    "java": (
        "public class Main {{\n"
        "    public static void main(String[] args) {{\n"
        "        Solution s = new Solution();\n"
        "        // {secret}: no file the solution can read holds this line.\n"
        "        String report = s.stringSequence(1);\n"
        '        System.err.println("scan report: " + report);\n'
        '        if (report.equals("{secret}") || !report.startsWith("clean:")\n'
        "                || Integer.parseInt(report.substring(6)) <= {least}) {{\n"
        "            throw new AssertionError(report);\n"
        "        }}\n"
        "    }}\n"
        "}}\n"
    ),
    "rust": (
        "\n#[cfg(test)]\nmod tests {{\n    use super::*;\n\n"
        "    // {secret}: no file the solution can read holds this line.\n"
        " #[test]\n"
        "    fn test_string_sequence() {{\n"
        "        let report = string_sequence(1);\n"
        '        assert!(report != "{secret}".to_string(), "scan report: {{}}", report);\n'
        '        assert!(report.starts_with("clean:"), "scan report: {{}}", report);\n'
        "        let count: i32 = report[6..].parse().unwrap_or(0);\n"
        '        assert!(count > {least}, "scan report: {{}}", report);\n'
        "    }}\n\n}}\n"
    ),
}
TASKS = {
    "python": "Python/15",
    "javascript": "JavaScript/15",
    "cpp": "CPP/15",
    "go": "Go/15",
    "java": "Java/15",
    "rust": "Rust/15",
}
LANGUAGES = list(TASKS)
PATHS = [*LANGUAGES, "python-cold"]
"""Every language, and Python both warm (the pool's workers) and cold."""

LEAKING: dict[str, str] = {}
"""Languages whose solution still reads the test or the nonce (xfail, strict): why."""


def function_request(language: str, script: str, extra: str = "") -> CheckRequest:
    """HumanEval-X task 15 of `language`, its answer a scan, its test the secret's."""
    rows = load_humaneval_x(HUMANEVAL_X, [language]).rows
    row = dict(rows[TASKS[language]])
    row["test"] = TESTS[language].format(secret=SECRET, least=MIN_SCANNED)
    if language == "go":  # the trusted prompt imports what the answer runs the scan with
        row["prompt"] = row["prompt"].replace("import (\n", 'import (\n    "os/exec"\n', 1)
        assert '"os/exec"' in row["prompt"]
    job = humaneval_x_job(row, ANSWERS[language].format(command=shell(script)) + extra)
    return job.request(LIMITS)


OWN_SOURCE = {
    "python": ("    # {secret}\n", "/box/main.py"),
    "javascript": ("// {secret}\n", "/box/main.js"),
}
"""A line after the answer that puts the secret in the solution's file, and the file."""
STDIO_SCAN = (
    "import subprocess\n"
    "run = subprocess.run({command!r}, shell=True, capture_output=True, text=True)\n"
    "report = run.stdout.strip()\n"
    "clean = report.startswith('clean:') and int(report[len('clean:'):]) > {least}\n"
    "print('clean' if clean else report)\n"
)


@pytest.fixture(scope="module")
def checks() -> dict[str, Check]:
    wanted: dict[str, CheckRequest] = {}
    for language in LANGUAGES:
        wanted[f"scan {language}"] = function_request(language, SCAN)
        wanted[f"planted {language}"] = function_request(language, PLANT + SCAN)
    # The solution's own file is in its box: a secret written there must be found.
    for language, (comment, _path) in OWN_SOURCE.items():
        wanted[f"own source {language}"] = function_request(
            language, SCAN, extra=comment.format(secret=SECRET)
        )
    program = STDIO_SCAN.format(command=shell(SCAN), least=MIN_SCANNED)
    # Case 1's expected output is the secret: while case 0 runs, and case 1, it must
    # be nowhere in reach (expected outputs stay with the checker).
    wanted["stdio expected output"] = CheckRequest(
        language="python",
        program=program,
        cases=[{"input": "", "output": "clean"}, {"input": "", "output": SECRET}],
        checker="lines",
        limits=LIMITS,
    )
    wanted["stdio own source"] = CheckRequest(
        language="python",
        program=f"# {SECRET}\n" + program,
        cases=[{"input": "", "output": "clean"}],
        limits=LIMITS,
    )
    results = dict(zip(wanted, check_many(list(wanted.values()), workers=2), strict=True))
    # The pool's workers run Python function tests in the warm sandbox (the solution's
    # process forked from a zygote); the cold path starts the solution's interpreter.
    cold = Sandbox("bwrap", worker=41)
    cold.warm = None
    try:
        for kind in ("scan", "planted"):
            results[f"{kind} python-cold"] = cold.check(wanted[f"{kind} python"])
    finally:
        cold.close()
    return results


def _marked(language: str) -> object:
    if language in LEAKING:
        return pytest.param(
            language, marks=pytest.mark.xfail(strict=True, reason=LEAKING[language])
        )
    return language


@pytest.mark.parametrize("language", [_marked(language) for language in PATHS])
def test_the_solution_reads_no_byte_of_the_test_nor_the_nonce(
    checks: dict[str, Check], language: str
) -> None:
    check = checks[f"scan {language}"]
    assert check.status == "passed", check.feedback


@pytest.mark.parametrize("language", PATHS)
def test_planted_secret_and_nonce_are_found(checks: dict[str, Check], language: str) -> None:
    """Control: the scan runs, reads /tmp and /dev/shm, and its report fails the test."""
    check = checks[f"planted {language}"]
    assert check.status == "wrong_answer", check.feedback
    assert "leak:" in check.feedback, check.feedback
    for path in PLANTED:
        assert path in check.feedback, check.feedback


@pytest.mark.parametrize("language", sorted(OWN_SOURCE))
def test_the_solutions_own_file_is_scanned(checks: dict[str, Check], language: str) -> None:
    """Control: a secret in a file of the solution's box is found."""
    check = checks[f"own source {language}"]
    assert check.status == "wrong_answer", check.feedback
    assert f"leak:{OWN_SOURCE[language][1]}" in check.feedback, check.feedback


def test_expected_stdio_outputs_never_enter_the_sandbox(checks: dict[str, Check]) -> None:
    check = checks["stdio expected output"]
    # Case 0 passed: a clean scan; case 1 fails only because the program did not
    # print the secret (its scan found nothing either).
    assert check.status == "wrong_answer", check.feedback
    assert check.cases_passed == 1, check.feedback
    assert "Your output:\nclean" in check.feedback, check.feedback


def test_a_secret_in_the_programs_own_source_is_found(checks: dict[str, Check]) -> None:
    """Control for the stdio scan: the program's source in /box holds the secret."""
    check = checks["stdio own source"]
    assert check.status == "wrong_answer", check.feedback
    assert "Your output:\nleak:/box/main.py" in check.feedback, check.feedback
