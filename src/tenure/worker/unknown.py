"""A job whose name this worker does not know, during a rolling deploy: new code dispatched it
and an old worker reserved it (or the other way round). It is handed back for a worker that
knows it, no try used, recorded once per worker as a `deferred` attempt naming that worker
(each worker's id is new with each start: once per worker generation), and reserved again a few
seconds later (retry.HANDED_BACK_DELAY_S); each further refusal waits as long as the job has
already been refused (so the waits about double), up to HANDED_BACK_MAX_S and never past the
grace's end. A worker's further refusals of the same job leave no attempt row
(Store.end_attempt's `record`): the history shows who refused it, not each round. Only when no
worker has run it for `--unknown-grace` seconds since the first refusal does it fail, naming the
workers that refused it. `--unknown-grace 0` fails it at once, as before rolling deploys were
thought of.

The back-off is the job's own (the snooze of its deferred end), not the worker's: no reserve
filter, so the reserve seam stays as it is. Once a live worker that knows the job serves its
queue (its record names the job), an old worker's refusal puts it off for a second only: the
two race for it when it is due, so the new code gets it within a few rounds, not after the
longest wait.

Costs nothing on the hot path: only a job of an unknown name reads the store here (its
attempts, for its earlier refusals).
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
    mine: bool = False  # this worker (this start of it) already recorded a refusal of it
    # another live worker serving the job's queue knows its name (the new code is up): the job
    # is handed back at once-a-second, so that worker gets it in a round or two of the race
    known_elsewhere: bool = False


HANDED_BACK_MAX_S = 30.0
KNOWN_ELSEWHERE_WAIT_S = 1.0  # not zero: this worker would claim it straight back


def back_off(seen: Refusals, grace: float) -> float:
    """How long the job waits after this refusal: HANDED_BACK_DELAY_S after the first, then as
    long as it has been refused so far (each wait about twice the last, read from the first
    refusal alone, since repeated refusals leave no row to count), at most HANDED_BACK_MAX_S,
    and no later than the grace's end (so that it fails on time), but never under a second (no
    busy loop). When a live worker that knows the job is up, a second: the two race for it
    when it is due again, and the old worker must not keep it waiting up to the maximum."""
    if seen.known_elsewhere:
        return min(KNOWN_ELSEWHERE_WAIT_S, max(1.0, grace))
    if seen.first_at is None:
        return min(HANDED_BACK_DELAY_S, max(1.0, grace))
    refused_for = max(0.0, seen.now - seen.first_at)
    wait = min(HANDED_BACK_MAX_S, max(HANDED_BACK_DELAY_S, refused_for))
    return min(wait, max(1.0, grace - refused_for))


def refusals(store: Store, job_id: str, worker_id: str) -> Refusals:
    """The job's recorded refusals, and whether `worker_id` is among those who refused it."""
    record = get_job(store, job_id)
    found = [
        a
        for a in (record.attempts if record is not None else [])
        if a.outcome == "deferred" and a.cause == causes.UNKNOWN_JOB
    ]
    now = store.now()
    return Refusals(
        first_at=min((a.started_at for a in found), default=None),
        workers=frozenset(a.worker_id for a in found),
        now=now,
        mine=any(a.worker_id == worker_id for a in found),
        known_elsewhere=record is not None
        and known_elsewhere(store, record.name, record.queue, worker_id, now),
    )


def known_elsewhere(store: Store, name: str, queue: str, worker_id: str, now: float) -> bool:
    """Does a live worker other than `worker_id`, serving `queue`, report knowing `name`?"""
    return any(
        w.id != worker_id and w.is_live(now) and queue in w.queues and name in (w.known or ())
        for w in store.list_workers()
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
        history=not seen.mine,  # once per worker, not once per round
    )
