"""Sandbox throughput per language: checks/s of a program x 5 cases with 2 workers.

Two passes over the same N distinct programs per language, in one run: `cold`
compiles each program (compile cache miss), `warm` re-checks them (cache hit), the
loop's situation when an answer is re-verified at export or audit. Prints a table
and appends it to bench/RESULTS.md.

    python -m bench.sandbox [--programs 12] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid

from bench.results import record
from codeloop.sandbox import CheckRequest, check_many
from codeloop.sandbox.languages import toolchain_version
from codeloop.sandbox.request import Case

SUM_PROGRAMS = {
    "python": "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n#",
    "javascript": "const t = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/);\n"
    "console.log(t.reduce((s, x) => s + Number(x), 0));\n//",
    "typescript": "import * as fs from 'fs';\nconst t: string[] = fs.readFileSync(0, 'utf8')"
    ".trim().split(/\\s+/);\nconsole.log(t.reduce((s: number, x: string) => s + Number(x), 0));\n//",
    "c": '#include <stdio.h>\nint main(void){long s=0,x;while(scanf("%ld",&x)==1)s+=x;'
    'printf("%ld\\n",s);}\n//',
    "cpp": "#include <bits/stdc++.h>\nint main(){long s=0,x;while(std::cin>>x)s+=x;"
    "std::cout<<s<<'\\n';}\n//",
    "java": "import java.util.*;\npublic class Main { public static void main(String[] a) {\n"
    " Scanner in = new Scanner(System.in); long s = 0; while (in.hasNextLong()) s += in.nextLong();"
    "\n System.out.println(s); } }\n//",
    "rust": "use std::io::Read;\nfn main(){let mut t=String::new();std::io::stdin()"
    ".read_to_string(&mut t).unwrap();let s:i64=t.split_whitespace().map(|x|x.parse::<i64>()"
    '.unwrap()).sum();println!("{}",s);}\n//',
    "go": 'package main\nimport "fmt"\nfunc main(){var s,x int64\nfor {\nif _,e:=fmt.Scan(&x);'
    "e!=nil{break}\ns+=x}\nfmt.Println(s)}\n//",
}
CASES = [{"input": " ".join(map(str, range(n))), "output": str(sum(range(n)))} for n in range(5)]


def measure(language: str, programs: int, workers: int) -> dict[str, float]:
    nonce = uuid.uuid4().hex
    requests = [
        CheckRequest(
            language=language, program=f"{SUM_PROGRAMS[language]} {nonce}-{i}\n", cases=CASES
        )
        for i in range(programs)
    ]
    row: dict[str, float] = {}
    for label in ("cold", "warm"):
        started = time.monotonic()
        checks = check_many(requests, workers=workers)
        elapsed = time.monotonic() - started
        bad = [c for c in checks if not c.passed]
        if bad:
            raise SystemExit(f"{language}: {bad[0].status}: {bad[0].feedback}")
        row[label] = programs / elapsed
        if label == "cold":
            row["compile_ms"] = statistics.median(c.compile_ms for c in checks)
        row["run_ms"] = statistics.median(c.run_ms / len(CASES) for c in checks)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=12)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    check_many(
        [CheckRequest(language="python", program="print(1)", cases=[Case(input="", output="1")])],
        workers=args.workers,
    )  # start the workers outside the timing (a check needs a case since fd40d44)
    header = (
        "| language | toolchain | cold checks/s | warm checks/s | compile ms (median) "
        "| run ms per case (median) |"
    )
    lines = [header, "|---|---|---|---|---|---|"]
    for language in SUM_PROGRAMS:
        row = measure(language, args.programs, args.workers)
        lines.append(
            f"| {language} | {toolchain_version(language)} | {row['cold']:.1f} | "
            f"{row['warm']:.1f} | {row['compile_ms']:.0f} | {row['run_ms']:.1f} |"
        )
        print(lines[-1], flush=True)
    record(
        f"sandbox throughput ({os.cpu_count()} cores, {args.workers} workers, "
        f"{args.programs} programs x {len(CASES)} cases, bubblewrap)",
        lines,
    )


if __name__ == "__main__":
    main()
