"""codeloop: make a code model better using only answers it wrote itself that passed real tests."""

__version__ = "0.1.0"
