"""tenure with sync jobs: each attempt runs in one of the worker's child processes."""

from __future__ import annotations

import os
import sys
import time

import tenure

from bench.marks import mark
from bench.systems import SLEEP_CONCURRENCY, SLEEP_S, Adapter

app = tenure.App(os.environ.get("BENCH_URL"))


@app.job  # tenure's defaults: timeout 60 s, tries 3, exponential backoff, lease 30 s
def noop(n: int) -> None:
    mark(n)


@app.job
def sleep(n: int) -> None:
    time.sleep(SLEEP_S)
    mark(n)


JOBS = {"noop": noop, "sleep": sleep}

# "two": one worker with --concurrency 2 (two child processes, like Celery's prefork pool), or
# two worker processes; BENCH_TENURE_TWO=workers picks the latter.
TWO_AS_WORKERS = os.environ.get("BENCH_TENURE_TWO", "concurrency") == "workers"


class TenureAdapter(Adapter):
    has_bulk = True
    settings = (
        "`tenure worker` defaults (lease 30 s renewed every 10 s, grace 8 s, log level INFO); "
        "`@app.job` defaults (timeout 60 s, tries 3); `--concurrency` 1 / 2 / 16 child processes"
    )
    app_spec = "bench.systems.tenure_sys:app"

    def __init__(self, engine: str, url: str) -> None:
        super().__init__(engine, url)
        self.app = app

    def prepare(self) -> None:
        self.app.store.migrate()

    def enqueue(self, kind: str, n: int) -> None:
        JOBS[kind].dispatch(n)

    def enqueue_bulk(self, kind: str, numbers: list[int]) -> None:
        JOBS[kind].dispatch_many([(n,) for n in numbers])

    def _command(self, concurrency: int) -> list[str]:
        return [
            sys.executable,
            "-m",
            "tenure",
            "worker",
            "--app",
            self.app_spec,
            "--concurrency",
            str(concurrency),
        ]

    def worker_commands(self, layout: str) -> list[list[str]]:
        if layout == "one":
            return [self._command(1)]
        if layout == "two":
            return [self._command(1)] * 2 if TWO_AS_WORKERS else [self._command(2)]
        return [self._command(SLEEP_CONCURRENCY)]

    def processes(self, layout: str) -> int:
        return {"one": 1, "two": 2, "sleep": SLEEP_CONCURRENCY}[layout]

    def explain_reserve(self) -> str | None:
        from bench.pg_plans import generic_plan

        return generic_plan(self.app.store)

    def close(self) -> None:
        self.app.close()


ADAPTER = TenureAdapter
