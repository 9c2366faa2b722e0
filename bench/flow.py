"""Flow control's cost (issue 31): the drain of jobs under `concurrency=` and `fair_key=`
against the same number of plain jobs, on each store (goal: within 15 %), and fairness: when a
small tenant's jobs start behind many big tenants' backlogs, fair against plain FIFO.

    .venv/bin/python -m bench flow [--jobs 2000] [--slots 8] [--limit 4] [--keys 50]
                                   [--tenants 200] [--per-tenant 20] [--small 10]
                                   [--rounds 2] [--engines sqlite,postgres,redis]

Per engine and case a fresh store gets --jobs queued jobs; then one process drains them as a
worker of --slots slots does, with no job code run: it keeps up to --slots attempts open and,
oldest first, ends one and reserves the next (end_attempt with queues=, the hot path), topping
up with reserve when that returned none: a worker's idle slot reserves when it is woken, not
after every end of another slot. (--eager-top-up reserves for every idle slot after every
end instead, as a worker woken by each end would: the measure of earlier sessions.) Cases,
interleaved A B B A so drift cancels:

- plain: no guard.
- limited: `concurrency=--limit` on the one job name: fewer than --slots may run, so the limit
  binds all the time (jobs are parked, and handed back by each end).
- per key: `concurrency=1` per key, --keys keys, jobs spread round robin over them.
- fair: `fair_key=` over --keys tenants (its cost is at dispatch: the enqueue rate is shown).

Reported: jobs per second of each case and its share of plain's (the median of the rounds'
rates, and the median of each round's ratio to the plain drain of the same round, the
steadier figure on a shared machine), the SQL statements each job cost in the drain
(PostgreSQL and SQLite: those the store sent, BEGIN and COMMIT included), and the enqueue
rate. Then
fairness: --tenants tenants of --per-tenant jobs each are dispatched, then one tenant of
--small jobs; the queue is reserved to the end, and the small tenant's jobs' positions in that
order (p50, max) are shown for fair_key= against plain jobs (FIFO). The issue's figure is
10,000 x 100 + 10; the defaults are smaller, as fair dispatch costs a few statements per job on
the SQL stores. Wall-clock figures: on a shared machine, say so when quoting them.
"""

from __future__ import annotations

import argparse
import secrets
import sqlite3
import statistics
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from tenure.core.guards import Guards
from tenure.core.records import Ending, NewJob, Reservation, WorkerRef
from tenure.core.retry import Policy
from tenure.stores import Store, open_store

from bench.priorities import drop, fresh_url

WORKER = WorkerRef(id="bench-flow", host="bench", pid=0)
POLICY = Policy()
CASES = ("plain", "limited", "per key", "fair")


def guards(case: str, i: int, args: argparse.Namespace) -> Guards:
    if case == "limited":
        return Guards(concurrency_key="call_model", concurrency_limit=args.limit)
    if case == "per key":
        return Guards(concurrency_key=f"sync:{i % args.keys}", concurrency_limit=1)
    if case == "fair":
        return Guards(fair_key=f"tenant{i % args.keys}")
    return Guards()


def new_job(tenant: Guards) -> NewJob:
    return NewJob(
        id=secrets.token_hex(8),
        name="call_model",
        queue="default",
        payload='{"args":[1],"kwargs":{}}',
        policy=POLICY,
        guards=tenant,
    )


SENT = [0]  # SQL statements the store sent while `counting`


@contextmanager
def counting() -> Iterator[None]:
    """Count the statements PostgreSQL's and SQLite's stores send (SENT), BEGIN and COMMIT
    included: psycopg's cursors, and every SQLite connection opened meanwhile (its trace)."""
    execute, connect = psycopg.Cursor.execute, sqlite3.connect

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        SENT[0] += 1
        return execute(self, *args, **kwargs)

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(lambda _: SENT.__setitem__(0, SENT[0] + 1))
        return conn

    psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    sqlite3.connect = traced  # type: ignore[assignment]
    try:
        yield
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
        sqlite3.connect = connect


def drain(store: Store, jobs: int, slots: int, eager: bool = False) -> tuple[float, float]:
    """(seconds, statements per job) to run every job through, `slots` attempts open at
    most; an idle slot reserves when an end gave it no next job (`eager`: after every end)."""
    open_: deque[Reservation] = deque()
    done = 0
    sent = SENT[0]
    start = time.perf_counter()
    open_.extend(store.reserve(queues=["default"], worker=WORKER, lease=60, limit=slots))
    while done < jobs:
        if not open_:
            raise RuntimeError(f"nothing to reserve after {done} of {jobs} jobs")
        r = open_.popleft()
        ended, nxt = store.end_attempt(
            Ending(job_id=r.job_id, token=r.token), queues=["default"], worker=WORKER, lease=60
        )
        assert ended.accepted
        done += 1
        if nxt is not None:
            open_.append(nxt)
        want = slots - len(open_)
        if want > 0 and (eager or nxt is None):
            open_.extend(store.reserve(queues=["default"], worker=WORKER, lease=60, limit=want))
    return time.perf_counter() - start, (SENT[0] - sent) / jobs


def one_case(
    engine: str, case: str, workdir: Path, args: argparse.Namespace
) -> tuple[float, float, float]:
    """(drain jobs/s, enqueue jobs/s, statements per job drained)"""
    url = fresh_url(engine, workdir)
    store = open_store(url)
    try:
        store.migrate()
        jobs = [new_job(guards(case, i, args)) for i in range(args.jobs)]
        start = time.perf_counter()
        for at in range(0, len(jobs), 500):
            store.enqueue_many(jobs[at : at + 500])
        enqueued = args.jobs / (time.perf_counter() - start)
        seconds, statements = drain(store, args.jobs, args.slots, args.eager_top_up)
        return args.jobs / seconds, enqueued, statements
    finally:
        store.close()
        drop(url)


def small_positions(
    engine: str, fair: bool, workdir: Path, args: argparse.Namespace
) -> tuple[list[int], float]:
    """Where the small tenant's jobs come in the reservation order (1-based), and how many
    jobs per second were reserved (500 a call): a fair queue's reservation is the plain
    index lookup, whatever the number of tenants."""
    url = fresh_url(engine, workdir)
    store = open_store(url)
    try:
        store.migrate()

        def tenant(name: str, n: int) -> list[NewJob]:
            return [new_job(Guards(fair_key=name) if fair else Guards()) for _ in range(n)]

        big = [job for t in range(args.tenants) for job in tenant(f"big{t}", args.per_tenant)]
        for at in range(0, len(big), 500):
            store.enqueue_many(big[at : at + 500])
        small = tenant("small", args.small)
        store.enqueue_many(small)
        ids = {job.id for job in small}
        order: list[str] = []
        start = time.perf_counter()
        while batch := store.reserve(queues=["default"], worker=WORKER, lease=600, limit=500):
            order += [r.job_id for r in batch]
        rate = len(order) / (time.perf_counter() - start)
        return sorted(i + 1 for i, job_id in enumerate(order) if job_id in ids), rate
    finally:
        store.close()
        drop(url)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--tenants", type=int, default=200)
    parser.add_argument("--per-tenant", type=int, default=20)
    parser.add_argument("--small", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--engines", default="sqlite,postgres,redis")
    parser.add_argument("--eager-top-up", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, counting():
        for engine in args.engines.split(","):
            rates: dict[str, list[tuple[float, float, float]]] = {case: [] for case in CASES}
            for r in range(args.rounds):
                order = CASES if r % 2 == 0 else tuple(reversed(CASES))
                for case in order:
                    rates[case].append(one_case(engine, case, Path(tmp), args))
            for case in CASES if args.rounds else ():  # --rounds 0: fairness alone
                plain = statistics.median(d for d, _, _ in rates["plain"])
                rate = statistics.median(d for d, _, _ in rates[case])
                paired = statistics.median(
                    d / p for (d, _, _), (p, _, _) in zip(rates[case], rates["plain"], strict=True)
                )
                enq = statistics.median(e for _, e, _ in rates[case])
                sent = statistics.median(n for _, _, n in rates[case])
                each = ", ".join(f"{d:,.0f}" for d, _, _ in rates[case])
                print(
                    f"{engine:9} {case:8} drain {rate:8,.0f} jobs/s  {rate / plain:6.1%} of plain"
                    f" (paired {paired:6.1%}; rounds: {each});"
                    f"  {sent:5.2f} statements/job;  enqueue {enq:8,.0f} jobs/s"
                )
            for fair in (False, True):
                at, rate = small_positions(engine, fair, Path(tmp), args)
                total = args.tenants * args.per_tenant + args.small
                p99 = at[min(len(at) - 1, (len(at) * 99) // 100)]
                print(
                    f"{engine:9} {'fair_key' if fair else 'plain FIFO':10} the small tenant's"
                    f" {args.small} jobs start at positions p50 {at[len(at) // 2]:,}, p99"
                    f" {p99:,}, max {at[-1]:,} of {total:,}; reserved at {rate:,.0f} jobs/s"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
