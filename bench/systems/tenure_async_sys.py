"""tenure with async jobs: attempts run on the worker's own event loop, no child processes.
Used for the I/O-bound workload, where the executor model matters."""

from __future__ import annotations

import asyncio
import os

import tenure

from bench.marks import mark
from bench.systems import SLEEP_S
from bench.systems.tenure_sys import TWO_AS_WORKERS, TenureAdapter

app = tenure.App(os.environ.get("BENCH_URL"))


@app.job
async def noop(n: int) -> None:
    mark(n)


@app.job
async def sleep(n: int) -> None:
    await asyncio.sleep(SLEEP_S)
    mark(n)


JOBS = {"noop": noop, "sleep": sleep}


class TenureAsyncAdapter(TenureAdapter):
    settings = "as tenure, with `async def` jobs (run on the worker's event loop, no children)"
    app_spec = "bench.systems.tenure_async_sys:app"

    def __init__(self, engine: str, url: str) -> None:
        super().__init__(engine, url)
        self.app = app

    def enqueue(self, kind: str, n: int) -> None:
        JOBS[kind].dispatch(n)

    def enqueue_bulk(self, kind: str, numbers: list[int]) -> None:
        JOBS[kind].dispatch_many([(n,) for n in numbers])

    def processes(self, layout: str) -> int:
        return 2 if layout == "two" and TWO_AS_WORKERS else 1


ADAPTER = TenureAsyncAdapter
