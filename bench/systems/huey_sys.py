"""Huey: SqliteHuey on SQLite, RedisHuey on Redis."""

from __future__ import annotations

import time

from huey import RedisHuey, SqliteHuey

from bench.marks import mark
from bench.systems import SLEEP_CONCURRENCY, SLEEP_S, Adapter, engine, tool, url

# Huey's defaults: results stored, one consumer; RedisHuey blocks on BRPOP (blocking=True),
# SqliteHuey polls (consumer -d 0.1 s, backing off x1.15 up to -m 10 s).
huey = (
    SqliteHuey("bench", filename=url()) if engine() == "sqlite" else RedisHuey("bench", url=url())
)


@huey.task()
def noop(n: int) -> None:
    mark(n)


@huey.task()
def sleep(n: int) -> None:
    time.sleep(SLEEP_S)
    mark(n)


JOBS = {"noop": noop, "sleep": sleep}


class HueyAdapter(Adapter):
    has_bulk = False  # task.map() enqueues one by one
    settings = (
        "`huey_consumer` defaults (thread workers, polling -d 0.1/-b 1.15/-m 10, scheduler 1 s), "
        "results on; `-w 1` / `-w 2 -k process` / `-w 16 -k thread`"
    )

    def enqueue(self, kind: str, n: int) -> None:
        JOBS[kind](n)

    def worker_commands(self, layout: str) -> list[list[str]]:
        flags = {"one": [], "two": ["-w", "2", "-k", "process"]}.get(
            layout, ["-w", str(SLEEP_CONCURRENCY), "-k", "thread"]
        )
        return [[tool("huey_consumer"), "bench.systems.huey_sys.huey", *flags]]

    def processes(self, layout: str) -> int:
        return 2 if layout == "two" else 1


ADAPTER = HueyAdapter
