"""Finished one-time experiments (bench/experiments/README.md: the claim each produced).
Kept runnable as `python -m bench.experiments.NAME`; not maintained and not run by `make bench`."""
