"""A hand-back its worker already recorded (`Ending(record=False)`, a rolling deploy's
repeated refusal): the job is queued again as for a recorded one, no try used, but its history
does not grow; a cancel asked meanwhile is still recorded."""

from __future__ import annotations

from conformance.helpers import W1, enqueue, job, new_job, reserve_one, wait_until
from tenure.core import causes
from tenure.core.records import Ending, Reservation
from tenure.core.retry import Policy
from tenure.describe import describe_job
from tenure.stores import Store

SNOOZE = 0.05  # the hand-back's wait (the worker's back-off), short for the test


def reserve_when_due(store: Store) -> Reservation:
    got = wait_until(
        lambda: store.reserve(queues=["default"], worker=W1, lease=30, limit=1),
        what="the handed-back job to be due again",
    )
    return got[0]


def hand_back(store: Store, job_id: str, token: int, *, record: bool) -> str:
    result, _ = store.end_attempt(
        Ending(
            job_id=job_id,
            token=token,
            outcome="deferred",
            error=f"worker {W1.id} does not know job 'report'",
            cause=causes.UNKNOWN_JOB,
            snooze=SNOOZE,
            record=record,
        )
    )
    assert result.accepted
    return result.state


def test_a_hand_back_already_recorded_leaves_no_attempt_and_uses_no_try(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=1, backoff=600)))
    first = reserve_one(store)
    assert hand_back(store, job_id, first.token, record=True) == "scheduled"
    for _ in range(3):  # the same worker refuses it again: nothing more is written down
        again = reserve_when_due(store)
        assert hand_back(store, job_id, again.token, record=False) == "scheduled"
    got = job(store, job_id)
    assert got.state == "scheduled" and (got.tries_used, got.exceptions) == (0, 0)
    (only,) = got.attempts
    assert (only.number, only.outcome, only.cause) == (1, "deferred", causes.UNKNOWN_JOB)
    assert only.error == f"worker {W1.id} does not know job 'report'"
    # the tokens still grew (fencing): a stale end of a forgotten attempt is refused
    last = reserve_when_due(store)
    assert last.attempt == 5
    assert not store.end_attempt(Ending(job_id=job_id, token=again.token))[0].accepted
    assert store.end_attempt(Ending(job_id=job_id, token=last.token))[0].accepted
    assert [a.number for a in job(store, job_id).attempts] == [1, 5]
    # and `tenure jobs show` (the dashboard's job page too) says what numbers 2 to 4 were,
    # in its place in the timeline
    lines = describe_job(job(store, job_id))
    first = next(i for i, x in enumerate(lines) if x.startswith("  attempt 1 was deferred"))
    gap, then = lines[first + 1 : first + 3]
    assert gap.startswith(
        f"  attempts 2 to 4: handed back again by worker {W1.id}, whose code does not know "
        "this job; no try used, not recorded"
    ), lines
    assert then.startswith("  attempt 5 succeeded"), lines


def test_a_cancel_asked_meanwhile_is_recorded_even_unrecorded(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    r = reserve_one(store)
    assert store.cancel(job_id).state == "running"
    assert hand_back(store, job_id, r.token, record=False) == "cancelled"
    (a,) = job(store, job_id).attempts
    assert a.outcome == "cancelled"
