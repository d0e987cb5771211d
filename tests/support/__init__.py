"""Helpers the tests share (fixtures, probes, builders); this package holds no tests."""
