"""Benchmarks: run with `python -m bench`. Timings live here, never in tests."""
