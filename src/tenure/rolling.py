"""Rolling deploys, as an operator sees them: per queue, the waiting jobs that no live worker
serving that queue knows (their name is defined by none of those workers' code). A deploy that
has not rolled out yet shows here: new code dispatched a job, and only old workers are up.

Read from what the store already answers (the live workers' records, each with the job names
it reported, and the waiting jobs of a queue, newest first, at most SCAN of them): no store
verb of its own. A queue is left out when no live worker serves it (then nothing runs there,
known or not) or when one of its workers did not report its names (older code: unknown).
"""

from __future__ import annotations

from dataclasses import dataclass

from tenure.core.records import WorkerRecord
from tenure.core.states import QUEUED, SCHEDULED
from tenure.stores.base import Store

SCAN = 10_000  # the waiting jobs read per queue and state, newest first


@dataclass(frozen=True)
class Unknown:
    """A queue's waiting jobs that no live worker serving it knows."""

    queue: str
    count: int
    names: tuple[str, ...]  # their job names, sorted
    capped: bool = False  # SCAN reached: the count is at least this


def unknown_waiting(store: Store, live: list[WorkerRecord], queues: list[str]) -> list[Unknown]:
    """For each of `queues` with such jobs, in that order: the waiting jobs no live worker
    serving it knows."""
    found: list[Unknown] = []
    for queue in queues:
        serving = [w for w in live if queue in w.queues]
        if not serving or any(w.known is None for w in serving):
            continue
        known = {name for w in serving for name in w.known or ()}
        count, names, capped = 0, set(), False
        for state in (QUEUED, SCHEDULED):
            jobs = store.list_jobs(state=state, queue=queue, limit=SCAN)
            capped = capped or len(jobs) >= SCAN
            for job in jobs:
                if job.name not in known:
                    count += 1
                    names.add(job.name)
        if count:
            found.append(Unknown(queue, count, tuple(sorted(names)), capped))
    return found


def unknown_text(u: Unknown) -> str:
    """The line `tenure queues` prints for `u` (job names are stored text: shown with repr)."""
    shown = ", ".join(repr(n) for n in u.names[:5]) + (", ..." if len(u.names) > 5 else "")
    return (
        f"queue {u.queue!r}: {u.count}{'+' if u.capped else ''} waiting job(s) no live worker "
        f"knows ({shown}): a deploy not rolled out yet? the workers serving it run older code"
    )
