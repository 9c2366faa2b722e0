"""A job whose name this worker does not know, during a rolling deploy: new code dispatched it
and an old worker reserved it (or the other way round). It is handed back for a worker that
knows it, no try used, recorded as a `deferred` attempt naming this worker, and reserved again
a few seconds later (retry.HANDED_BACK_DELAY_S), each further refusal twice as long after the
last, up to HANDED_BACK_MAX_S (and never past the grace's end); only when no worker has run it for
`--unknown-grace` seconds since the first refusal does it fail, naming the workers that
refused it. `--unknown-grace 0` fails it at once, as before rolling deploys were thought of.

The back-off is the job's own (the snooze of its deferred end), not the worker's: no store verb
and no reserve filter, so the store seam stays as it is; a job refused all through the default
grace leaves about 20 attempt rows, not 120. A worker that knows the job runs it at most
HANDED_BACK_MAX_S after it comes up.

Costs nothing on the hot path: only a job of an unknown name reads the store here (its
attempts, for the first refusal).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tenure.core import causes
from tenure.core.records import Reservation, WorkerRef
from tenure.core.retry import HANDED_BACK_DELAY_S
from tenure.stores.base import Store, get_job
from tenure.worker.execute import Ended


@dataclass(frozen=True)
class Refusals:
    """The job's earlier hand-backs for an unknown name: when the first was, and by whom."""

    first_at: float | None = None
    workers: frozenset[str] = field(default_factory=frozenset)
    now: float = 0.0
    count: int = 0  # how many there were


HANDED_BACK_MAX_S = 30.0


def back_off(seen: Refusals, grace: float) -> float:
    """How long the job waits after this refusal: HANDED_BACK_DELAY_S after the first, twice
    the last wait after each further one, at most HANDED_BACK_MAX_S, and no later than the
    grace's end (so that it fails on time), but never under a second (no busy loop)."""
    wait = min(HANDED_BACK_MAX_S, HANDED_BACK_DELAY_S * (1 << min(seen.count, 16)))
    if seen.first_at is not None:
        wait = min(wait, max(1.0, grace - (seen.now - seen.first_at)))
    return wait


def refusals(store: Store, job_id: str) -> Refusals:
    record = get_job(store, job_id)
    found = [
        a
        for a in (record.attempts if record is not None else [])
        if a.outcome == "deferred" and a.cause == causes.UNKNOWN_JOB
    ]
    return Refusals(
        first_at=min((a.started_at for a in found), default=None),
        workers=frozenset(a.worker_id for a in found),
        now=store.now(),
        count=len(found),
    )


def unknown_job(
    res: Reservation, worker: WorkerRef, where: str, grace: float, seen: Refusals
) -> Ended:
    """Hand `res` back, or fail it once `grace` has passed since the first refusal."""
    fix = f"deploy the code that defines it, then run `tenure failed retry {res.job_id}`"
    if grace <= 0:
        return Ended(
            "failed",
            f"unknown job {res.name!r}: no job of that name is registered in {where}; {fix}",
            permanent=True,
            cause=causes.UNKNOWN_JOB,
        )
    if seen.first_at is not None and seen.now - seen.first_at >= grace:
        refused_by = ", ".join(sorted(seen.workers | {worker.id}))
        return Ended(
            "failed",
            f"unknown job {res.name!r}: no worker that knows it ran it within --unknown-grace "
            f"{grace:g} s of the first refusal; refused by {refused_by}; {fix}",
            permanent=True,
            cause=causes.UNKNOWN_JOB,
        )
    return Ended(
        "deferred",
        f"worker {worker.id} does not know job {res.name!r} ({where} defines no such job: "
        "older or newer code?); handed back, no try used, for a worker that knows it "
        f"(it fails after --unknown-grace {grace:g} s)",
        cause=causes.UNKNOWN_JOB,
        snooze=back_off(seen, grace),
    )
