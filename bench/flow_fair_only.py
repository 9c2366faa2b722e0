"""bench.flow's fairness measure, `fair_key=` alone, at sizes `bench flow` cannot reach in
reasonable time on a loaded machine (issue 31's 10,000 tenants x 100 jobs + one of 10): no
plain-FIFO pass (FIFO's order is the dispatch order), and the store is left for the caller to
drop (bench.priorities.drop times out deleting 1,000,010 Redis keys under load). Jobs are made
50 tenants at a time, so a million of them are never all in memory.

    .venv/bin/python -m bench.flow_fair_only URL TENANTS PER_TENANT SMALL

URL: a store of the run's own (a fresh SQLite file, a private redis-server, a fresh schema).
"""

from __future__ import annotations

import sys
import time

from tenure.core.guards import Guards
from tenure.stores import open_store

from bench.flow import WORKER, new_job


def main(argv: list[str]) -> int:
    url, tenants, per, small_n = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    store = open_store(url)
    store.migrate()
    start = time.perf_counter()
    for first in range(0, tenants, 50):
        chunk = [
            new_job(Guards(fair_key=f"big{t}"))
            for t in range(first, min(tenants, first + 50))
            for _ in range(per)
        ]
        for at in range(0, len(chunk), 500):
            store.enqueue_many(chunk[at : at + 500])
    small = [new_job(Guards(fair_key="small")) for _ in range(small_n)]
    store.enqueue_many(small)
    total = tenants * per + small_n
    dispatched = total / (time.perf_counter() - start)
    ids = {job.id for job in small}
    order: list[str] = []
    start = time.perf_counter()
    while batch := store.reserve(queues=["default"], worker=WORKER, lease=600, limit=500):
        order += [r.job_id for r in batch]
    rate = len(order) / (time.perf_counter() - start)
    where = sorted(i + 1 for i, job_id in enumerate(order) if job_id in ids)
    p99 = where[min(len(where) - 1, len(where) * 99 // 100)]
    print(
        f"fair_key {tenants} x {per} + {small_n}: small tenant's positions p50"
        f" {where[len(where) // 2]:,}, p99 {p99:,}, max {where[-1]:,} of {total:,} (reserved"
        f" {len(order):,}); dispatched at {dispatched:,.0f} jobs/s, reserved at {rate:,.0f} jobs/s"
    )
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
