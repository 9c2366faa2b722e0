"""Celery with the Redis broker (kombu's Redis transport), no result backend (the default)."""

from __future__ import annotations

import sys
import time

from celery import Celery

from bench.marks import mark
from bench.systems import SLEEP_CONCURRENCY, SLEEP_S, Adapter, url

app = Celery("bench", broker=url())
# Only silences a start-up deprecation warning; it keeps Celery's documented behaviour.
app.conf.broker_connection_retry_on_startup = True


@app.task
def noop(n: int) -> None:
    mark(n)


@app.task
def sleep(n: int) -> None:
    time.sleep(SLEEP_S)
    mark(n)


JOBS = {"noop": noop, "sleep": sleep}


class CeleryAdapter(Adapter):
    has_bulk = False  # group() still publishes one message per task
    settings = (
        "`celery worker` defaults (prefork pool, prefetch multiplier 4, acks early, no result "
        "backend, log WARNING); `--concurrency` 1 / 2 / 16"
    )

    def enqueue(self, kind: str, n: int) -> None:
        JOBS[kind].delay(n)

    def worker_commands(self, layout: str) -> list[list[str]]:
        concurrency = self.processes(layout)
        return [
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "bench.systems.celery_sys",
                "worker",
                "--concurrency",
                str(concurrency),
            ]
        ]

    def processes(self, layout: str) -> int:
        return {"one": 1, "two": 2}.get(layout, SLEEP_CONCURRENCY)


ADAPTER = CeleryAdapter
