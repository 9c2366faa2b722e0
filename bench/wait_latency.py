"""How soon `JobHandle.wait()` returns after the success is recorded (issue 19: within 50 ms
on PostgreSQL and Redis), measured on each engine's own wake-up.

    .venv/bin/python -m bench.wait_latency [--samples 200] [--engines postgres,redis,sqlite]

Per sample: a job is dispatched, a waiter (its own App and store connections, in a thread that
sleeps in the store's wake-up: LISTEN, a blocking pop, SQLite's data_version) calls wait(); once
the waiter is asleep and after a random 5-20 ms, the main thread records the success with the
worker's own verb (end_attempt, with a result). The latency is from that call's
return to wait()'s return, both read on this machine's monotonic clock.
"""

from __future__ import annotations

import argparse
import random
import secrets
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tenure
from tenure.core.records import Ending, WorkerRef

from bench.engines import POSTGRES_URL, REDIS_URL

WORKER = WorkerRef(id="bench-wait", host="bench", pid=0)


def urls(workdir: Path) -> dict[str, str]:
    tag = f"tenure_wait_{secrets.token_hex(4)}"
    return {
        "postgres": f"{POSTGRES_URL}?schema={tag}",
        "redis": f"{REDIS_URL}?prefix={tag}",
        "sqlite": f"sqlite:///{workdir / 'wait.db'}",
    }


def sample(app: tenure.App, waiter: tenure.App, asleep: Callable[[], int]) -> float:
    handle = app.jobs["total"].dispatch(1)
    waiting = tenure.JobHandle(handle.id, handle.name, waiter)
    woke: list[float] = []
    calls = asleep()

    def wait() -> None:
        assert waiting.wait(timeout=30) == 10
        woke.append(time.monotonic())

    thread = threading.Thread(target=wait)
    thread.start()
    deadline = time.monotonic() + 10
    while asleep() < calls + 2 and time.monotonic() < deadline:  # registered, then asleep
        time.sleep(0.001)
    time.sleep(random.uniform(0.005, 0.02))
    (held,) = app.store.reserve(queues=["default"], worker=WORKER, lease=30)
    ended, _ = app.store.end_attempt(Ending(job_id=held.job_id, token=held.token, result="10"))
    recorded = time.monotonic()
    assert ended.accepted
    thread.join(30)
    return woke[0] - recorded


def measure(url: str, samples: int) -> list[float]:
    app = tenure.App(url)
    waiter = tenure.App(url)

    @app.job(name="total")
    def total(n: int) -> int:
        return n * 10

    waiter.jobs = app.jobs
    app.migrate()
    calls = [0]
    real = waiter.store.wait_for_work

    def counted(**kwargs: Any) -> None:
        calls[0] += 1
        real(**kwargs)

    waiter.store.wait_for_work = counted  # type: ignore[method-assign]
    try:
        for _ in range(3):  # warm: connections, LISTEN, scripts loaded
            sample(app, waiter, lambda: calls[0])
        return [sample(app, waiter, lambda: calls[0]) for _ in range(samples)]
    finally:
        drop(url)
        waiter.close()
        app.close()


def drop(url: str) -> None:
    """Remove what the run left in the shared servers."""
    if url.startswith("postgresql"):
        import psycopg

        schema = url.rsplit("schema=", 1)[1]
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    elif url.startswith("redis"):
        import redis

        prefix = url.rsplit("prefix=", 1)[1]
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--engines", default="postgres,redis")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tenure-wait-") as tmp:
        where = urls(Path(tmp))
        for engine in args.engines.split(","):
            ms = sorted(x * 1000 for x in measure(where[engine], args.samples))
            p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
            print(
                f"{engine:9} wait() woke after the success: p50 {statistics.median(ms):.2f} ms,"
                f" p95 {p95:.2f} ms, max {ms[-1]:.2f} ms ({len(ms)} samples)"
            )


if __name__ == "__main__":
    main()
