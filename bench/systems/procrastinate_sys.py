"""Procrastinate on PostgreSQL: sync defer from the client, jobs on the worker's event loop."""

from __future__ import annotations

import asyncio

from procrastinate import App, PsycopgConnector

from bench.marks import mark
from bench.systems import SLEEP_CONCURRENCY, SLEEP_S, Adapter, tool, url

app = App(connector=PsycopgConnector(conninfo=url()))


@app.task(name="noop")
def noop(n: int) -> None:
    mark(n)


@app.task(name="sleep")
async def sleep(n: int) -> None:
    await asyncio.sleep(SLEEP_S)
    mark(n)


JOBS = {"noop": noop, "sleep": sleep}


class ProcrastinateAdapter(Adapter):
    has_bulk = True  # Task.batch_defer: one INSERT
    settings = (
        "`procrastinate worker` defaults (concurrency 1, LISTEN/NOTIFY on, polling 5 s, jobs "
        "kept); 1 / 2 worker processes; `--concurrency 16` with an async task for the "
        "I/O-bound workload"
    )

    def __init__(self, engine: str, url: str) -> None:
        super().__init__(engine, url)
        app.open()

    def prepare(self) -> None:
        app.schema_manager.apply_schema()

    def enqueue(self, kind: str, n: int) -> None:
        JOBS[kind].defer(n=n)

    def enqueue_bulk(self, kind: str, numbers: list[int]) -> None:
        JOBS[kind].batch_defer(*({"n": n} for n in numbers))

    def worker_commands(self, layout: str) -> list[list[str]]:
        command = [tool("procrastinate"), "--app", "bench.systems.procrastinate_sys.app", "worker"]
        if layout == "sleep":
            return [[*command, "--concurrency", str(SLEEP_CONCURRENCY)]]
        return [command] * (2 if layout == "two" else 1)

    def processes(self, layout: str) -> int:
        return 2 if layout == "two" else 1

    def close(self) -> None:
        app.close()


ADAPTER = ProcrastinateAdapter
