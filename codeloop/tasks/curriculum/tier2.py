"""Tier 2: one loop over a list, a string or a range of numbers."""

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

_BIG = "The answer fits in a 64-bit signed integer."
_LIST = "The first line holds n, the second line holds n integers separated by spaces."


def sum_list(data: str, p: dict) -> str:
    values = [int(x) for x in data.split()[1:]]
    return str(sum(values))


def max_list(data: str, p: dict) -> str:
    return str(max(int(x) for x in data.split()[1:]))


def min_list(data: str, p: dict) -> str:
    return str(min(int(x) for x in data.split()[1:]))


def count_greater(data: str, p: dict) -> str:
    return str(sum(1 for x in data.split()[1:] if int(x) > p["k"]))


def reverse_list(data: str, p: dict) -> str:
    return " ".join(reversed(data.split()[1:]))


def reverse_string(data: str, p: dict) -> str:
    return data.split("\n")[0][::-1]


def count_vowels(data: str, p: dict) -> str:
    return str(sum(1 for c in data.split("\n")[0] if c in "aeiou"))


def palindrome(data: str, p: dict) -> str:
    w = data.split()[0]
    return p["yes"] if w == w[::-1] else p["no"]


def factorial(data: str, p: dict) -> str:
    result = 1
    for i in range(2, int(data.split()[0]) + 1):
        result *= i
    return str(result)


def fibonacci(data: str, p: dict) -> str:
    a, b = p["first"], p["second"]
    for _ in range(int(data.split()[0])):
        a, b = b, a + b
    return str(a)


def digit_sum(data: str, p: dict) -> str:
    return str(sum(int(c) for c in data.split()[0]))


def count_char(data: str, p: dict) -> str:
    lines = data.split("\n")
    return str(lines[0].count(lines[1].strip()))


def multiples(data: str, p: dict) -> str:
    x = int(data.split()[0])
    return "\n".join(str(x * i) for i in range(1, p["k"] + 1))


def sum_to_n(data: str, p: dict) -> str:
    n = int(data.split()[0])
    return str(n * (n + 1) // 2)


def filter_parity(data: str, p: dict) -> str:
    want = 0 if p["keep"] == "even" else 1
    return " ".join(x for x in data.split()[1:] if int(x) % 2 == want)


def word_count(data: str, p: dict) -> str:
    return str(len(data.split("\n")[0].split()))


def second_largest(data: str, p: dict) -> str:
    values = sorted({int(x) for x in data.split()[1:]})
    return str(values[-2])


def gcd(data: str, p: dict) -> str:
    a, b = map(int, data.split())
    while b:
        a, b = b, a % b
    return str(a)


def lcm(data: str, p: dict) -> str:
    a, b = map(int, data.split())
    x, y = a, b
    while y:
        x, y = y, x % y
    return str(a // x * b)


def is_prime(data: str, p: dict) -> str:
    n = int(data.split()[0])
    if n < 2:
        return "NO"
    i = 2
    while i * i <= n:
        if n % i == 0:
            return "NO"
        i += 1
    return "YES"


def count_multiples(data: str, p: dict) -> str:
    a, b = map(int, data.split())
    return str(sum(1 for x in range(a, b + 1) if x % p["k"] == 0))


def capitalize_words(data: str, p: dict) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in data.split("\n")[0].split(" "))


def binary(data: str, p: dict) -> str:
    return format(int(data.split()[0]), "b")


def reverse_digits(data: str, p: dict) -> str:
    return str(int(data.split()[0][::-1]))


def average(data: str, p: dict) -> str:
    values = [int(x) for x in data.split()[1:]]
    return repr(sum(values) / len(values))


def count_long_words(data: str, p: dict) -> str:
    return str(sum(1 for w in data.split() if len(w) > p["k"]))


def power(data: str, p: dict) -> str:
    a, b = map(int, data.split())
    return str(a**b)


def _with_even(rng: Random, p: Params) -> str:
    values = ints(rng, rng.randint(1, 10), -50, 50)
    values[rng.randrange(len(values))] = rng.randrange(-25, 25) * 2 + (p["keep"] == "odd")
    return f"{len(values)}\n{joined(values)}\n"


def _two_distinct(rng: Random, p: Params) -> str:
    values = ints(rng, rng.randint(2, 10), -p["high"], p["high"])
    while len(set(values)) < 2:
        values.append(rng.randint(-p["high"], p["high"]))
    return f"{len(values)}\n{joined(values)}\n"


def _count_char_input(rng: Random, p: Params) -> str:
    text = word(rng) + word(rng)
    return f"{text}\n{rng.choice(text + 'xz')}\n"


FAMILIES: list[Family] = [
    Family(
        "sum-list", 2, "Sum of a list",
        params=lambda rng: {"high": rng.choice([10, 100, 10000])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        "Print only the sum of the n integers.",
        generate=lambda rng, p: sized_list(rng, -p["high"], p["high"]),
        solve=sum_list,
    ),
    Family(
        "max-list", 2, "Maximum of a list",
        params=lambda rng: {"high": rng.choice([10, 100, 10000])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        "Print only the largest of the n integers.",
        generate=lambda rng, p: sized_list(rng, -p["high"], p["high"]),
        solve=max_list,
    ),
    Family(
        "min-list", 2, "Minimum of a list",
        params=lambda rng: {"high": rng.choice([10, 100, 10000])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        "Print only the smallest of the n integers.",
        generate=lambda rng, p: sized_list(rng, -p["high"], p["high"]),
        solve=min_list,
    ),
    Family(
        "count-greater", 2, "Count values above a threshold",
        params=lambda rng: {"k": rng.randint(-10, 20)},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        f"Print only how many of the n integers are greater than {p['k']}.",
        generate=lambda rng, p: sized_list(rng, -30, 40),
        solve=count_greater,
    ),
    Family(
        "reverse-list", 2, "Reverse a list",
        params=lambda rng: {"high": rng.choice([9, 100, 1000])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        "Print only the n integers in reverse order, on one line separated by single spaces.",
        generate=lambda rng, p: sized_list(rng, -p["high"], p["high"]),
        solve=reverse_list,
    ),
    Family(
        "reverse-string", 2, "Reverse a string",
        params=lambda rng: {"words": rng.randint(1, 4)},
        statement=lambda p: "Read one line of text from standard input. "
        "Print only the same line with its characters in reverse order.",
        generate=lambda rng, p: sentence(rng, 1, p["words"]) + "\n",
        solve=reverse_string,
    ),
    Family(
        "count-vowels", 2, "Count vowels",
        params=lambda rng: {"words": rng.randint(1, 6)},
        statement=lambda p: "Read one line of lowercase letters and spaces from standard input. "
        "Print only the number of vowels in it (the letters a, e, i, o and u).",
        generate=lambda rng, p: sentence(rng, 1, p["words"]) + "\n",
        solve=count_vowels,
    ),
    Family(
        "palindrome", 2, "Palindrome check",
        params=lambda rng: dict(zip(("yes", "no"), rng.choice([("YES", "NO"), ("yes", "no")]),
                                    strict=True)),
        statement=lambda p: "Read one lowercase word from standard input. "
        f"Print only {p['yes']} if the word reads the same forwards and backwards, "
        f"otherwise print only {p['no']}.",
        generate=lambda rng, p: word(rng) + "\n",
        solve=palindrome,
    ),
    Family(
        "factorial", 2, "Factorial",
        params=lambda rng: {"high": rng.choice([10, 15, 20])},
        statement=lambda p: f"Read one integer n (0 <= n <= {p['high']}) from standard input. "
        "Print only n! (the product 1 * 2 * ... * n; 0! is 1). " + _BIG,
        generate=lambda rng, p: f"{rng.randint(0, p['high'])}\n",
        solve=factorial,
    ),
    Family(
        "fibonacci", 2, "Fibonacci-like sequence",
        params=lambda rng: dict(zip(("first", "second"), rng.choice([(0, 1), (1, 1), (2, 1)]),
                                    strict=True)),
        statement=lambda p: f"A sequence starts with F(0) = {p['first']} and "
        f"F(1) = {p['second']}; each later term is the sum of the two before it. "
        "Read one integer n (0 <= n <= 50) from standard input. Print only F(n). " + _BIG,
        generate=lambda rng, p: f"{rng.randint(0, 50)}\n",
        solve=fibonacci,
    ),
    Family(
        "digit-sum", 2, "Sum of digits",
        params=lambda rng: {"high": rng.choice([999, 10**6, 10**12])},
        statement=lambda p: "Read one non-negative integer n from standard input. "
        "Print only the sum of its decimal digits.",
        generate=lambda rng, p: f"{rng.randint(0, p['high'])}\n",
        solve=digit_sum,
    ),
    Family(
        "count-char", 2, "Count a character",
        params=lambda rng: {"v": rng.randint(0, 3)},
        statement=lambda p: "Read two lines from standard input: a lowercase word, then a single "
        "lowercase letter c. Print only how many times c occurs in the word.",
        generate=_count_char_input,
        solve=count_char,
    ),
    Family(
        "multiples", 2, "First multiples",
        params=lambda rng: {"k": rng.randint(3, 10)},
        statement=lambda p: "Read one integer x from standard input. "
        f"Print only the numbers x * 1, x * 2, ..., x * {p['k']}, one per line.",
        generate=lambda rng, p: f"{rng.randint(-50, 50)}\n",
        solve=multiples,
    ),
    Family(
        "sum-to-n", 2, "Sum from 1 to n",
        params=lambda rng: {"high": rng.choice([100, 10000, 1000000])},
        statement=lambda p: f"Read one integer n (1 <= n <= {p['high']}) from standard input. "
        "Print only the sum 1 + 2 + ... + n. " + _BIG,
        generate=lambda rng, p: f"{rng.randint(1, p['high'])}\n",
        solve=sum_to_n,
    ),
    Family(
        "filter-parity", 2, "Keep even or odd numbers",
        params=lambda rng: {"keep": rng.choice(["even", "odd"])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        f"Print only the {p['keep']} numbers of the list in their original order, on one line "
        f"separated by single spaces. At least one number is {p['keep']}.",
        generate=_with_even,
        solve=filter_parity,
    ),
    Family(
        "word-count", 2, "Count words",
        params=lambda rng: {"words": rng.randint(2, 9)},
        statement=lambda p: "Read one line of words separated by single spaces from standard "
        "input. Print only the number of words.",
        generate=lambda rng, p: sentence(rng, 1, p["words"]) + "\n",
        solve=word_count,
    ),
    Family(
        "second-largest", 2, "Second largest value",
        params=lambda rng: {"high": rng.choice([5, 50, 500])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        "The list holds at least two different values. "
        "Print only the second largest distinct value.",
        generate=_two_distinct,
        solve=second_largest,
    ),
    Family(
        "gcd", 2, "Greatest common divisor",
        params=lambda rng: {"high": rng.choice([100, 10000, 10**9])},
        statement=lambda p: "Read two positive integers a and b from standard input (on one "
        "line, separated by a space). Print only their greatest common divisor.",
        generate=lambda rng, p: f"{rng.randint(1, p['high'])} {rng.randint(1, p['high'])}\n",
        solve=gcd,
    ),
    Family(
        "lcm", 2, "Least common multiple",
        params=lambda rng: {"high": rng.choice([20, 1000, 100000])},
        statement=lambda p: "Read two positive integers a and b from standard input (on one "
        "line, separated by a space). Print only their least common multiple.",
        generate=lambda rng, p: f"{rng.randint(1, p['high'])} {rng.randint(1, p['high'])}\n",
        solve=lcm,
    ),
    Family(
        "is-prime", 2, "Prime check",
        params=lambda rng: {"high": rng.choice([100, 10000, 1000000])},
        statement=lambda p: f"Read one integer n (1 <= n <= {p['high']}) from standard input. "
        "Print only YES if n is a prime number, otherwise print only NO.",
        generate=lambda rng, p: f"{rng.randint(1, p['high'])}\n",
        solve=is_prime,
    ),
    Family(
        "count-multiples", 2, "Count multiples in a range",
        params=lambda rng: {"k": rng.randint(2, 9)},
        statement=lambda p: "Read two integers a and b (1 <= a <= b <= 100000) from standard "
        f"input. Print only how many integers x with a <= x <= b are divisible by {p['k']}.",
        generate=lambda rng, p: (lambda a: f"{a} {rng.randint(a, 100000)}\n")(
            rng.randint(1, 100000)
        ),
        solve=count_multiples,
    ),
    Family(
        "capitalize-words", 2, "Capitalize words",
        params=lambda rng: {"words": rng.randint(1, 6)},
        statement=lambda p: "Read one line of lowercase words separated by single spaces from "
        "standard input. Print only the same line with the first letter of every word in "
        "upper case.",
        generate=lambda rng, p: sentence(rng, 1, p["words"]) + "\n",
        solve=capitalize_words,
    ),
    Family(
        "binary", 2, "Binary representation",
        params=lambda rng: {"high": rng.choice([15, 1000, 10**9])},
        statement=lambda p: f"Read one integer n (0 <= n <= {p['high']}) from standard input. "
        "Print only n written in base 2, without leading zeros (print 0 for zero).",
        generate=lambda rng, p: f"{rng.randint(0, p['high'])}\n",
        solve=binary,
    ),
    Family(
        "reverse-digits", 2, "Reverse the digits",
        params=lambda rng: {"high": rng.choice([999, 10**6, 10**9])},
        statement=lambda p: f"Read one integer n (1 <= n <= {p['high']}) from standard input. "
        "Print only the number formed by its digits in reverse order, without leading zeros.",
        generate=lambda rng, p: f"{rng.randint(1, p['high'])}\n",
        solve=reverse_digits,
    ),
    Family(
        "average", 2, "Average of a list",
        params=lambda rng: {"high": rng.choice([10, 100, 1000])},
        statement=lambda p: f"Read a list of integers from standard input. {_LIST} "
        "Print only the average (arithmetic mean) of the n integers as a decimal number; "
        "answers within 0.000001 of the exact value are accepted.",
        generate=lambda rng, p: sized_list(rng, -p["high"], p["high"]),
        solve=average,
        checker="float:1e-6",
    ),
    Family(
        "count-long-words", 2, "Count long words",
        params=lambda rng: {"k": rng.randint(3, 6)},
        statement=lambda p: "Read one line of lowercase words separated by single spaces from "
        f"standard input. Print only how many words have more than {p['k']} letters.",
        generate=lambda rng, p: sentence(rng, 1, 8) + "\n",
        solve=count_long_words,
    ),
    Family(
        "power", 2, "Integer power",
        params=lambda rng: {"high": rng.choice([5, 9])},
        statement=lambda p: f"Read two integers a (1 <= a <= {p['high']}) and b (0 <= b <= 18) "
        "from standard input (on one line, separated by a space). Print only a to the power b. "
        + _BIG,
        generate=lambda rng, p: f"{rng.randint(1, p['high'])} {rng.randint(0, 18)}\n",
        solve=power,
    ),
]  # fmt: skip
