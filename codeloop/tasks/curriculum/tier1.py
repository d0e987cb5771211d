"""Tier 1: one read, one print. Easy enough for a 135M model to solve sometimes."""

from __future__ import annotations

from random import Random

from codeloop.tasks.curriculum.family import Family, Generator, Params, ints, joined, sentence, word

_SEP = {" ": "on one line, separated by a space", "\n": "on two lines"}


def _pair(low: int, high: int) -> Generator:
    return lambda rng, p: f"{rng.randint(low, high)}{p['sep']}{rng.randint(low, high)}\n"


def _two(rng: Random) -> Params:
    return {"sep": rng.choice([" ", "\n"])}


def exclaim_line(data: str, p: dict) -> str:
    return data.split("\n")[0] + "!"


def sum_two(data: str, p: dict) -> str:
    a, b = map(int, data.split())
    return str(a + b)


def difference_two(data: str, p: dict) -> str:
    a, b = map(int, data.split())
    return str(a - b)


def product_two(data: str, p: dict) -> str:
    a, b = map(int, data.split())
    return str(a * b)


def add_constant(data: str, p: dict) -> str:
    return str(int(data.split()[0]) + p["k"])


def times_constant(data: str, p: dict) -> str:
    return str(int(data.split()[0]) * p["k"])


def max_two(data: str, p: dict) -> str:
    a, b = map(int, data.split())
    return str(max(a, b))


def min_two(data: str, p: dict) -> str:
    a, b = map(int, data.split())
    return str(min(a, b))


def absolute_value(data: str, p: dict) -> str:
    return str(abs(int(data.split()[0])))


def square(data: str, p: dict) -> str:
    x = int(data.split()[0])
    return str(x * x)


def parity_word(data: str, p: dict) -> str:
    return p["even"] if int(data.split()[0]) % 2 == 0 else p["odd"]


def sign_word(data: str, p: dict) -> str:
    x = int(data.split()[0])
    return "positive" if x > 0 else "negative" if x < 0 else "zero"


def greeting(data: str, p: dict) -> str:
    return p["greeting"] + ", " + data.split()[0] + "!"


def repeat_word(data: str, p: dict) -> str:
    return " ".join([data.split()[0]] * p["k"])


def to_upper(data: str, p: dict) -> str:
    return data.split("\n")[0].upper()


def to_lower(data: str, p: dict) -> str:
    return data.split("\n")[0].lower()


def line_length(data: str, p: dict) -> str:
    return str(len(data.split("\n")[0]))


def sum_three(data: str, p: dict) -> str:
    return str(sum(int(x) for x in data.split()[:3]))


def quotient_remainder(data: str, p: dict) -> str:
    a, b = map(int, data.split())
    return str(a // b) + " " + str(a % b)


def print_twice(data: str, p: dict) -> str:
    line = data.split("\n")[0]
    return line + "\n" + line


def max_three(data: str, p: dict) -> str:
    return str(max(int(x) for x in data.split()[:3]))


def last_digit(data: str, p: dict) -> str:
    return str(int(data.split()[0]) % 10)


def count_to_n(data: str, p: dict) -> str:
    n = int(data.split()[0])
    return p["sep"].join(str(i) for i in range(1, n + 1))


def rectangle(data: str, p: dict) -> str:
    w, h = map(int, data.split())
    return str(w * h) if p["what"] == "area" else str(2 * (w + h))


def _one_int(low: int, high: int) -> Generator:
    return lambda rng, p: f"{rng.randint(low, high)}\n"


FAMILIES: list[Family] = [
    Family(
        "exclaim-line", 1, "Exclaim",
        params=lambda rng: {"words": rng.randint(1, 6)},
        statement=lambda p: (
            "Read one line of text from standard input. Print only that same line with an "
            "exclamation mark added at its end."
        ),
        generate=lambda rng, p: sentence(rng, 1, p["words"]) + "\n",
        solve=exclaim_line,
    ),
    Family(
        "sum-two", 1, "Sum of two integers",
        params=_two,
        statement=lambda p: (
            f"Read two integers a and b from standard input ({_SEP[p['sep']]}). "
            "Print only their sum a + b."
        ),
        generate=_pair(-1000, 1000),
        solve=sum_two,
    ),
    Family(
        "difference-two", 1, "Difference of two integers",
        params=_two,
        statement=lambda p: (
            f"Read two integers a and b from standard input ({_SEP[p['sep']]}). "
            "Print only the difference a - b."
        ),
        generate=_pair(-1000, 1000),
        solve=difference_two,
    ),
    Family(
        "product-two", 1, "Product of two integers",
        params=_two,
        statement=lambda p: (
            f"Read two integers a and b from standard input ({_SEP[p['sep']]}). "
            "Print only their product a * b."
        ),
        generate=_pair(-1000, 1000),
        solve=product_two,
    ),
    Family(
        "add-constant", 1, "Add a constant",
        params=lambda rng: {"k": rng.randint(1, 100)},
        statement=lambda p: (
            f"Read one integer x from standard input. Print only the value of x + {p['k']}."
        ),
        generate=_one_int(-10000, 10000),
        solve=add_constant,
    ),
    Family(
        "times-constant", 1, "Multiply by a constant",
        params=lambda rng: {"k": rng.randint(2, 12)},
        statement=lambda p: (
            f"Read one integer x from standard input. Print only the value of x * {p['k']}."
        ),
        generate=_one_int(-10000, 10000),
        solve=times_constant,
    ),
    Family(
        "max-two", 1, "Larger of two integers",
        params=_two,
        statement=lambda p: (
            f"Read two integers a and b from standard input ({_SEP[p['sep']]}). "
            "Print only the larger of the two."
        ),
        generate=_pair(-1000, 1000),
        solve=max_two,
    ),
    Family(
        "min-two", 1, "Smaller of two integers",
        params=_two,
        statement=lambda p: (
            f"Read two integers a and b from standard input ({_SEP[p['sep']]}). "
            "Print only the smaller of the two."
        ),
        generate=_pair(-1000, 1000),
        solve=min_two,
    ),
    Family(
        "absolute-value", 1, "Absolute value",
        params=lambda rng: {"high": rng.choice([100, 1000, 100000])},
        statement=lambda p: (
            "Read one integer x from standard input. Print only its absolute value."
        ),
        generate=lambda rng, p: f"{rng.randint(-p['high'], p['high'])}\n",
        solve=absolute_value,
    ),
    Family(
        "square", 1, "Square",
        params=lambda rng: {"high": rng.choice([10, 100, 10000])},
        statement=lambda p: (
            "Read one integer x from standard input. Print only x * x (x squared)."
        ),
        generate=lambda rng, p: f"{rng.randint(-p['high'], p['high'])}\n",
        solve=square,
    ),
    Family(
        "parity-word", 1, "Even or odd",
        params=lambda rng: dict(
            zip(("even", "odd"), rng.choice([("even", "odd"), ("EVEN", "ODD"), ("Even", "Odd")]),
                strict=True)
        ),
        statement=lambda p: (
            "Read one integer n from standard input. "
            f"Print only the word {p['even']} if n is even, or {p['odd']} if n is odd."
        ),
        generate=_one_int(-1000, 1000),
        solve=parity_word,
    ),
    Family(
        "sign-word", 1, "Sign of a number",
        params=lambda rng: {"high": rng.choice([5, 100, 1000])},
        statement=lambda p: (
            "Read one integer n from standard input. Print only the word positive if n > 0, "
            "negative if n < 0, or zero if n is 0."
        ),
        generate=lambda rng, p: f"{rng.choice([0, rng.randint(-p['high'], p['high'])])}\n",
        solve=sign_word,
    ),
    Family(
        "greeting", 1, "Greeting",
        params=lambda rng: {"greeting": rng.choice(["Hello", "Hi", "Welcome", "Good morning"])},
        statement=lambda p: (
            "Read a name (one word) from standard input. "
            f"Print only the greeting: {p['greeting']}, followed by a comma, a space, the name "
            f"and an exclamation mark. For the name Ada print: {p['greeting']}, Ada!"
        ),
        generate=lambda rng, p: rng.choice(["Ada", "Linus", "Grace", "Alan", "Barbara", "Ken"])
        + "\n",
        solve=greeting,
    ),
    Family(
        "repeat-word", 1, "Repeat a word",
        params=lambda rng: {"k": rng.randint(2, 5)},
        statement=lambda p: (
            "Read one word from standard input. "
            f"Print only that word {p['k']} times on one line, separated by single spaces."
        ),
        generate=lambda rng, p: word(rng) + "\n",
        solve=repeat_word,
    ),
    Family(
        "to-upper", 1, "Upper case",
        params=lambda rng: {"words": rng.randint(1, 5)},
        statement=lambda p: (
            "Read one line of lowercase letters and spaces from standard input. "
            "Print only the same line in upper case."
        ),
        generate=lambda rng, p: sentence(rng, 1, p["words"]) + "\n",
        solve=to_upper,
    ),
    Family(
        "to-lower", 1, "Lower case",
        params=lambda rng: {"words": rng.randint(1, 5)},
        statement=lambda p: (
            "Read one line of uppercase letters and spaces from standard input. "
            "Print only the same line in lower case."
        ),
        generate=lambda rng, p: sentence(rng, 1, p["words"]).upper() + "\n",
        solve=to_lower,
    ),
    Family(
        "line-length", 1, "Length of a line",
        params=lambda rng: {"words": rng.randint(1, 6)},
        statement=lambda p: (
            "Read one line of lowercase letters and single spaces from standard input. "
            "Print only the number of characters in the line, counting the spaces."
        ),
        generate=lambda rng, p: sentence(rng, 1, p["words"]) + "\n",
        solve=line_length,
    ),
    Family(
        "sum-three", 1, "Sum of three integers",
        params=lambda rng: {"sep": rng.choice([" ", "\n"])},
        statement=lambda p: (
            "Read three integers from standard input "
            f"({'on one line, separated by spaces' if p['sep'] == ' ' else 'one per line'}). "
            "Print only their sum."
        ),
        generate=lambda rng, p: joined(ints(rng, 3, -500, 500), p["sep"]) + "\n",
        solve=sum_three,
    ),
    Family(
        "quotient-remainder", 1, "Quotient and remainder",
        params=_two,
        statement=lambda p: (
            f"Read two positive integers a and b from standard input ({_SEP[p['sep']]}). "
            "Print only the quotient a / b rounded down and the remainder of a divided by b, "
            "on one line separated by a space."
        ),
        generate=lambda rng, p: f"{rng.randint(1, 1000)}{p['sep']}{rng.randint(1, 30)}\n",
        solve=quotient_remainder,
    ),
    Family(
        "print-twice", 1, "Print a line twice",
        params=lambda rng: {"words": rng.randint(1, 4)},
        statement=lambda p: (
            "Read one line of text from standard input. "
            "Print only that line twice, on two separate lines."
        ),
        generate=lambda rng, p: sentence(rng, 1, p["words"]) + "\n",
        solve=print_twice,
    ),
    Family(
        "max-three", 1, "Largest of three integers",
        params=lambda rng: {"high": rng.choice([10, 100, 1000])},
        statement=lambda p: (
            "Read three integers from standard input, on one line separated by spaces. "
            "Print only the largest of them."
        ),
        generate=lambda rng, p: joined(ints(rng, 3, -p["high"], p["high"])) + "\n",
        solve=max_three,
    ),
    Family(
        "last-digit", 1, "Last digit",
        params=lambda rng: {"high": rng.choice([99, 9999, 10**9])},
        statement=lambda p: (
            "Read one non-negative integer n from standard input. "
            "Print only its last decimal digit."
        ),
        generate=lambda rng, p: f"{rng.randint(0, p['high'])}\n",
        solve=last_digit,
    ),
    Family(
        "count-to-n", 1, "Count from 1 to n",
        params=lambda rng: {"sep": rng.choice([" ", "\n"])},
        statement=lambda p: (
            "Read one integer n (1 <= n <= 20) from standard input. Print only the numbers "
            "from 1 to n in increasing order, "
            + ("on one line separated by single spaces." if p["sep"] == " " else "one per line.")
        ),
        generate=lambda rng, p: f"{rng.randint(1, 20)}\n",
        solve=count_to_n,
    ),
    Family(
        "rectangle", 1, "Rectangle",
        params=lambda rng: {"what": rng.choice(["area", "perimeter"])},
        statement=lambda p: (
            "Read two positive integers, the width and the height of a rectangle, from standard "
            f"input (on one line, separated by a space). Print only the rectangle's {p['what']}."
        ),
        generate=lambda rng, p: f"{rng.randint(1, 100)} {rng.randint(1, 100)}\n",
        solve=rectangle,
    ),
]  # fmt: skip
