"""arq: asyncio-only, so its jobs are coroutines and the enqueue loop awaits one at a time."""

from __future__ import annotations

import asyncio
import os
import time

from arq import create_pool
from arq.connections import RedisSettings

from bench.marks import mark
from bench.systems import SLEEP_CONCURRENCY, SLEEP_S, Adapter, tool, url


async def noop(ctx: dict[str, object], n: int) -> None:
    mark(n)


async def sleep(ctx: dict[str, object], n: int) -> None:
    await asyncio.sleep(SLEEP_S)
    mark(n)


class WorkerSettings:
    functions = [noop, sleep]
    redis_settings = RedisSettings.from_dsn(url())
    # arq's default max_jobs is 10; the I/O-bound layout asks for 16.
    max_jobs = int(os.environ.get("BENCH_ARQ_MAX_JOBS", "10"))


class ArqAdapter(Adapter):
    has_bulk = False
    settings = (
        "`arq` worker defaults (max_jobs 10, poll_delay 0.5 s, keep_result 3600 s); "
        "1 / 2 worker processes; max_jobs 16 for the I/O-bound workload"
    )

    def __init__(self, engine: str, url: str) -> None:
        super().__init__(engine, url)
        self.loop = asyncio.new_event_loop()
        self.pool = self.loop.run_until_complete(create_pool(RedisSettings.from_dsn(url)))

    def enqueue(self, kind: str, n: int) -> None:
        self.loop.run_until_complete(self.pool.enqueue_job(kind, n))

    def enqueue_loop(self, kind: str, numbers: range, deadline: float) -> int:
        async def run() -> int:
            done = 0
            for n in numbers:
                await self.pool.enqueue_job(kind, n)
                done += 1
                if done % 64 == 0 and time.monotonic() >= deadline:
                    break
            return done

        return self.loop.run_until_complete(run())

    def worker_commands(self, layout: str) -> list[list[str]]:
        count = 2 if layout == "two" else 1
        return [[tool("arq"), "bench.systems.arq_sys.WorkerSettings"]] * count

    def worker_env(self, layout: str) -> dict[str, str]:
        return {"BENCH_ARQ_MAX_JOBS": str(SLEEP_CONCURRENCY)} if layout == "sleep" else {}

    def processes(self, layout: str) -> int:
        return 2 if layout == "two" else 1

    def close(self) -> None:
        self.loop.run_until_complete(self.pool.aclose())
        self.loop.close()


ADAPTER = ArqAdapter
