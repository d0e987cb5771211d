"""Type-strict plain values over JSON lines (runs inside the sandbox, Python 3 stdlib).

JSON's own types carry None, bool, int, float and str; a JSON object is always a tag:
{"t": [...]} tuple, {"d": [[k, v], ...]} dict, {"s": [...]} set, {"fs": [...]}
frozenset, {"y": "hex"} bytes, {"c": [re, im]} complex. Types are matched exactly, so a
subclass (an int whose `__eq__` is always true) cannot be encoded, and decoding builds
only built-in values.

One exception, for what SandboxFusion passes (it runs test and solution in one process):
a numpy scalar (`np.sum(xs)`, an instance of `numpy.generic`) is sent as the built-in
its `.item()` gives, itself encoded as strictly. A solution that forges such a class
gains nothing: what crosses is still only a built-in value, as if it had returned that.
numpy arrays are not converted (compared with `==` in one process they are no bool
either).
"""

import json

LIMIT = 64 << 20
"""Largest encoded message in bytes."""


def encode(value):
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return value
    if kind is list:
        return [encode(item) for item in value]
    if kind is tuple:
        return {"t": [encode(item) for item in value]}
    if kind is dict:
        return {"d": [[encode(k), encode(v)] for k, v in value.items()]}
    if kind is set:
        return {"s": [encode(item) for item in value]}
    if kind is frozenset:
        return {"fs": [encode(item) for item in value]}
    if kind is bytes:
        return {"y": value.hex()}
    if kind is complex:
        return {"c": [value.real, value.imag]}
    if _numpy_scalar(kind):
        return encode(value.item())
    raise TypeError("cannot pass a value of type " + kind.__name__ + " between processes")


def _numpy_scalar(kind):
    """Whether `kind` is a numpy scalar type (numpy is never imported here)."""
    return any(base.__name__ == "generic" and base.__module__ == "numpy" for base in kind.__mro__)


def decode(data):
    kind = type(data)
    if data is None or kind in (bool, int, float, str):
        return data
    if kind is list:
        return [decode(item) for item in data]
    if kind is dict and len(data) == 1:
        ((tag, body),) = data.items()
        if tag == "t" and type(body) is list:
            return tuple(decode(item) for item in body)
        if tag == "d" and type(body) is list:
            out = {}
            for pair in body:
                if type(pair) is not list or len(pair) != 2:
                    raise ValueError("malformed dict entry")
                out[decode(pair[0])] = decode(pair[1])
            return out
        if tag == "s" and type(body) is list:
            return {decode(item) for item in body}
        if tag == "fs" and type(body) is list:
            return frozenset(decode(item) for item in body)
        if tag == "y" and type(body) is str:
            return bytes.fromhex(body)
        if tag == "c" and type(body) is list and len(body) == 2:
            real, imag = body
            if type(real) is float and type(imag) is float:
                return complex(real, imag)
    raise ValueError("malformed value")


def write(stream, message):
    stream.write(json.dumps(message, allow_nan=True).encode() + b"\n")
    stream.flush()


def read(stream):
    """The next message, or None at end of stream; ValueError if malformed or too big."""
    line = stream.readline(LIMIT + 1)
    if not line:
        return None
    if len(line) > LIMIT or not line.endswith(b"\n"):
        raise ValueError("message too large or cut off")
    return json.loads(line)
