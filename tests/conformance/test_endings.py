"""How attempts end: success, each kind of failure, and results that arrive too late."""

from __future__ import annotations

import itertools

import pytest

from conformance.helpers import (
    W1,
    W2,
    attempt,
    enqueue,
    expire_and_rescue,
    job,
    new_job,
    reserve_one,
    wait_until,
)
from tenure.core.records import Ending
from tenure.core.retry import Policy
from tenure.stores import Store

COUNTED = ("failed", "timed_out", "crashed")
FREE = ("interrupted", "lost_lease")


def test_complete_finishes_the_job_and_closes_the_attempt(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    r = reserve_one(store)
    result = store.end_attempt(Ending(job_id=job_id, token=r.token))[0]
    assert (result.accepted, result.state) == (True, "succeeded")
    got = job(store, job_id)
    assert got.state == "succeeded"
    assert got.finished_at is not None
    assert got.lease_expires_at is None
    assert got.tries_used == 1
    (a,) = got.attempts
    assert a.outcome == "succeeded" and a.error is None
    assert a.ended_at is not None and a.started_at <= a.ended_at
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=1) == []


def test_complete_with_a_token_that_is_not_the_current_attempt_is_refused(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    r = reserve_one(store)
    result = store.end_attempt(Ending(job_id=job_id, token=r.token + 1))[0]
    assert not result.accepted
    assert result.state == "running"
    assert result.reason
    assert job(store, job_id).state == "running"
    assert store.end_attempt(Ending(job_id=job_id, token=r.token))[0].accepted


def test_completing_twice_is_refused_the_second_time(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    r = reserve_one(store)
    assert store.end_attempt(Ending(job_id=job_id, token=r.token))[0].accepted
    again = store.end_attempt(Ending(job_id=job_id, token=r.token))[0]
    assert (again.accepted, again.state) == (False, "succeeded")
    assert attempt(store, job_id, 1).outcome == "succeeded"


def test_a_late_result_after_the_lease_was_taken_over_is_refused_and_recorded(
    store: Store, other_store: Store
) -> None:
    # Worker one pauses past its lease; the job is rescued and handed to worker two. When
    # worker one wakes up and reports success, the store must refuse it (fencing) and say so.
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=3, backoff=0)))
    first = reserve_one(store, worker=W1, lease=0.4)
    expire_and_rescue(store, job_id)
    second = reserve_one(other_store, worker=W2, lease=30)
    assert second.token == first.token + 1

    late = store.end_attempt(Ending(job_id=job_id, token=first.token))[0]
    assert not late.accepted
    assert late.state == "running"
    a1 = attempt(store, job_id, 1)
    assert a1.outcome == "lost_lease"
    assert a1.error is not None
    assert W1.id in a1.error  # the crash note stays
    assert "refused" in a1.error

    assert other_store.end_attempt(Ending(job_id=job_id, token=second.token))[0].accepted
    got = job(store, job_id)
    assert got.state == "succeeded"
    assert [a.outcome for a in got.attempts] == ["lost_lease", "succeeded"]


def test_a_late_failure_is_refused_too(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=3, backoff=0)))
    first = reserve_one(store, worker=W1, lease=0.4)
    expire_and_rescue(store, job_id)
    second = reserve_one(store, worker=W2)
    late, _ = store.end_attempt(
        Ending(job_id=job_id, token=first.token, outcome="failed", error="boom")
    )
    assert not late.accepted
    got = job(store, job_id)
    assert got.state == "running" and got.worker_id == W2.id
    assert got.tries_used == 1  # the crash counted; the refused failure did not
    assert attempt(store, job_id, 1).outcome == "lost_lease"
    assert attempt(store, job_id, 2).outcome is None
    assert store.end_attempt(Ending(job_id=job_id, token=second.token))[0].accepted


@pytest.mark.parametrize("outcome", COUNTED)
def test_a_counted_outcome_uses_a_try_and_retries_by_policy(store: Store, outcome: str) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=3, backoff=0)))
    r = reserve_one(store)
    result, _ = store.end_attempt(
        Ending(
            job_id=job_id, token=r.token, outcome=outcome, error="ValueError: no", traceback="tb..."
        )
    )
    assert result.accepted
    assert result.state == "queued"
    assert result.retry_in == 0
    got = job(store, job_id)
    assert got.state == "queued"
    assert (got.tries_used, got.exceptions) == (1, 1)
    assert got.last_error == "ValueError: no"
    assert got.lease_expires_at is None and got.worker_id is None
    a = attempt(store, job_id, 1)
    assert (a.outcome, a.error, a.traceback) == (outcome, "ValueError: no", "tb...")
    assert a.ended_at is not None
    assert reserve_one(store).attempt == 2


@pytest.mark.parametrize("outcome", FREE)
def test_interrupted_and_lost_lease_requeue_at_once_without_using_a_try(
    store: Store, outcome: str
) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=1, backoff=600)))
    for n in (1, 2, 3):  # more hand-backs than tries: none of them counts
        r = reserve_one(store)
        assert r.attempt == n
        result, _ = store.end_attempt(
            Ending(job_id=job_id, token=r.token, outcome=outcome, error="deploy")
        )
        assert (result.accepted, result.state, result.retry_in) == (True, "queued", 0)
    got = job(store, job_id)
    assert got.state == "queued"
    assert (got.tries_used, got.exceptions) == (0, 0)
    assert [a.outcome for a in got.attempts] == [outcome] * 3


def test_a_backoff_schedules_the_retry(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=3, backoff=[30, 60])))
    r = reserve_one(store)
    result, _ = store.end_attempt(Ending(job_id=job_id, token=r.token, outcome="failed", error="e"))
    assert (result.state, result.retry_in) == ("scheduled", 30)
    got = job(store, job_id)
    assert got.state == "scheduled"
    assert got.run_at == pytest.approx((attempt(store, job_id, 1).ended_at or 0) + 30, abs=0.5)
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=1) == []


def test_the_last_try_fails_the_job_with_the_reason(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=2, backoff=0)))
    for _ in range(2):
        r = reserve_one(store)
        result, _ = store.end_attempt(
            Ending(job_id=job_id, token=r.token, outcome="failed", error="nope")
        )
    assert (result.accepted, result.state) == (True, "failed")
    assert "2 tries" in result.reason
    got = job(store, job_id)
    assert got.state == "failed"
    assert got.finished_at is not None
    assert got.last_error is not None
    assert got.last_error.startswith("nope") and "used all 2 tries" in got.last_error
    assert (got.tries_used, got.exceptions) == (2, 2)


def test_max_exceptions_fails_before_the_tries_run_out(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=10, max_exceptions=2, backoff=0)))
    outcomes = ["timed_out", "failed"]
    for outcome in outcomes:
        r = reserve_one(store)
        result, _ = store.end_attempt(
            Ending(job_id=job_id, token=r.token, outcome=outcome, error="x")
        )
    assert result.state == "failed"
    assert "max_exceptions=2" in result.reason


def test_fail_on_timeout_fails_at_the_first_timeout(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=5, fail_on_timeout=True, backoff=0)))
    r = reserve_one(store)
    result, _ = store.end_attempt(
        Ending(job_id=job_id, token=r.token, outcome="timed_out", error="slow")
    )
    assert result.state == "failed"
    assert job(store, job_id).state == "failed"


def test_a_permanent_error_fails_at_once(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=5, backoff=0)))
    r = reserve_one(store)
    result, _ = store.end_attempt(
        Ending(
            job_id=job_id,
            token=r.token,
            outcome="failed",
            error="no job named 'gone' in this app",
            permanent=True,
        )
    )
    assert (result.accepted, result.state) == (True, "failed")
    assert "permanent" in result.reason
    got = job(store, job_id)
    assert got.state == "failed" and got.tries_used == 1
    assert got.last_error is not None and got.last_error.startswith("no job named 'gone'")


def test_retry_until_stops_retries_past_the_deadline(store: Store) -> None:
    deadline = store.now() + 5
    policy = Policy(tries=None, retry_until=deadline, backoff=60)
    (job_id,) = enqueue(store, new_job(policy=policy))
    r = reserve_one(store)
    result, _ = store.end_attempt(Ending(job_id=job_id, token=r.token, outcome="failed", error="e"))
    assert result.state == "failed"
    assert "retry_until" in result.reason


def test_the_attempts_tell_the_whole_story(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=4, backoff=0)))
    r1 = reserve_one(store, worker=W1)
    store.end_attempt(
        Ending(
            job_id=job_id, token=r1.token, outcome="failed", error="KeyError: 'x'", traceback="TB1"
        )
    )
    r2 = reserve_one(store, worker=W2)
    store.end_attempt(Ending(job_id=job_id, token=r2.token, outcome="interrupted", error="SIGTERM"))
    r3 = reserve_one(store, worker=W1)
    store.end_attempt(Ending(job_id=job_id, token=r3.token))

    attempts = job(store, job_id).attempts
    assert [a.number for a in attempts] == [1, 2, 3]
    assert [a.outcome for a in attempts] == ["failed", "interrupted", "succeeded"]
    assert [(a.worker_id, a.host, a.pid) for a in attempts] == [
        (W1.id, W1.host, W1.pid),
        (W2.id, W2.host, W2.pid),
        (W1.id, W1.host, W1.pid),
    ]
    assert [a.error for a in attempts] == ["KeyError: 'x'", "SIGTERM", None]
    assert [a.traceback for a in attempts] == ["TB1", None, None]
    for earlier, later in itertools.pairwise(attempts):
        assert earlier.ended_at is not None
        assert earlier.started_at <= earlier.ended_at <= later.started_at
    got = job(store, job_id)
    assert (got.tries_used, got.exceptions) == (2, 1)


def test_a_snooze_queues_the_job_again_later_without_using_a_try(store: Store) -> None:
    (later,) = enqueue(store, new_job(policy=Policy(tries=1, backoff=600)))
    r = reserve_one(store)
    before = store.now()
    result, _ = store.end_attempt(
        Ending(job_id=later, token=r.token, outcome="deferred", error="not yet", snooze=120)
    )
    assert (result.accepted, result.state) == (True, "scheduled")
    assert result.retry_in == pytest.approx(120)
    got = job(store, later)
    assert got.state == "scheduled" and got.run_at >= before + 119
    assert (got.tries_used, got.exceptions) == (0, 0)
    assert [(a.outcome, a.error) for a in got.attempts] == [("deferred", "not yet")]
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=1) == []


def test_snoozes_use_no_try_however_many(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=1, backoff=600)))
    for n in (1, 2, 3):  # more snoozes than tries
        r = wait_until(
            lambda: next(iter(store.reserve(queues=["default"], worker=W1, lease=30)), None),
            what="the snoozed job to be due",
        )
        assert r.attempt == n
        if n < 3:
            store.end_attempt(Ending(job_id=job_id, token=r.token, outcome="deferred", snooze=0.2))
    result, _ = store.end_attempt(Ending(job_id=job_id, token=r.token))
    assert result.state == "succeeded"
    got = job(store, job_id)
    assert got.tries_used == 1
    assert [a.outcome for a in got.attempts] == ["deferred", "deferred", "succeeded"]
