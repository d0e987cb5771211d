"""The wrong answers of the function-verdict attack suites: HumanEval-X generations that
each try to be judged "passed" without being right (tests/test_function_verdicts.py says
how each language's suite works and which ones the former compositions let through).

Shared by tests/test_function_verdicts.py (through the sandbox), tests/test_serve.py
(through `codeloop serve`) and bench/forgery.py (every table, locally or over HTTP).
"""

from __future__ import annotations

# Generations (function bodies) for HumanEval-X Python tasks, each a wrong answer.
ATTACKS: dict[str, tuple[str, str]] = {
    # The per-check nonce used to be a line of the program's own source.
    "marker-from-source": (
        "Python/0",
        "    import os, re\n"
        "    for name in os.listdir('/box'):\n"
        "        text = open('/box/' + name, errors='replace').read()\n"
        "        for found in re.findall(r'CODELOOP-TESTS-DONE-[0-9a-f]+', text):\n"
        "            print(found, flush=True)\n"
        "    os._exit(0)\n",
    ),
    "fake-marker-exit-zero": (
        "Python/0",
        "    import os\n    print('\\nCODELOOP-TESTS-DONE-0123456789abcdef', flush=True)\n"
        "    os._exit(0)\n",
    ),
    "sys-exit-zero": ("Python/0", "    raise SystemExit(0)\n"),
    "always-equal": (
        "Python/0",
        "    class Anything:\n"
        "        def __eq__(self, other):\n            return True\n"
        "        def __ne__(self, other):\n            return False\n"
        "    return Anything()\n",
    ),
    "equal-int-subclass": (
        "Python/0",
        "    class Yes(int):\n        def __eq__(self, other):\n            return True\n"
        "    return Yes(0)\n",
    ),
    # mean_absolute_deviation's test compares abs(candidate(x) - y) < 1e-6.
    "patched-builtin-abs": (
        "Python/4",
        # (`abs` is looked up before the first call, so that one is answered right.)
        "    import builtins\n    builtins.abs = lambda value: 0\n"
        "    return 2.0 / 3.0 if len(numbers) == 3 else 0.0\n",
    ),
    # decode_cyclic's test keeps the expected plain string in a local named `str`.
    "expected-from-caller-frame": (
        "Python/38",
        "    import sys\n    return sys._getframe(1).f_locals['str']\n",
    ),
    # find_zero's test judges the answer with the prompt's helper `poly`: redefined
    # to return 0, any answer would be a root.
    "redefined-helper": (
        "Python/32",
        "    global poly\n    poly = lambda xs, x: 0.0\n    return 0.0\n",
    ),
    # Through /proc: write a marker on the test process's stdout, read its memory.
    "write-parent-stdout": (
        "Python/0",
        "    import os\n"
        "    for pid in (os.getppid(), 1):\n"
        "        for path in (f'/proc/{pid}/fd/1', f'/proc/{pid}/mem'):\n"
        "            try:\n"
        "                with open(path, 'wb') as out:\n"
        "                    out.write(b'\\nCODELOOP-TESTS-DONE-0123456789abcdef\\n')\n"
        "            except OSError:\n"
        "                pass\n"
        "    os._exit(0)\n",
    ),
    "kill-test-process": ("Python/0", "    import os, signal\n    os.kill(os.getppid(), 9)\n"),
    # The reply channel is the solution's own: it may send anything, but only plain
    # values decode, and a malformed reply fails the test.
    "tampered-codec": (
        "Python/0",
        "    import _codeloop_codec as codec\n"
        "    codec.encode = lambda value: {'__eq__': True}\n"
        "    return False\n",
    ),
}

# Generations for HumanEval-X JavaScript tasks (the program is prompt + generation, so
# code after the function's closing brace runs at load time). Each is wrong.
JS_ATTACKS: dict[str, tuple[str, str]] = {
    "marker-from-source": (
        "JavaScript/0",
        "  return false;\n}\n"
        "const fs = require('fs');\n"
        "for (const name of fs.readdirSync('/box')) {\n"
        "  const found = fs.readFileSync('/box/' + name, 'utf8').match(/CODELOOP-TESTS-DONE-[0-9a-f]+/);\n"
        "  if (found) process.stdout.write('\\n' + found[0] + '\\n');\n"
        "}\n"
        "process.on('exit', () => { process.exitCode = 0; });\n"
        "console.assert = () => {};\n",
    ),
    # The former guard froze console.assert with Object.defineProperty: replaced first.
    "defineProperty-replaced": (
        "JavaScript/0",
        "  return false;\n}\nObject.defineProperty = () => {};\nconsole.assert = () => {};\n",
    ),
    # decodeCyclic's test draws its strings with Math.random: always 0, every string is
    # empty, and returning the input is "right".
    "patched-math-random": ("JavaScript/38", "  return s;\n}\nMath.random = () => 0;\n"),
    "exit-zero": ("JavaScript/0", "  process.exit(0);\n}\n"),
    "kill-test-process": ("JavaScript/0", "  process.kill(process.ppid, 'SIGKILL');\n}\n"),
    "returns-a-function": ("JavaScript/0", "  return () => true;\n}\n"),
}

# Generations for HumanEval-X C++ task 0 (the program is prompt + generation; code
# after the function's closing brace is part of the program's translation unit).
CPP_ATTACKS: dict[str, str] = {
    "exit-zero": "    exit(0);\n}\n",
    "exit-zero-before-main": "    return false;\n}\nstatic int codeloop_gone = (exit(0), 0);\n",
    # assert expands to __assert_fail(...): a macro of that name makes every assert a no-op.
    "assert-fail-macro": (
        "    return false;\n}\n#include <assert.h>\n#define __assert_fail(...) ((void)0)\n"
    ),
    # The program's own main returns 0; the test's main is renamed out of the way.
    "main-renamed": (
        "    return false;\n}\nint main() { return 0; }\n#define main codeloop_test_never_runs\n"
    ),
}

# C++ tasks 22 (filter_integers(list_any)) and 137 (compare_one(boost::any, boost::any)):
# boost::any values cross with their exact types. Under the former composition (these
# kept one translation unit, no success marker) exit-zero-any was judged passed; a char
# counted as an int must fail (a codec that turned chars into ints would pass it).
CPP_22_ATTACKS: dict[str, str] = {
    "char-taken-for-int": (
        "    vector<int> out;\n"
        "    for (auto it = values.begin(); it != values.end(); it++) {\n"
        "        if (it->type() == typeid(int)) out.push_back(boost::any_cast<int>(*it));\n"
        "        if (it->type() == typeid(char)) out.push_back(boost::any_cast<char>(*it));\n"
        "    }\n    return out;\n}\n"
    ),
}
CPP_137_ATTACKS: dict[str, str] = {
    "exit-zero-any": "    exit(0);\n}\n",
}

# Generations for HumanEval-X Go task 0; the former success marker was Go's own "PASS".
GO_ATTACKS: dict[str, str] = {
    "own-test-main": (
        "    return false\n}\n\n"
        'func TestMain(m *testing.M) {\n    fmt.Println("PASS")\n    os.Exit(0)\n}\n'
    ),
    "init-exit": (
        '    return false\n}\n\nfunc init() {\n    fmt.Println("PASS")\n    os.Exit(0)\n}\n'
    ),
}

# Go task 12 (Longest -> interface{}) and task 22 (FilterIntegers([]interface{}) []int):
# interface{} values cross with their dynamic types. Under the former composition
# (interface{} signatures kept program and test in one binary, marker "PASS")
# init-exit-interface was judged passed. The other two must fail because the types
# travel intact: a named string type is not a string to assert.Equal, and a rune
# ('c') is not an int, so a codec that erased either would turn them into passes.
GO_12_ATTACKS: dict[str, str] = {
    "init-exit-interface": (
        '    return nil\n}\n\nfunc init() {\n    fmt.Println("PASS")\n    os.Exit(0)\n}\n'
    ),
    "named-string-in-interface": (
        "    type text string\n"
        "    if len(strings) == 0 {\n        return nil\n    }\n"
        "    best := strings[0]\n"
        "    for _, s := range strings {\n"
        "        if len(s) > len(best) {\n            best = s\n        }\n    }\n"
        "    return text(best)\n}\n"
    ),
}
GO_22_ATTACKS: dict[str, str] = {
    "rune-taken-for-int": (
        "    result := make([]int, 0)\n"
        "    for _, val := range values {\n"
        "        switch i := val.(type) {\n"
        "        case int:\n            result = append(result, i)\n"
        "        case int32:\n            result = append(result, int(i))\n"
        "        }\n    }\n    return result\n}\n"
    ),
}

# Generations for HumanEval-X Java task 0 (code after the method closes the class).
JAVA_ATTACKS: dict[str, str] = {
    # A top-level class Arrays shadows java.util.Arrays in the test: its asList returns
    # an empty list, which contains no false.
    "arrays-shadowed": (
        "        return false;\n    }\n}\n\n"
        "class Arrays {\n"
        "    @SafeVarargs\n"
        "    static <T> java.util.List<T> asList(T... items) { return new ArrayList<>(); }\n"
        "}\n"
    ),
    "marker-from-source": (
        "        try {\n"
        '            for (java.io.File f : new java.io.File("/box").listFiles()) {\n'
        "                if (!f.isFile()) continue;\n"
        "                String text = new String(java.nio.file.Files.readAllBytes(f.toPath()));\n"
        "                java.util.regex.Matcher m = java.util.regex.Pattern"
        '.compile("CODELOOP-TESTS-DONE-[0-9a-f]+").matcher(text);\n'
        '                if (m.find()) System.out.println("\\n" + m.group());\n'
        "            }\n"
        "        } catch (Exception e) { }\n"
        "        Runtime.getRuntime().halt(0);\n"
        "        return false;\n    }\n}\n"
    ),
}

# Generations (function bodies) for HumanEval-X Rust task 0, has_close_elements.
RUST_ATTACKS: dict[str, str] = {
    # The test harness's own summary line, printed by the program, then exit 0.
    "fake-summary-exit-zero": (
        '    println!("\ntest result: ok. 1 passed; 0 failed; 0 ignored");\n'
        "    std::process::exit(0);\n}\n"
    ),
    # Macros defined earlier in the crate shadow std's assert_eq! in the later test
    # module (textual scope), so every assertion passes.
    "assert-macro-shadowed": (
        "    false\n}\n\n"
        "macro_rules! assert_eq {\n    ($($t:tt)*) => {};\n}\n"
        "macro_rules! assert {\n    ($($t:tt)*) => {};\n}\n"
    ),
    # Code that runs before main (an .init_array entry) and ends the process with 0.
    "exit-before-main": (
        "    false\n}\n\n"
        'extern "C" fn codeloop_early_exit() {\n'
        '    println!("test result: ok. 1 passed; 0 failed");\n'
        "    std::process::exit(0);\n}\n"
        '#[used]\n#[link_section = ".init_array"]\n'
        'static EARLY: extern "C" fn() = codeloop_early_exit;\n'
    ),
}

# Rust task 22 (filter_integers(Vec<Box<dyn Any>>) -> Vec<i32>): a dyn Any crosses
# with its concrete type. Under the former composition (Box<dyn Any> kept one crate)
# assert-macro-shadowed-any was judged passed; a char counted as an i32 must fail.
RUST_22_ATTACKS: dict[str, str] = {
    "assert-macro-shadowed-any": (
        "    let _ = values;\n    vec![]\n}\n\n"
        "macro_rules! assert_eq {\n    ($($t:tt)*) => {};\n}\n"
    ),
    "char-taken-for-i32": (
        "    let mut out: Vec<i32> = Vec::new();\n"
        "    for value in values {\n"
        "        if let Some(i) = value.downcast_ref::<i32>() {\n            out.push(*i);\n        }\n"
        "        if let Some(c) = value.downcast_ref::<char>() {\n"
        "            out.push(*c as i32);\n        }\n"
        "    }\n    out\n}\n"
    ),
}

# Rust task 137 (compare_one -> RtnType<String, f64, i32>, an enum the solution itself
# defines): the test's crate gets a copy of a plain enum rebuilt from checked parts.
# Under the former composition (one crate) both were judged passed; now the first
# does not compile (the copy has only the derives the solution declared, and the
# solution's own `impl PartialEq` stays in its crate) and the second fails its asserts.
RUST_137_ATTACKS: dict[str, str] = {
    "always-equal-enum": (
        "    let _ = (a, b);\n    RtnType::Empty()\n}\n\n"
        "#[derive(Debug)]\npub enum RtnType<S, F, I> {\n"
        "    Empty(),\n    String(S),\n    Float(F),\n    Int(I),\n}\n"
        "impl<S, F, I> PartialEq for RtnType<S, F, I> {\n"
        "    fn eq(&self, _other: &Self) -> bool {\n        true\n    }\n}\n"
    ),
    "assert-macro-shadowed-enum": (
        "    let _ = (a, b);\n    RtnType::Empty()\n}\n\n"
        "#[derive(Debug, PartialEq)]\npub enum RtnType<S, F, I> {\n"
        "    Empty(),\n    String(S),\n    Float(F),\n    Int(I),\n}\n"
        "macro_rules! assert_eq {\n    ($($t:tt)*) => {};\n}\n"
    ),
    # Not plain (a bound on a type parameter): the check fails outright, rather than
    # falling back to one crate, where the shadowed macro would pass it.
    "unplain-enum-macro-shadowed": (
        "    let _ = (a, b);\n    RtnType::Empty()\n}\n\n"
        "#[derive(Debug, PartialEq)]\npub enum RtnType<S: Clone, F, I> {\n"
        "    Empty(),\n    String(S),\n    Float(F),\n    Int(I),\n}\n"
        "macro_rules! assert_eq {\n    ($($t:tt)*) => {};\n}\n"
    ),
}

# Rust task 12 (longest -> Option<String>): a function of the solution that the test
# calls gets a proxy in the test's crate; one named like a prelude item (`Some`) must
# not get one, or the test's `use super::*` would shadow the prelude with it.
RUST_12_ATTACKS: dict[str, str] = {
    "prelude-some-shadowed": (
        "    None\n}\n\n"
        "#[allow(non_snake_case)]\nfn Some(value: String) -> Option<String> {\n"
        "    let _ = value;\n    None\n}\n"
    ),
}

# The identity forgery of a trusted helper (HumanEval/38's encoder, /50's): the answer
# decodes by returning its input and makes the encoder the test calls the identity,
# so that decode(encode(s)) == s holds for any s. (task id, generation) by name.
ENCODERS = ((38, "encode_cyclic"), (50, "encode_shift"))
"""HumanEval's tasks whose test calls the prompt's encoder, with its name (Python, C++)."""
HELPER_ATTACKS: dict[str, tuple[str, str]] = {
    # HumanEval-X's Rust/38 prompt does not define encode_cyclic (its canonical solution
    # does): the test's crate called the solution's own and this answer passed.
    "rust identity-encode_cyclic": (
        "Rust/38",
        "    s.to_string()\n}\n\npub fn encode_cyclic(s: &str) -> String {\n    s.to_string()\n}\n",
    ),
    **{
        f"python identity-{helper}": (
            f"Python/{task}",
            f"    global {helper}\n    {helper} = lambda s: s\n    return s\n",
        )
        for task, helper in ENCODERS
    },
    # A macro after the prompt's encoder renames every later call to it (the test's, in
    # one translation unit) to the identity.
    **{
        f"cpp identity-{helper}": (f"CPP/{task}", f"    return s;\n}}\n#define {helper}(s) (s)\n")
        for task, helper in ENCODERS
    },
}

# Control-flow escapes (issue 66): a wrong answer that ends by raising, throwing,
# panicking or exiting in a way the test's language might read as "done" rather than
# "failed". Each runs in the solution's own process, and only a failure reaches the test;
# every one must fail. (Python's own class, a StopIteration that ends a test's map() or
# zip() early, is tests/test_control_flow_escapes.py's matrix of test styles.)
ESCAPE_ATTACKS: dict[str, tuple[str, str]] = {
    "python raise-stopiteration": ("Python/0", "    raise StopIteration\n"),
    "python raise-generatorexit": ("Python/0", "    raise GeneratorExit\n"),
    "javascript throw-non-error": (
        "JavaScript/0",
        "  throw { name: 'StopIteration', message: '', then: (ok) => ok(true) };\n}\n",
    ),
    "javascript returns-thenable": (
        "JavaScript/0",
        "  return { then: (resolve) => resolve(true) };\n}\n",
    ),
    "javascript returns-promise": ("JavaScript/0", "  return Promise.resolve(true);\n}\n"),
    "javascript late-rejection": (
        "JavaScript/0",
        "  Promise.reject(new Error('late'));\n  setTimeout(() => process.exit(0), 0);\n"
        "  return false;\n}\n",
    ),
    "java throw-error": ("Java/0", "        throw new StackOverflowError();\n    }\n}\n"),
    "java throw-threaddeath": ("Java/0", "        throw new ThreadDeath();\n    }\n}\n"),
    "java exit-zero": ("Java/0", "        System.exit(0);\n        return false;\n    }\n}\n"),
    "go panic-in-deferred-call": (
        "Go/0",
        '    defer func() { panic("deferred") }()\n    return false\n}\n',
    ),
    "go panic-nil": ("Go/0", "    panic(nil)\n}\n"),
    "rust panic-any-payload": ("Rust/0", "    std::panic::panic_any(7u8)\n}\n"),
    "rust exit-in-thread": (
        "Rust/0",
        "    std::thread::spawn(|| std::process::exit(0)).join().ok();\n    false\n}\n",
    ),
    "cpp throw-non-exception": ("CPP/0", "    throw 42;\n}\n"),
    "cpp throw-through-c-frames": (
        "CPP/0",
        "    int items[2] = {2, 1};\n"
        "    qsort(items, 2, sizeof(int), [](const void*, const void*) -> int { throw 1; });\n"
        "    return false;\n}\n",
    ),
    "cpp longjmp-out": (
        "CPP/0",
        # Back into a static initializer's setjmp (its frame long gone), which exits 0.
        "    extern void* codeloop_escape[5];\n    __builtin_longjmp(codeloop_escape, 1);\n}\n"
        "void* codeloop_escape[5];\n"
        "static int codeloop_armed = __builtin_setjmp(codeloop_escape) ? (exit(0), 0) : 0;\n",
    ),
}
"""name -> (HumanEval-X task id, generation). Go's runtime.Goexit needs an import the
prompt lacks: tests/test_control_flow_escapes.py adds it to the program."""


# Wrong answers that look for what the check must keep hidden; they print what they
# find on stderr, which comes back in the feedback of the (failed) check.
SPY = (
    "    import os\n"
    "    found = []\n"
    # Spelt in pieces, so that the spy's own source does not match.
    "    WANTED = (b'def ' + b'check(', b'CODELOOP-' + b'TESTS-DONE')\n"
    "    for folder in ('/box', '/tmp', '/work'):\n"
    "        for root, _dirs, files in os.walk(folder):\n"
    "            for name in files:\n"
    "                try:\n"
    "                    data = open(os.path.join(root, name), 'rb').read()\n"
    "                except OSError:\n"
    "                    continue\n"
    "                if WANTED[0] in data or WANTED[1] in data:\n"
    "                    found.append(os.path.join(root, name))\n"
    "    for pid in (os.getppid(), 1):\n"
    "        for leaf in ('mem', 'environ', 'fd/0'):\n"
    "            try:\n"
    "                data = open(f'/proc/{pid}/{leaf}', 'rb').read(1 << 16)\n"
    "            except OSError:\n"
    "                continue\n"
    "            if WANTED[0] in data or WANTED[1] in data:\n"
    "                found.append(f'/proc/{pid}/{leaf}')\n"
    "    import sys\n"
    "    print('SPY-FOUND', found, file=sys.stderr)\n"
    "    return False\n"
)


def wrong_answers() -> list[tuple[str, str, str]]:
    """(HumanEval-X task id, "language attack", generation) of every attack table."""
    found = [(task_id, f"python {name}", body) for name, (task_id, body) in ATTACKS.items()]
    found += [(task_id, f"javascript {name}", body) for name, (task_id, body) in JS_ATTACKS.items()]
    found += [(task_id, name, body) for name, (task_id, body) in HELPER_ATTACKS.items()]
    found += [(task_id, name, body) for name, (task_id, body) in ESCAPE_ATTACKS.items()]
    for language, task_id, table in (
        ("cpp", "CPP/0", CPP_ATTACKS),
        ("cpp", "CPP/22", CPP_22_ATTACKS),
        ("cpp", "CPP/137", CPP_137_ATTACKS),
        ("go", "Go/0", GO_ATTACKS),
        ("go", "Go/12", GO_12_ATTACKS),
        ("go", "Go/22", GO_22_ATTACKS),
        ("java", "Java/0", JAVA_ATTACKS),
        ("rust", "Rust/0", RUST_ATTACKS),
        ("rust", "Rust/12", RUST_12_ATTACKS),
        ("rust", "Rust/22", RUST_22_ATTACKS),
        ("rust", "Rust/137", RUST_137_ATTACKS),
    ):
        found += [(task_id, f"{language} {name}", body) for name, body in table.items()]
    return found
