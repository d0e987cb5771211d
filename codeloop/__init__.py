"""codeloop: make a code model better using only answers it wrote itself that passed real tests."""

import os

__version__ = "0.1.0"

# A resumed round must train to the same weights as an uninterrupted one (the chaos
# test compares the adapters' sha256). Intel MKL, which torch's CPU matmuls use, may
# pick code paths by the memory alignment of its inputs and adjust its thread count
# at run time, so two processes with other allocation histories (a fresh one and one
# that resumed from a checkpoint) can round differently. Its conditional numerical
# reproducibility mode and fixed thread counts make results bitwise repeatable on one
# machine. Set before torch loads MKL; a user's own settings win.
for _name, _value in (("MKL_CBWR", "AUTO"), ("MKL_DYNAMIC", "FALSE"), ("OMP_DYNAMIC", "FALSE")):
    os.environ.setdefault(_name, _value)
