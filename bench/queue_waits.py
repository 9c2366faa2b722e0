"""How long jobs wait, on a big store: `queue_counts()` (what `tenure queues`, the dashboard's
overview, the worker's metrics and the doctor read) with the age of each queue's oldest ready
job, at 1,000,000 jobs, on one backend per run.

    .venv/bin/python -m bench.queue_waits --url sqlite:////tmp/waits.db [--jobs N] [--rounds N]
    .venv/bin/python -m bench.queue_waits --url postgresql://postgres@127.0.0.1:5432/postgres
    .venv/bin/python -m bench.queue_waits --url redis://127.0.0.1:6379/0

A bench command, not a test. It fills a store of its own (SQLite: the file given; PostgreSQL:
schema tenure_bench_waits; Redis: prefix tenure_bench_waits) through the Store API
(`enqueue_many`, in slices of 10,000) into three queues, then, on the SQL stores, ages the rows
the way a busy store looks (97% succeeded, 1% failed, 1% scheduled, 1% ready) with one UPDATE:
running a million jobs through workers only to read their counts would measure the workers. On
Redis every job stays queued, the worst case for its one lookup (the lowest score of the
queued zset). One queue is paused.

It prints the plan of the oldest-ready lookup (SQLite: EXPLAIN QUERY PLAN; PostgreSQL: EXPLAIN
ANALYZE): an index lookup, not a scan. Then it times `queue_counts()` whole (median and p95 of
--rounds calls) and, for scale, the same store's full count of queued jobs per queue by a scan
where the backend has one. The store is dropped afterwards unless --keep.

Measured at 1,000,000 jobs on the shared 2-core development machine (load from other work;
figures are medians of 20 calls, three queues, one paused):

- SQLite: the oldest-ready lookups 0.02 ms for the three queues (SEARCH ... USING COVERING
  INDEX tenure_jobs_ready); `queue_counts()` whole 139 ms, nearly all of it the existing
  count per queue and state (a scan of that covering index, see SQLiteStore.queue_counts); the
  oldest ready job found by a scan instead: 585 ms.
- PostgreSQL: the lookups 0.18 ms (Index Only Scan using tenure_jobs_ready, by ready_queue,
  0.06 ms executed); `queue_counts()` whole 2.4 ms; a scan of the queued rows: 271 ms.
- Redis (every job queued, 340,000 in the largest zset): `queue_counts()` whole 0.68 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import tenure

NAME = "tenure_bench_waits"
SLICE = 10_000
QUEUES = ("default", "mail", "reports")


def store_url(url: str) -> str:
    if url.startswith("postgres"):
        return f"{url}{'&' if '?' in url else '?'}schema={NAME}"
    if url.startswith("redis"):
        return f"{url}{'&' if '?' in url else '?'}prefix={NAME}"
    return url


def build_app(url: str) -> tenure.App:
    app = tenure.App(store_url(url))

    @app.job(name="export_row", timeout=30)
    def export_row(n: int) -> None:  # never run: the bench only needs stored jobs
        pass

    return app


def fill(app: tenure.App, jobs: int) -> None:
    have = sum(app.counts().values())
    if have >= jobs:
        print(f"reusing {have:,} jobs")
        return
    from tenure.app import new_id
    from tenure.core import payload
    from tenure.core.records import NewJob

    policy = app.jobs["export_row"].policy
    text = payload.encode("export_row", (1,), {})
    started = time.monotonic()
    n = have
    while n < jobs:
        size = min(SLICE, jobs - n)
        queue = QUEUES[(n // SLICE) % len(QUEUES)]
        app.store.enqueue_many(
            [NewJob(new_id(), "export_row", queue, text, policy) for _ in range(size)]
        )
        n += size
        if n % 100_000 == 0:
            rate = (n - have) / (time.monotonic() - started)
            print(f"  {n:,} jobs stored ({rate:,.0f}/s)", flush=True)
    age(app)


def age(app: tenure.App) -> None:
    """97% succeeded, 1% failed, 1% scheduled, 1% ready (SQL stores; Redis stays queued)."""
    if app.url.startswith("sqlite"):
        import sqlite3

        from tenure.stores.sqlite import sqlite_path

        with sqlite3.connect(sqlite_path(app.url)) as conn:
            conn.execute(
                "UPDATE tenure_jobs SET state = CASE WHEN rowid % 100 = 1 THEN 'failed'"
                " ELSE 'succeeded' END, finished_at = created_at + 1, tries_used = 1"
                " WHERE rowid % 100 NOT IN (2, 3)"
            )
            conn.execute("UPDATE tenure_jobs SET run_at = run_at + 86400 WHERE rowid % 100 = 2")
            conn.execute("ANALYZE")
    elif app.url.startswith("postgres"):
        import psycopg

        with psycopg.connect(app.url.split("?", 1)[0], autocommit=True) as conn:
            conn.execute(
                f'UPDATE "{NAME}".tenure_jobs SET state = CASE WHEN seq % 100 = 1'
                " THEN 'failed' ELSE 'succeeded' END, finished_at = created_at + 1,"
                " tries_used = 1 WHERE seq % 100 NOT IN (2, 3)"
            )
            conn.execute(
                f'UPDATE "{NAME}".tenure_jobs SET run_at = run_at + 86400 WHERE seq % 100 = 2'
            )
            conn.execute(f'VACUUM ANALYZE "{NAME}".tenure_jobs')


def plan(app: tenure.App) -> None:
    """The plan of the oldest-ready lookup the store makes per queue."""
    if app.url.startswith("sqlite"):
        import sqlite3

        from tenure.stores.sqlite import sqlite_path

        with sqlite3.connect(sqlite_path(app.url)) as conn:
            rows = conn.execute(
                "EXPLAIN QUERY PLAN SELECT run_at FROM tenure_jobs WHERE queue = ?"
                " AND state = 'queued' ORDER BY run_at LIMIT 1",
                ("default",),
            ).fetchall()
        print("plan:", "; ".join(str(r[-1]) for r in rows))
    elif app.url.startswith("postgres"):
        import psycopg

        with psycopg.connect(app.url.split("?", 1)[0], autocommit=True) as conn:
            rows = conn.execute(
                f'EXPLAIN (ANALYZE, COSTS OFF) SELECT j.run_at FROM "{NAME}".tenure_jobs j'
                " WHERE j.ready_queue = 'default' ORDER BY j.run_at LIMIT 1"
            ).fetchall()
        print("plan:\n  " + "\n  ".join(str(r[0]) for r in rows))
    else:
        print("plan: ZRANGE PREFIX:{q:QUEUE}:queued 0 0 WITHSCORES per queue (O(log n))")


def lookup(app: tenure.App) -> Callable[[], Any] | None:
    """The oldest-ready lookup alone, for every queue, as the store makes it."""
    if app.url.startswith("sqlite"):
        import sqlite3

        from tenure.stores.sqlite import sqlite_path

        conn = sqlite3.connect(sqlite_path(app.url))
        sql = (
            "SELECT run_at FROM tenure_jobs WHERE queue = ? AND state = 'queued'"
            " ORDER BY run_at LIMIT 1"
        )
        return lambda: [conn.execute(sql, (q,)).fetchone() for q in QUEUES]
    if app.url.startswith("postgres"):
        import psycopg

        pg = psycopg.connect(app.url.split("?", 1)[0], autocommit=True)
        sql = (
            f'SELECT run_at FROM "{NAME}".tenure_jobs WHERE ready_queue = %s'
            " ORDER BY run_at LIMIT 1"
        )
        return lambda: [pg.execute(sql, (q,)).fetchone() for q in QUEUES]
    return None


def scan(app: tenure.App) -> Callable[[], Any] | None:
    """For scale: the oldest ready job found by reading every queued row, no index."""
    if app.url.startswith("sqlite"):
        import sqlite3

        from tenure.stores.sqlite import sqlite_path

        conn = sqlite3.connect(sqlite_path(app.url))
        return lambda: conn.execute(
            "SELECT queue, min(run_at + 0) FROM tenure_jobs NOT INDEXED"
            " WHERE state = 'queued' GROUP BY queue"
        ).fetchall()
    if app.url.startswith("postgres"):
        import psycopg

        pg = psycopg.connect(app.url.split("?", 1)[0], autocommit=True)
        pg.execute("SET enable_indexscan = off; SET enable_bitmapscan = off")
        return lambda: pg.execute(
            f'SELECT queue, min(run_at) FROM "{NAME}".tenure_jobs'
            " WHERE state = 'queued' GROUP BY queue"
        ).fetchall()
    return None


def timed(label: str, fn: Callable[[], Any], rounds: int) -> float:
    fn()  # warm: connections, plans, scripts
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000.0)
    samples.sort()
    median = statistics.median(samples)
    p95 = samples[max(0, round(0.95 * len(samples)) - 1)]
    print(f"{label:<44} median {median:8.2f} ms   p95 {p95:8.2f} ms")
    return median


def drop(app: tenure.App) -> None:
    url = app.url
    app.close()
    if url.startswith("sqlite"):
        from tenure.stores.sqlite import sqlite_path

        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(sqlite_path(url) + suffix):
                os.remove(sqlite_path(url) + suffix)
    elif url.startswith("postgres"):
        import psycopg

        with psycopg.connect(url.split("?", 1)[0], autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{NAME}" CASCADE')
    else:
        import redis

        client = redis.Redis.from_url(url.split("?", 1)[0])
        for key in client.scan_iter(match=f"{NAME}:*", count=10_000):
            client.delete(key)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="sqlite:////tmp/tenure_bench_waits.db")
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="keep the filled store afterwards")
    args = parser.parse_args(argv)
    app = build_app(args.url)
    try:
        app.store.migrate()
        fill(app, args.jobs)
        app.pause_queue("reports")
        counts = app.counts()
        print(f"store: {app.describe_store()}: {sum(counts.values()):,} jobs {counts}")
        for w in app.queue_waits():
            print(f"  {w.queue}: ready {w.ready:,}, paused {w.paused}, oldest ready "
                  f"{w.oldest_ready_age:.1f} s" if w.oldest_ready_age is not None
                  else f"  {w.queue}: ready {w.ready:,}, paused {w.paused}")  # fmt: skip
        plan(app)
        indexed = timed("store.queue_counts() (ages included)", app.store.queue_counts, args.rounds)
        alone = lookup(app)
        if alone is not None:
            timed("the oldest-ready lookups alone (3 queues)", alone, args.rounds)
        full = scan(app)
        if full is not None:
            scanned = timed("oldest ready by a scan of queued rows", full, max(3, args.rounds // 5))
            print(f"queue_counts() whole / the scan alone: {indexed / scanned:.3f}")
    finally:
        if not args.keep:
            drop(app)
    return 0


if __name__ == "__main__":
    sys.exit(main())
