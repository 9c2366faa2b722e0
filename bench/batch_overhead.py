"""Batch bookkeeping overhead (issue 4): 10,000 jobs as one batch vs 10,000 plain jobs, same
store, same worker, interleaved A B A B so machine drift cancels.

    .venv/bin/python -m bench.batch_overhead [--jobs 10000] [--rounds 3] [--url sqlite:///...]

Throughput is counted from the first attempt's start to the last attempt's end, read from the
store's own attempt rows, so worker start-up is not counted. The batch is planned by
coordinators (batch_over_ids, chunk=1), as users run big work.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

JOBS_MODULE = textwrap.dedent(
    """
    import tenure

    app = tenure.App()

    @app.job(timeout=30)
    def noop(lo: int, hi: int) -> None:
        pass
    """
)


def run_worker(workdir: Path, url: str) -> None:
    env = dict(os.environ, TENURE_URL=url, PYTHONPATH=f"{workdir}{os.pathsep}{ROOT / 'src'}")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tenure",
            "worker",
            "--app",
            "overhead_jobs:app",
            "--burst",
            "--concurrency",
            "2",
            "--log-level",
            "WARNING",
        ],
        env=env,
        cwd=workdir,
        check=True,
    )


def throughput(app: object, names: set[str]) -> float:
    from tenure.app import App

    assert isinstance(app, App)
    spans = []
    for job in app.store.list_jobs(limit=10_000_000):
        if job.name in names:
            info = app.get_job(job.id)
            spans += [(a.started_at, a.ended_at) for a in info.attempts if a.ended_at]
    first = min(s for s, _ in spans)
    last = max(e for _, e in spans if e is not None)
    return len(spans) / (last - first)


def one_round(workdir: Path, jobs: int, kind: str) -> float:
    url = f"sqlite:///{workdir / f'{kind}-{os.getpid()}-{len(os.listdir(workdir))}.db'}"
    os.environ["TENURE_URL"] = url
    import importlib

    sys.path.insert(0, str(workdir))
    module = importlib.import_module("overhead_jobs")
    module = importlib.reload(module)
    app = module.app
    if kind == "plain":
        module.noop.dispatch_many([(i, i) for i in range(jobs)])
        names = {"noop"}
    else:
        app.batch_over_ids(module.noop, 1, jobs, chunk=1, slice_jobs=500)
        names = {"noop", "tenure.coordinate"}
    run_worker(workdir, url)
    if kind == "batch":
        batch = app.store.list_batches(limit=1)[0]
        assert batch.state == "succeeded" and batch.done == batch.total, batch
    rate = throughput(app, names)
    app.close()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {"plain": [], "batch": []}
    with tempfile.TemporaryDirectory(prefix="tenure-overhead-") as tmp:
        workdir = Path(tmp)
        (workdir / "overhead_jobs.py").write_text(JOBS_MODULE)
        for _ in range(args.rounds):
            for kind in ("plain", "batch"):  # interleaved: A B A B
                rates[kind].append(one_round(workdir, args.jobs, kind))
    plain, batch = statistics.median(rates["plain"]), statistics.median(rates["batch"])
    print(f"SQLite, {args.jobs:,} jobs, 1 worker x 2, {args.rounds} rounds (median, min-max):")
    for kind, values in rates.items():
        print(
            f"  {kind:6} {statistics.median(values):8.0f} jobs/s   "
            f"{min(values):.0f}-{max(values):.0f}"
        )
    print(f"  batch / plain = {batch / plain:.2f}")


if __name__ == "__main__":
    main()
