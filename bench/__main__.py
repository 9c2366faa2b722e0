"""tenure's own throughput on the embedded SQLite store: enqueue one by one and in bulk, then
drain no-op jobs with one worker process at --concurrency 1 and 2.

    .venv/bin/python -m bench [--jobs 2000] [--rounds 3]

Prints the median and min-max of each figure over the rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_round(jobs: int, workdir: Path) -> dict[str, float]:
    db = workdir / f"bench-{time.monotonic_ns()}.db"
    os.environ["TENURE_URL"] = f"sqlite:///{db}"
    import importlib

    import bench.noop_jobs as noop_jobs

    importlib.reload(noop_jobs)
    app = noop_jobs.app
    figures: dict[str, float] = {}

    start = time.perf_counter()
    for i in range(min(jobs, 1000)):
        noop_jobs.noop.dispatch(i)
    figures["enqueue one by one (jobs/s)"] = min(jobs, 1000) / (time.perf_counter() - start)

    start = time.perf_counter()
    noop_jobs.noop.dispatch_many([(i,) for i in range(jobs)])
    figures["enqueue in bulk (jobs/s)"] = jobs / (time.perf_counter() - start)

    for concurrency in (1, 2):
        total = app.counts()["queued"]
        figures[f"drain, 1 worker x {concurrency} (jobs/s)"] = drain(db, concurrency, total)
        noop_jobs.noop.dispatch_many([(i,) for i in range(jobs)])
    app.close()
    return figures


def drain(db: Path, concurrency: int, total: int) -> float:
    """Jobs per second from the first job's start to the last job's end, read from the store
    so that worker start-up (importing, forking children) is not counted."""
    env = dict(os.environ, TENURE_URL=f"sqlite:///{db}", PYTHONPATH=str(ROOT))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tenure",
            "worker",
            "--app",
            "bench.noop_jobs:app",
            "--burst",
            "--concurrency",
            str(concurrency),
            "--log-level",
            "WARNING",
        ],
        env=env,
        check=True,
        cwd=ROOT,
    )
    import sqlite3

    with sqlite3.connect(db) as conn:
        # each drain starts from an empty attempts table (cleared below)
        first, last, n = conn.execute(
            "SELECT min(started_at), max(ended_at), count(*) FROM tenure_attempts"
            " WHERE outcome = 'succeeded'"
        ).fetchone()
        conn.execute("DELETE FROM tenure_attempts")
        conn.execute("DELETE FROM tenure_jobs")
    assert n >= total, f"drained {n} of {total}"
    return float(n / (last - first))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="tenure-bench-") as tmp:
        for _ in range(args.rounds):
            rounds.append(one_round(args.jobs, Path(tmp)))
    print(f"tenure on SQLite, {args.jobs} no-op jobs, {args.rounds} rounds (median, min-max)")
    for name in rounds[0]:
        values = [r[name] for r in rounds]
        print(f"  {name:34} {statistics.median(values):9.0f}   {min(values):.0f}-{max(values):.0f}")


if __name__ == "__main__":
    main()
