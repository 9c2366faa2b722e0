"""Dramatiq with its Redis broker."""

from __future__ import annotations

import sys
import time

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from bench.marks import mark
from bench.systems import SLEEP_CONCURRENCY, SLEEP_S, Adapter, url

dramatiq.set_broker(RedisBroker(url=url()))


@dramatiq.actor
def noop(n: int) -> None:
    mark(n)


@dramatiq.actor
def sleep(n: int) -> None:
    time.sleep(SLEEP_S)
    mark(n)


JOBS = {"noop": noop, "sleep": sleep}


class DramatiqAdapter(Adapter):
    has_bulk = False
    settings = (
        "`dramatiq` CLI defaults (8 threads per process, default middleware: retries, time "
        "limit, age limit...); `--processes 1` / `--processes 2` / `--processes 1 --threads 16`"
    )

    def enqueue(self, kind: str, n: int) -> None:
        JOBS[kind].send(n)

    def worker_commands(self, layout: str) -> list[list[str]]:
        flags = {"one": ["--processes", "1"], "two": ["--processes", "2"]}.get(
            layout, ["--processes", "1", "--threads", str(SLEEP_CONCURRENCY)]
        )
        return [[sys.executable, "-m", "dramatiq", "bench.systems.dramatiq_sys", *flags]]

    def processes(self, layout: str) -> int:
        return 2 if layout == "two" else 1


ADAPTER = DramatiqAdapter
