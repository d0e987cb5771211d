"""codeloop's maintained benchmarks (bench/README.md): run one as `python -m bench.NAME`
from the repository's root, or the quick form of every one as `python -m bench`
(`make bench`). Finished one-time experiments are in `bench/experiments/`."""
