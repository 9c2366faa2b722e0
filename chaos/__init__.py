"""tenure's chaos and bad-input suite: real workers, real faults, an independent ledger.

`python -m chaos run ...` runs scenarios against a backend and writes their results;
`python -m chaos report` turns the results into chaos/REPORT.md. The bounded pytest form lives
in tests/chaos/.
"""
