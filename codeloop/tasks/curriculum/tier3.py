"""Tier 3: small classic techniques: prefix sums, sorting by key, counting, brackets, sieves."""

from __future__ import annotations

from random import Random

from codeloop.tasks.curriculum.family import (
    Family,
    Params,
    ints,
    joined,
    sentence,
    sized_list,
    word,
)

_LIST = "The first line holds n, the second line holds n integers separated by spaces."


def prefix_sums(data: str, p: dict) -> str:
    total, out = 0, []
    for x in data.split()[1:]:
        total += int(x)
        out.append(str(total))
    return " ".join(out)


def range_sums(data: str, p: dict) -> str:
    tokens = data.split()
    n = int(tokens[0])
    prefix = [0]
    for x in tokens[1 : n + 1]:
        prefix.append(prefix[-1] + int(x))
    q = int(tokens[n + 1])
    out = []
    for i in range(q):
        left, right = int(tokens[n + 2 + 2 * i]), int(tokens[n + 3 + 2 * i])
        out.append(str(prefix[right] - prefix[left - 1]))
    return "\n".join(out)


def sort_list(data: str, p: dict) -> str:
    values = sorted((int(x) for x in data.split()[1:]), reverse=p["order"] == "decreasing")
    return " ".join(str(x) for x in values)


def sort_by_score(data: str, p: dict) -> str:
    lines = data.strip().split("\n")[1:]
    rows = [(line.split()[0], int(line.split()[1])) for line in lines]
    sign = -1 if p["order"] == "highest" else 1
    rows.sort(key=lambda row: (sign * row[1], row[0]))
    return "\n".join(name for name, _ in rows)


def distinct_sorted(data: str, p: dict) -> str:
    return " ".join(str(x) for x in sorted({int(x) for x in data.split()[1:]}))


def frequency_table(data: str, p: dict) -> str:
    counts = {}
    for x in data.split()[1:]:
        counts[int(x)] = counts.get(int(x), 0) + 1
    return "\n".join(f"{value} {counts[value]}" for value in sorted(counts))


def most_frequent_word(data: str, p: dict) -> str:
    counts = {}
    for w in data.split():
        counts[w] = counts.get(w, 0) + 1
    best = max(counts.values())
    return min(w for w in counts if counts[w] == best)


def anagrams(data: str, p: dict) -> str:
    a, b = data.split()[:2]
    return "YES" if sorted(a) == sorted(b) else "NO"


def caesar(data: str, p: dict) -> str:
    line = data.split("\n")[0]
    return "".join(chr((ord(c) - 97 + p["k"]) % 26 + 97) if "a" <= c <= "z" else c for c in line)


def run_length(data: str, p: dict) -> str:
    text = data.split()[0]
    out, i = [], 0
    while i < len(text):
        j = i
        while j < len(text) and text[j] == text[i]:
            j += 1
        out.append(text[i] + str(j - i) if p["style"] == "letter-first" else str(j - i) + text[i])
        i = j
    return "".join(out)


def transpose(data: str, p: dict) -> str:
    lines = data.strip().split("\n")
    rows, cols = map(int, lines[0].split())
    grid = [lines[1 + r].split() for r in range(rows)]
    return "\n".join(" ".join(grid[r][c] for r in range(rows)) for c in range(cols))


def line_sums(data: str, p: dict) -> str:
    lines = data.strip().split("\n")
    rows, cols = map(int, lines[0].split())
    grid = [[int(x) for x in lines[1 + r].split()] for r in range(rows)]
    if p["what"] == "row":
        return "\n".join(str(sum(row)) for row in grid)
    return "\n".join(str(sum(grid[r][c] for r in range(rows))) for c in range(cols))


def two_sum(data: str, p: dict) -> str:
    tokens = [int(x) for x in data.split()]
    n = tokens[0]
    values, target = tokens[1 : n + 1], tokens[n + 1]
    seen = set()
    for x in values:
        if target - x in seen:
            return "YES"
        seen.add(x)
    return "NO"


def count_pairs(data: str, p: dict) -> str:
    tokens = [int(x) for x in data.split()]
    n = tokens[0]
    values, target = tokens[1 : n + 1], tokens[n + 1]
    return str(sum(1 for i in range(n) for j in range(i + 1, n) if values[i] + values[j] == target))


def brackets(data: str, p: dict) -> str:
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    for c in data.split()[0]:
        if c in "([{":
            stack.append(c)
        elif not stack or stack.pop() != pairs[c]:
            return "NO"
    return "NO" if stack else "YES"


def primes_up_to(data: str, p: dict) -> str:
    n = int(data.split()[0])
    sieve = [True] * (n + 1)
    sieve[0] = sieve[1] = False
    for i in range(2, int(n**0.5) + 1):
        if sieve[i]:
            for j in range(i * i, n + 1, i):
                sieve[j] = False
    return " ".join(str(i) for i in range(n + 1) if sieve[i])


def to_base(data: str, p: dict) -> str:
    n, base = int(data.split()[0]), p["base"]
    digits = "0123456789abcdef"
    out = ""
    while True:
        out = digits[n % base] + out
        n //= base
        if n == 0:
            return out


def merge_sorted(data: str, p: dict) -> str:
    lines = data.strip().split("\n")
    a = [int(x) for x in lines[1].split()]
    b = [int(x) for x in lines[3].split()]
    return " ".join(str(x) for x in sorted(a + b))


def rotate_left(data: str, p: dict) -> str:
    tokens = data.split()
    n = int(tokens[0])
    values = tokens[1 : n + 1]
    k = int(tokens[n + 1]) % n
    return " ".join(values[k:] + values[:k])


def longest_word(data: str, p: dict) -> str:
    words = data.split()
    best = words[0]
    for w in words:
        if len(w) > len(best):
            best = w
    return best


def digital_root(data: str, p: dict) -> str:
    n = data.split()[0]
    while len(n) > 1:
        n = str(sum(int(c) for c in n))
    return n


def kth_smallest(data: str, p: dict) -> str:
    tokens = [int(x) for x in data.split()]
    n = tokens[0]
    return str(sorted(tokens[1 : n + 1])[tokens[n + 1] - 1])


def median(data: str, p: dict) -> str:
    values = sorted(int(x) for x in data.split()[1:])
    return str(values[len(values) // 2])


def common_prefix(data: str, p: dict) -> str:
    words = data.split()[1:]
    prefix = words[0]
    for w in words[1:]:
        while not w.startswith(prefix):
            prefix = prefix[:-1]
    return prefix if prefix else p["none"]


def running_max(data: str, p: dict) -> str:
    best, out = None, []
    for x in data.split()[1:]:
        best = int(x) if best is None else max(best, int(x))
        out.append(str(best))
    return " ".join(out)


def pascal_row(data: str, p: dict) -> str:
    row = [1]
    for _ in range(int(data.split()[0])):
        row = [1] + [row[i] + row[i + 1] for i in range(len(row) - 1)] + [1]
    return " ".join(str(x) for x in row)


def _range_queries(rng: Random, p: Params) -> str:
    values = ints(rng, rng.randint(1, 10), -100, 100)
    n = len(values)
    queries = []
    for _ in range(rng.randint(1, p["q"])):
        left = rng.randint(1, n)
        queries.append(f"{left} {rng.randint(left, n)}")
    return f"{n}\n{joined(values)}\n{len(queries)}\n" + "\n".join(queries) + "\n"


def _scores(rng: Random, p: Params) -> str:
    names = rng.sample(
        ["ann", "bob", "cid", "dee", "eve", "fay", "gus", "hal", "ivy", "joe"], rng.randint(1, 8)
    )
    rows = [f"{name} {rng.randint(0, p['high'])}" for name in names]
    return f"{len(rows)}\n" + "\n".join(rows) + "\n"


def _anagram_pair(rng: Random, p: Params) -> str:
    first = word(rng)
    second = rng.choice(["".join(rng.sample(first, len(first))), word(rng)])
    return f"{first} {second}\n"


def _grid(rng: Random, p: Params, low: int = -9, high: int = 9) -> str:
    rows, cols = rng.randint(1, 4), rng.randint(1, 4)
    lines = [joined(ints(rng, cols, low, high)) for _ in range(rows)]
    return f"{rows} {cols}\n" + "\n".join(lines) + "\n"


def _list_and_target(rng: Random, p: Params) -> str:
    values = ints(rng, rng.randint(1, 8), -p["high"], p["high"])
    target = rng.choice([rng.randint(-p["high"], p["high"]), sum(rng.sample(values * 2, 2))])
    return f"{len(values)}\n{joined(values)}\n{target}\n"


def _brackets(rng: Random, p: Params) -> str:
    kinds = p["kinds"]
    stack, out = [], []
    for _ in range(rng.randint(1, 12)):
        if stack and rng.random() < 0.45:
            out.append({"(": ")", "[": "]", "{": "}"}[stack.pop()])
        else:
            opening = rng.choice(kinds[0::2])
            stack.append(opening)
            out.append(opening)
    out.extend({"(": ")", "[": "]", "{": "}"}[c] for c in reversed(stack))
    if rng.random() < 0.5:
        index = rng.randrange(len(out))
        out[index] = rng.choice(kinds)
    return "".join(out) + "\n"


def _two_sorted(rng: Random, p: Params) -> str:
    a = sorted(ints(rng, rng.randint(1, 6), -50, 50))
    b = sorted(ints(rng, rng.randint(1, 6), -50, 50))
    return f"{len(a)}\n{joined(a)}\n{len(b)}\n{joined(b)}\n"


def _rotate(rng: Random, p: Params) -> str:
    values = ints(rng, rng.randint(1, 9), 0, 99)
    return f"{len(values)}\n{joined(values)}\n{rng.randint(0, p['k_high'])}\n"


def _kth(rng: Random, p: Params) -> str:
    values = ints(rng, rng.randint(1, 9), -99, 99)
    return f"{len(values)}\n{joined(values)}\n{rng.randint(1, len(values))}\n"


def _prefixed_words(rng: Random, p: Params) -> str:
    stem = rng.choice(["", "pre", "co", "inter", "s", "trans"])
    words = [stem + word(rng) for _ in range(rng.randint(1, 5))]
    return f"{len(words)}\n{' '.join(words)}\n"


FAMILIES: list[Family] = [
    Family(
        "prefix-sums", 3, "Prefix sums",
        params=lambda rng: {"high": rng.choice([10, 1000])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        "Print only the n prefix sums (the sum of the first 1, 2, ..., n integers), on one line "
        "separated by single spaces.",
        generate=lambda rng, p: sized_list(rng, -p["high"], p["high"]),
        solve=prefix_sums,
    ),
    Family(
        "range-sums", 3, "Range sum queries",
        params=lambda rng: {"q": rng.randint(2, 6)},
        statement=lambda p: "Read from standard input: a line with n, a line with n integers "
        "a1 ... an, a line with q, then q lines each with two integers l and r "
        "(1 <= l <= r <= n). For each query print only the sum al + ... + ar, one per line.",
        generate=_range_queries,
        solve=range_sums,
    ),
    Family(
        "sort-list", 3, "Sort a list",
        params=lambda rng: {"order": rng.choice(["increasing", "decreasing"])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        f"Print only the n integers in {p['order']} order, on one line separated by single "
        "spaces.",
        generate=lambda rng, p: sized_list(rng, -100, 100),
        solve=sort_list,
    ),
    Family(
        "sort-by-score", 3, "Sort names by score",
        params=lambda rng: {"order": rng.choice(["highest", "lowest"]),
                            "high": rng.choice([5, 100])},
        statement=lambda p: "Read from standard input a line with n, then n lines each holding "
        "a name (lowercase letters) and an integer score separated by a space. Print only the "
        f"names, one per line, {p['order']} score first; names with equal scores in "
        "alphabetical order.",
        generate=_scores,
        solve=sort_by_score,
    ),
    Family(
        "distinct-sorted", 3, "Distinct values",
        params=lambda rng: {"high": rng.choice([5, 20])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        "Print only the distinct values in increasing order, on one line separated by single "
        "spaces.",
        generate=lambda rng, p: sized_list(rng, -p["high"], p["high"]),
        solve=distinct_sorted,
    ),
    Family(
        "frequency-table", 3, "Frequency table",
        params=lambda rng: {"high": rng.choice([3, 9])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        "For each distinct value, in increasing order, print only a line with the value and "
        "how many times it occurs, separated by a space.",
        generate=lambda rng, p: sized_list(rng, 0, p["high"]),
        solve=frequency_table,
    ),
    Family(
        "most-frequent-word", 3, "Most frequent word",
        params=lambda rng: {"words": rng.randint(3, 12)},
        statement=lambda p: "Read one line of lowercase words separated by single spaces from "
        "standard input. Print only the word that occurs most often; if several words tie, "
        "print the alphabetically smallest of them.",
        generate=lambda rng, p: " ".join(
            rng.choice(["red", "green", "blue", "cyan", "gold"]) for _ in range(p["words"])
        ) + "\n",
        solve=most_frequent_word,
    ),
    Family(
        "anagrams", 3, "Anagram check",
        params=lambda rng: {"v": rng.randint(0, 9)},
        statement=lambda p: "Read two lowercase words from standard input (on one line, "
        "separated by a space). Print only YES if one is a rearrangement of the letters of the "
        "other, otherwise print only NO.",
        generate=_anagram_pair,
        solve=anagrams,
    ),
    Family(
        "caesar", 3, "Caesar cipher",
        params=lambda rng: {"k": rng.randint(1, 25)},
        statement=lambda p: "Read one line of lowercase letters and spaces from standard input. "
        f"Print only the line with every letter shifted {p['k']} places forward in the "
        "alphabet, wrapping from z back to a; spaces stay unchanged.",
        generate=lambda rng, p: sentence(rng, 1, 4) + "\n",
        solve=caesar,
    ),
    Family(
        "run-length", 3, "Run-length encoding",
        params=lambda rng: {"style": rng.choice(["letter-first", "count-first"])},
        statement=lambda p: "Read one word of lowercase letters from standard input. Print "
        "only its run-length encoding: each maximal run of one repeated letter becomes "
        + ("the letter followed by the run length (aaab becomes a3b1)."
           if p["style"] == "letter-first"
           else "the run length followed by the letter (aaab becomes 3a1b)."),
        generate=lambda rng, p: "".join(
            rng.choice("abc") * rng.randint(1, 4) for _ in range(rng.randint(1, 6))
        ) + "\n",
        solve=run_length,
    ),
    Family(
        "transpose", 3, "Transpose a matrix",
        params=lambda rng: {"v": rng.randint(0, 9)},
        statement=lambda p: "Read from standard input a line with two integers r and c, then r "
        "lines of c integers each (a matrix). Print only its transpose: c lines of r integers, "
        "separated by single spaces.",
        generate=_grid,
        solve=transpose,
    ),
    Family(
        "line-sums", 3, "Row or column sums",
        params=lambda rng: {"what": rng.choice(["row", "column"])},
        statement=lambda p: "Read from standard input a line with two integers r and c, then r "
        f"lines of c integers each (a matrix). Print only the sum of each {p['what']}, one per "
        f"line, in {p['what']} order.",
        generate=_grid,
        solve=line_sums,
    ),
    Family(
        "two-sum", 3, "Pair with a given sum",
        params=lambda rng: {"high": rng.choice([10, 100])},
        statement=lambda p: "Read from standard input a line with n, a line with n integers, and "
        "a line with a target t. Print only YES if two different positions of the list hold "
        "values whose sum is t, otherwise print only NO.",
        generate=_list_and_target,
        solve=two_sum,
    ),
    Family(
        "count-pairs", 3, "Count pairs with a given sum",
        params=lambda rng: {"high": rng.choice([3, 10])},
        statement=lambda p: "Read from standard input a line with n, a line with n integers "
        "a1 ... an, and a line with a target t. Print only the number of index pairs i < j with "
        "ai + aj = t.",
        generate=_list_and_target,
        solve=count_pairs,
    ),
    Family(
        "brackets", 3, "Balanced brackets",
        params=lambda rng: {"kinds": rng.choice(["()", "()[]", "()[]{}"])},
        statement=lambda p: "Read one line of bracket characters from standard input (only the "
        f"characters {' '.join(p['kinds'])}). Print only YES if every bracket is closed by the "
        "matching bracket in the right order, otherwise print only NO.",
        generate=_brackets,
        solve=brackets,
    ),
    Family(
        "primes-up-to", 3, "Primes up to n",
        params=lambda rng: {"high": rng.choice([30, 200, 1000])},
        statement=lambda p: f"Read one integer n (2 <= n <= {p['high']}) from standard input. "
        "Print only all prime numbers that are at most n, in increasing order, on one line "
        "separated by single spaces.",
        generate=lambda rng, p: f"{rng.randint(2, p['high'])}\n",
        solve=primes_up_to,
    ),
    Family(
        "to-base", 3, "Change of base",
        params=lambda rng: {"base": rng.choice([3, 5, 7, 8, 16])},
        statement=lambda p: "Read one integer n (0 <= n <= 1000000) from standard input. Print "
        f"only n written in base {p['base']}, without leading zeros"
        + (" (digits above 9 are the lowercase letters a to f)." if p["base"] > 10 else "."),
        generate=lambda rng, p: f"{rng.randint(0, 1000000)}\n",
        solve=to_base,
    ),
    Family(
        "merge-sorted", 3, "Merge two sorted lists",
        params=lambda rng: {"v": rng.randint(0, 9)},
        statement=lambda p: "Read from standard input four lines: n, then n integers in "
        "increasing order, then m, then m integers in increasing order. Print only all n + m "
        "integers in increasing order, on one line separated by single spaces.",
        generate=_two_sorted,
        solve=merge_sorted,
    ),
    Family(
        "rotate-left", 3, "Rotate a list",
        params=lambda rng: {"k_high": rng.choice([5, 30])},
        statement=lambda p: "Read from standard input a line with n, a line with n integers, "
        "and a line with k (k >= 0). Print only the list rotated left by k positions (the "
        "first element moves to the end, k times), on one line separated by single spaces.",
        generate=_rotate,
        solve=rotate_left,
    ),
    Family(
        "longest-word", 3, "Longest word",
        params=lambda rng: {"words": rng.randint(2, 8)},
        statement=lambda p: "Read one line of lowercase words separated by single spaces from "
        "standard input. Print only the longest word; if several are longest, print the one "
        "that comes first in the line.",
        generate=lambda rng, p: sentence(rng, 1, p["words"]) + "\n",
        solve=longest_word,
    ),
    Family(
        "digital-root", 3, "Digital root",
        params=lambda rng: {"high": rng.choice([10**6, 10**15])},
        statement=lambda p: "Read one non-negative integer n from standard input. Replace n by "
        "the sum of its decimal digits until a single digit remains. Print only that digit.",
        generate=lambda rng, p: f"{rng.randint(0, p['high'])}\n",
        solve=digital_root,
    ),
    Family(
        "kth-smallest", 3, "k-th smallest",
        params=lambda rng: {"v": rng.randint(0, 9)},
        statement=lambda p: "Read from standard input a line with n, a line with n integers, "
        "and a line with k (1 <= k <= n). Print only the k-th smallest integer of the list "
        "(counting repeated values separately).",
        generate=_kth,
        solve=kth_smallest,
    ),
    Family(
        "median", 3, "Median",
        params=lambda rng: {"high": rng.choice([10, 1000])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        "n is odd. Print only the median (the middle value once the list is sorted).",
        generate=lambda rng, p: (lambda v: f"{len(v)}\n{joined(v)}\n")(
            ints(rng, rng.choice([1, 3, 5, 7, 9]), -p["high"], p["high"])
        ),
        solve=median,
    ),
    Family(
        "common-prefix", 3, "Longest common prefix",
        params=lambda rng: {"none": rng.choice(["-", "NONE"])},
        statement=lambda p: "Read from standard input a line with n, then a line with n "
        "lowercase words separated by spaces. Print only the longest common prefix of all the "
        f"words, or {p['none']} if they have no common prefix.",
        generate=_prefixed_words,
        solve=common_prefix,
    ),
    Family(
        "running-max", 3, "Running maximum",
        params=lambda rng: {"high": rng.choice([10, 1000])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        "Print only, for each position, the largest value seen so far, on one line separated "
        "by single spaces.",
        generate=lambda rng, p: sized_list(rng, -p["high"], p["high"]),
        solve=running_max,
    ),
    Family(
        "pascal-row", 3, "Row of Pascal's triangle",
        params=lambda rng: {"high": rng.choice([10, 30])},
        statement=lambda p: f"Read one integer n (0 <= n <= {p['high']}) from standard input. "
        "Print only row n of Pascal's triangle (row 0 is 1, row 1 is 1 1, row 2 is 1 2 1), on "
        "one line separated by single spaces.",
        generate=lambda rng, p: f"{rng.randint(0, p['high'])}\n",
        solve=pascal_row,
    ),
]  # fmt: skip
