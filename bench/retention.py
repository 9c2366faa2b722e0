"""Retention under load: jobs pushed through a store at a steady rate while the workers' own
sweep prunes them, with retention on and with it off, on each engine.

    .venv/bin/python -m bench retention [--engines sqlite,postgres,redis] [--jobs N]
        [--rate JOBS_PER_S] [--keep S] [--sample S]

For each engine and each mode (retention on: keep_succeeded=--keep seconds; off: None), one
producer thread dispatches `--jobs` jobs at `--rate` per second (slices every 50 ms), one
consumer drains them as fast as the store lets it through the worker's hot path (reserve,
then complete_and_reserve), and a sweeper calls the worker's own `Sweeper.tick()` on the
worker's rescue cadence (every 5 s, a 30 s lease). Every `--sample` seconds it records the
store's size: the SQLite file after a TRUNCATE checkpoint, the PostgreSQL schema's relation
sizes (pg_total_relation_size, indexes and TOAST included), Redis `used_memory`. Deleted
PostgreSQL rows become reusable space only once vacuumed: on a server with autovacuum off
(a test server), --vacuum S runs a plain VACUUM every S seconds in both modes.

It reports the size over time (flat after the first retention window when pruning keeps up),
the consumer's drain throughput (jobs per second of time spent in store calls: the capacity
left beside the producer) with retention on against off (goal: less than 10% lower), and
the worst and 99th-percentile latency of a reservation call while pruning ran (SQLite has one
writer: a prune chunk must not hold it long). The default size is 1,000,000 jobs at 1,000/s;
on a shared machine run it small (--jobs 20000 --rate 500 --keep 5) and say so.
Results: bench/results/retention.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import tenure
from tenure.stores.base import WorkerRef
from tenure.worker.leases import Sweeper

from bench import engines

BENCH = Path(__file__).resolve().parent
SCHEMA = "tenure_bench_retention"
PREFIX = "tenure_bench_retention"
WORKER = WorkerRef(id="bench-retention", host="bench", pid=os.getpid())
SWEEP_EVERY_S = 5.0  # the worker's rescue tick at its default 30 s lease
LEASE_S = 30.0
POSTGRES_URL = os.environ.get(
    "BENCH_RETENTION_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def store_url(engine: str, workdir: Path) -> str:
    # a schema and a key prefix of its own: other benchmarks on the same servers are untouched
    if engine == "sqlite":
        return f"sqlite:///{workdir / 'retention.db'}"
    if engine == "postgres":
        return f"{POSTGRES_URL}?schema={SCHEMA}"
    sep = "&" if "?" in engines.REDIS_URL else "?"
    return f"{engines.REDIS_URL}{sep}prefix={PREFIX}"


def reset(engine: str, workdir: Path) -> None:
    if engine == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            Path(str(workdir / "retention.db") + suffix).unlink(missing_ok=True)
    elif engine == "postgres":
        import psycopg

        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{SCHEMA}" CASCADE')
    else:
        import redis

        with redis.Redis.from_url(engines.REDIS_URL) as client:
            for key in client.scan_iter(match=f"{PREFIX}:*", count=1000):
                client.delete(key)


def store_size(app: tenure.App, engine: str) -> int:
    store: Any = app.store
    if engine == "sqlite":
        conn = store._conn()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return os.path.getsize(store.path)
    if engine == "postgres":
        with store.db.transaction() as cur:
            row = cur.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS n FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
                (SCHEMA,),
            ).fetchone()
        return int(row["n"])
    return int(store._redis.info("memory")["used_memory"])


def vacuum() -> None:
    """A plain VACUUM (not FULL) of the schema's tables: dead rows become reusable space."""
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (SCHEMA,)
        ).fetchall()
        for (table,) in tables:
            conn.execute(f'VACUUM "{SCHEMA}"."{table}"')


def autovacuum() -> str:
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        return str(conn.execute("SHOW autovacuum").fetchone()[0])


def run_mode(engine: str, keep: float | None, args: argparse.Namespace, workdir: Path) -> Any:
    url = store_url(engine, workdir)
    reset(engine, workdir)
    app = tenure.App(url, keep_succeeded=keep, keep_failed=keep)

    @app.job(name="noop")
    def noop(n: int) -> None: ...

    app.migrate()
    done = threading.Event()
    produced = 0
    consumed = 0
    busy = 0.0
    reserve_ms: list[float] = []
    sizes: list[tuple[float, int, int]] = []  # (seconds, bytes, jobs stored)

    def produce() -> None:
        nonlocal produced
        step = 0.05
        per_step = max(1, round(args.rate * step))
        start = time.monotonic()
        while produced < args.jobs:
            n = min(per_step, args.jobs - produced)
            noop.dispatch_many([(produced + i,) for i in range(n)])
            produced += n
            delay = start + (produced / args.rate) - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    def consume() -> None:
        nonlocal consumed, busy
        own = tenure.App(url, keep_succeeded=keep, keep_failed=keep).store
        held = None
        while consumed < args.jobs:
            t0 = time.perf_counter()
            if held is None:
                got = own.reserve(queues=["default"], worker=WORKER, lease=LEASE_S, limit=1)
                held = got[0] if got else None
            else:
                _, held = own.complete_and_reserve(
                    job_id=held.job_id,
                    token=held.token,
                    queues=["default"],
                    worker=WORKER,
                    lease=LEASE_S,
                )
                consumed += 1
            spent = time.perf_counter() - t0
            reserve_ms.append(spent * 1000)
            if held is None:
                own.wait_for_work(queues=["default"], timeout=0.05)
            else:
                busy += spent
        own.close()

    def sweep() -> None:
        sweeper = Sweeper(tenure.App(url).store)
        while not done.wait(SWEEP_EVERY_S):
            sweeper.tick()

    def sample() -> None:
        start = time.monotonic()
        vacuumed = start
        sampler = tenure.App(url)
        while not done.wait(args.sample):
            if engine == "postgres" and args.vacuum and time.monotonic() - vacuumed >= args.vacuum:
                vacuum()  # what autovacuum does on a server where it is on
                vacuumed = time.monotonic()
            stored = sum(sampler.counts().values())
            sizes.append((time.monotonic() - start, store_size(sampler, engine), stored))
        sampler.close()

    threads = [threading.Thread(target=f, daemon=True) for f in (produce, consume)]
    helpers = [threading.Thread(target=f, daemon=True) for f in (sweep, sample)]
    started = time.monotonic()
    for t in (*threads, *helpers):
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    done.set()
    for t in helpers:
        t.join(timeout=60)
    final = store_size(app, engine)
    app.close()
    ordered = sorted(reserve_ms)
    return {
        "keep_s": keep,
        "jobs": args.jobs,
        "elapsed_s": round(elapsed, 2),
        "drain_jobs_per_busy_s": round(consumed / busy, 1) if busy else None,
        "reserve_ms_p99": round(ordered[int(len(ordered) * 0.99)], 2) if ordered else None,
        "reserve_ms_max": round(ordered[-1], 2) if ordered else None,
        "reserve_ms_median": round(statistics.median(ordered), 3) if ordered else None,
        "sizes": [(round(t, 1), b, n) for t, b, n in sizes],
        "final_bytes": final,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench retention",
        description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("--engines", default="sqlite,postgres,redis")
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--rate", type=float, default=1000.0, help="jobs dispatched per second")
    parser.add_argument("--keep", type=float, default=60.0, help="keep_succeeded, seconds")
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between size samples")
    parser.add_argument(
        "--vacuum",
        type=float,
        default=0.0,
        help="PostgreSQL: VACUUM the schema every S seconds, for a server with autovacuum off",
    )
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"args": vars(args), "engines": {}}
    if "postgres" in args.engines:
        results["postgres_autovacuum"] = autovacuum()
        print(f"PostgreSQL autovacuum={results['postgres_autovacuum']}, --vacuum {args.vacuum}")
    with tempfile.TemporaryDirectory(prefix="tenure-bench-retention-") as tmp:
        for engine in args.engines.split(","):
            on = run_mode(engine, args.keep, args, Path(tmp))
            off = run_mode(engine, None, args, Path(tmp))
            drop = None
            if on["drain_jobs_per_busy_s"] and off["drain_jobs_per_busy_s"]:
                drop = 1 - on["drain_jobs_per_busy_s"] / off["drain_jobs_per_busy_s"]
            results["engines"][engine] = {"on": on, "off": off, "drain_drop": drop}
            print_engine(engine, on, off, drop)
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / "retention.json").write_text(json.dumps(results, indent=2))
    print(f"results: {out / 'retention.json'}")
    return 0


def print_engine(engine: str, on: Any, off: Any, drop: float | None) -> None:
    print(f"\n== {engine}: {on['jobs']:,} jobs, keep_succeeded={on['keep_s']} s vs forever")
    print("   t (s)   size on (KiB)  stored on | size off (KiB)  stored off")
    for a, b in zip(on["sizes"], off["sizes"], strict=False):
        print(f"  {a[0]:6.0f}  {a[1] / 1024:13,.0f}  {a[2]:9,} | {b[1] / 1024:14,.0f}  {b[2]:10,}")
    for name, r in (("on", on), ("off", off)):
        print(
            f"  retention {name:3}: drain {r['drain_jobs_per_busy_s']} jobs/busy s, reserve "
            f"median {r['reserve_ms_median']} ms p99 {r['reserve_ms_p99']} ms max "
            f"{r['reserve_ms_max']} ms, final size {r['final_bytes'] / 1024:,.0f} KiB"
        )
    if drop is not None:
        print(f"  drain throughput with retention on: {-drop:+.1%} against off")
