"""Flow control's cost (issue 31): the drain of jobs under `concurrency=` against the same
number of plain jobs, on each store. Goal: within 15 % of plain.

    .venv/bin/python -m bench flow [--jobs 2000] [--slots 8] [--limit 4] [--keys 50]
                                   [--rounds 2] [--engines sqlite,postgres,redis]

Per engine and case a fresh store gets --jobs queued jobs; then one process drains them as a
worker of --slots slots does, with no job code run: it keeps up to --slots attempts open and,
oldest first, ends one and reserves the next (end_attempt with queues=, the hot path), topping
up with reserve when that returned none. Cases, interleaved A B B A so drift cancels:

- plain: no guard.
- limited: `concurrency=--limit` on the one job name: fewer than --slots may run, so the limit
  binds all the time (jobs are parked, and handed back by each end).
- per key: `concurrency=1` per key, --keys keys, jobs spread round robin over them.

Reported: jobs per second of each case and its share of plain's. A wall-clock figure: on a
shared machine, say so when quoting it.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import tempfile
import time
from collections import deque
from pathlib import Path

from tenure.guards import Guards
from tenure.retry import Policy
from tenure.stores import Store, open_store
from tenure.stores.records import NewJob, Reservation, WorkerRef

from bench.priorities import drop, fresh_url

WORKER = WorkerRef(id="bench-flow", host="bench", pid=0)
POLICY = Policy()
CASES = ("plain", "limited", "per key")


def guards(case: str, i: int, args: argparse.Namespace) -> Guards:
    if case == "limited":
        return Guards(concurrency_key="call_model", concurrency_limit=args.limit)
    if case == "per key":
        return Guards(concurrency_key=f"sync:{i % args.keys}", concurrency_limit=1)
    return Guards()


def drain(store: Store, jobs: int, slots: int) -> float:
    """Seconds to run every job through, `slots` attempts open at most."""
    open_: deque[Reservation] = deque()
    done = 0
    start = time.perf_counter()
    open_.extend(store.reserve(queues=["default"], worker=WORKER, lease=60, limit=slots))
    while done < jobs:
        if not open_:
            raise RuntimeError(f"nothing to reserve after {done} of {jobs} jobs")
        r = open_.popleft()
        ended, nxt = store.end_attempt(
            job_id=r.job_id, token=r.token, queues=["default"], worker=WORKER, lease=60
        )
        assert ended.accepted
        done += 1
        if nxt is not None:
            open_.append(nxt)
        want = slots - len(open_)
        if want > 0:
            open_.extend(store.reserve(queues=["default"], worker=WORKER, lease=60, limit=want))
    return time.perf_counter() - start


def one_case(engine: str, case: str, workdir: Path, args: argparse.Namespace) -> float:
    url = fresh_url(engine, workdir)
    store = open_store(url)
    try:
        store.migrate()
        store.enqueue_many(
            [
                NewJob(
                    id=secrets.token_hex(8),
                    name="call_model",
                    queue="default",
                    payload='{"args":[1],"kwargs":{}}',
                    policy=POLICY,
                    guards=guards(case, i, args),
                )
                for i in range(args.jobs)
            ]
        )
        return args.jobs / drain(store, args.jobs, args.slots)
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
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--engines", default="sqlite,postgres,redis")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for engine in args.engines.split(","):
            rates: dict[str, list[float]] = {case: [] for case in CASES}
            for r in range(args.rounds):
                order = CASES if r % 2 == 0 else tuple(reversed(CASES))
                for case in order:
                    rates[case].append(one_case(engine, case, Path(tmp), args))
            plain = statistics.median(rates["plain"])
            for case in CASES:
                rate = statistics.median(rates[case])
                print(
                    f"{engine:9} {case:8} {rate:8,.0f} jobs/s  {rate / plain:6.1%} of plain"
                    f"  (rounds: {', '.join(f'{x:,.0f}' for x in rates[case])})"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
