"""A Redis listing's cost when its jobs carry long histories (layout 4 keeps a job's ended
attempts, tracebacks too, in the job's own hash):

    .venv/bin/python -m bench.redis_listing [--url URL] [--jobs N] [--tries T] [--list L]
        [--traceback-kb K] [--rounds R]

Fills a store under a prefix of its own (default: the local Redis, db 0, prefix
`bench-listing-<random>`) with N jobs that each fail T times (every attempt with a traceback
of about K KB), then lists the newest L failed jobs R times (`list_jobs(state="failed")`,
what `tenure jobs --state failed` and the dashboard's failed list ask) and prints the
median and best time of a listing, the client's CPU time for it (the steadier figure on a
loaded machine) and the bytes the client read from the socket for one.
Deletes its own keys at the end (SCAN of its prefix, never FLUSHDB). To compare two trees, run
it with each tree's src first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import time
from typing import Any

import redis

from tenure.core.records import Ending, NewJob, WorkerRef
from tenure.core.retry import Policy
from tenure.stores.redis.store import RedisStore

WORKER = WorkerRef(id="bench-listing", host="bench", pid=1)
PAYLOAD = '{"args":[12345],"kwargs":{"customer":"c-000042","notify":true}}'


class _CountingSocket:
    """A socket that counts the bytes received through it (redis-py's parsers read with
    recv_into or recv); everything else is the socket's own."""

    def __init__(self, sock: Any, meter: list[int]) -> None:
        self._sock = sock
        self._meter = meter

    def recv(self, *args: Any) -> bytes:
        data: bytes = self._sock.recv(*args)
        self._meter[0] += len(data)
        return data

    def recv_into(self, *args: Any) -> int:
        n: int = self._sock.recv_into(*args)
        self._meter[0] += n
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def count_reads(store: RedisStore) -> list[int]:
    """Bytes the store's client reads from now on (a one-item list, as a counter cell): its
    pool's connections are made anew, each around a counting socket."""
    meter = [0]
    pool = store.db.client.connection_pool

    class Counting(pool.connection_class):  # type: ignore[misc, name-defined]
        def _connect(self) -> Any:
            return _CountingSocket(super()._connect(), meter)

    pool.disconnect()
    pool.connection_class = Counting
    pool.reset()  # the pool's connections, made of the old class, go
    return meter


def fill(store: RedisStore, jobs: int, tries: int, traceback: str) -> None:
    policy = Policy(tries=tries, backoff=0)
    for start in range(0, jobs, 500):
        store.enqueue_many(
            [
                NewJob(id=secrets.token_hex(8), name="send_invoice", queue="bench",
                       payload=PAYLOAD, policy=policy)
                for _ in range(min(500, jobs - start))
            ]
        )  # fmt: skip
    while True:
        got = store.reserve(queues=["bench"], worker=WORKER, lease=300, limit=200)
        if not got:
            return
        for r in got:
            error = f"ValueError: invoice {r.job_id} has no lines (try {r.attempt})"
            store.end_attempt(Ending(r.job_id, r.token, "failed", error=error, traceback=traceback))


def clean(client: Any, pattern: str) -> int:
    deleted = 0
    for key in client.scan_iter(match=pattern, count=1000):
        deleted += client.delete(key)
    return deleted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.redis_listing")
    parser.add_argument("--url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--list", type=int, default=500)
    parser.add_argument("--traceback-kb", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    prefix = f"bench-listing-{secrets.token_hex(4)}"
    url = f"{args.url}{'&' if '?' in args.url else '?'}prefix={prefix}"
    line = '  File "/srv/app/billing/invoices.py", line 123, in build_lines\n'
    traceback = "Traceback (most recent call last):\n" + line * int(
        args.traceback_kb * 1024 / len(line)
    )
    store = RedisStore(url)
    raw = redis.Redis.from_url(args.url)
    try:
        store.migrate()
        began = time.perf_counter()
        fill(store, args.jobs, args.tries, traceback)
        filled = time.perf_counter() - began
        one = store.list_jobs(state="failed", limit=1)[0]
        history = store.list_jobs(ids=[one.id])[0].attempts
        meter = count_reads(store)
        times, cpu, read = [], [], []
        for _ in range(args.rounds):
            before = meter[0]
            began, began_cpu = time.perf_counter(), time.process_time()
            listed = store.list_jobs(state="failed", limit=args.list)
            times.append(time.perf_counter() - began)
            cpu.append(time.process_time() - began_cpu)
            read.append(meter[0] - before)
            assert len(listed) == min(args.list, args.jobs), len(listed)
            assert all(r.last_error and r.tries_used == args.tries for r in listed)
        print(
            f"{args.jobs} failed jobs x {len(history)} attempts (traceback"
            f" {len(traceback)} B each), filled in {filled:.1f} s; listing {args.list} failed"
            f" jobs, {args.rounds} rounds:"
        )
        print(
            f"  median {statistics.median(times) * 1e3:.1f} ms, best {min(times) * 1e3:.1f} ms,"
            f" client CPU median {statistics.median(cpu) * 1e3:.1f} ms,"
            f" read {statistics.median(read) / 1024:.0f} KiB a listing"
        )
    finally:
        store.close()
        clean(raw, store.db.key_pattern())
        raw.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
