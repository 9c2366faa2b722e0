"""RQ: `rq worker` forks a work horse for every job (its default Worker class)."""

from __future__ import annotations

import os
import time

from redis import Redis
from rq import Queue

from bench.marks import mark
from bench.systems import SLEEP_CONCURRENCY, SLEEP_S, Adapter, tool


# The tag is the worker's pid, not the forked horse's, so warm-up can count workers.
def noop(n: int) -> None:
    mark(n, os.getppid())


def sleep(n: int) -> None:
    time.sleep(SLEEP_S)
    mark(n, os.getppid())


JOBS = {"noop": noop, "sleep": sleep}


class RQAdapter(Adapter):
    has_bulk = True  # Queue.enqueue_many: one pipeline
    settings = (
        "`rq worker` defaults (forking Worker, pickle serializer, result_ttl 500 s, log INFO); "
        "1 / 2 / 16 worker processes (RQ runs one job at a time per worker)"
    )

    def __init__(self, engine: str, url: str) -> None:
        super().__init__(engine, url)
        self.queue = Queue("default", connection=Redis.from_url(url))

    def enqueue(self, kind: str, n: int) -> None:
        self.queue.enqueue(JOBS[kind], n)

    def enqueue_bulk(self, kind: str, numbers: list[int]) -> None:
        fn = JOBS[kind]
        self.queue.enqueue_many([Queue.prepare_data(fn, (n,)) for n in numbers])

    def worker_commands(self, layout: str) -> list[list[str]]:
        return [[tool("rq"), "worker", "-u", self.url, "default"]] * self.processes(layout)

    def processes(self, layout: str) -> int:
        return {"one": 1, "two": 2}.get(layout, SLEEP_CONCURRENCY)

    def close(self) -> None:
        self.queue.connection.close()


ADAPTER = RQAdapter
