"""codeloop: make a code model better using only answers it wrote itself that passed real tests.

Importing it changes nothing in the calling process: the math library settings that
make training reproducible are set by the entry points that train
(`codeloop.train.determinism`).
"""

__version__ = "0.1.0"
