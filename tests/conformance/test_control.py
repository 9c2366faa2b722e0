"""Operating a store for a year (issue 18): cancelling one job, pausing a queue, and how long
the oldest ready job of each queue has waited."""

from __future__ import annotations

import secrets

import pytest

from conformance.helpers import W1, W2, attempt, enqueue, job, new_job, reserve_one, wait_until
from tenure.core.errors import ConfigError
from tenure.core.records import CancelResult, Ending, NewBatch
from tenure.core.retry import Policy
from tenure.stores import Store
from tenure.stores.base import get_batch, total_counts

LATER = 3600.0  # a delay that stays in the future for the whole test
ONE_TRY = Policy(tries=1, backoff=0)


# -- cancel one job --------------------------------------------------------------------------
def test_a_queued_job_cancelled_never_runs(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    assert store.cancel(job_id) == CancelResult(accepted=True, state="cancelled")
    got = job(store, job_id)
    assert (got.state, got.attempts, got.tries_used) == ("cancelled", [], 0)
    assert got.finished_at is not None
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=5) == []
    assert store.queue_counts()["default"]["cancelled"] == 1
    assert store.queue_counts()["default"]["queued"] == 0


def test_a_scheduled_job_cancelled_never_runs(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(delay=LATER))
    assert store.cancel(job_id).state == "cancelled"
    assert job(store, job_id).state == "cancelled"
    assert store.queue_counts()["default"]["scheduled"] == 0


def test_a_running_job_cancelled_is_told_to_its_worker_by_the_heartbeat(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    r = reserve_one(store)
    (other,) = enqueue(store, new_job())
    o = reserve_one(store, worker=W2)
    assert store.cancel(job_id) == CancelResult(accepted=True, state="running")
    assert job(store, job_id).state == "running"  # until its worker stops it
    reply = store.heartbeat(worker=W1, leases=[(job_id, r.token)], lease=30)
    assert (reply.lost, reply.cancel) == ([], [job_id])
    assert store.heartbeat(worker=W2, leases=[(other, o.token)], lease=30).cancel == []
    # asked again: still running, still told, nothing else changes
    assert store.cancel(job_id).state == "running"
    assert store.heartbeat(worker=W1, leases=[(job_id, r.token)], lease=30).cancel == [job_id]


def test_a_cancelled_attempt_uses_no_try_and_is_never_retried(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=3, backoff=0)))
    r = reserve_one(store)
    store.cancel(job_id)
    result, _ = store.end_attempt(
        Ending(
            job_id=job_id, token=r.token, outcome="cancelled", error="stopped at the cancel signal"
        )
    )
    assert (result.accepted, result.state) == (True, "cancelled")
    got = job(store, job_id)
    assert (got.state, got.tries_used, got.exceptions) == ("cancelled", 0, 0)
    assert got.lease_expires_at is None
    assert attempt(store, job_id, r.attempt).outcome == "cancelled"
    assert attempt(store, job_id, r.attempt).error == "stopped at the cancel signal"
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=5) == []


@pytest.mark.parametrize("outcome", ["failed", "timed_out", "crashed", "interrupted", "lost_lease"])
def test_however_a_cancelled_attempt_ends_the_job_is_cancelled(store: Store, outcome: str) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=5, backoff=0)))
    r = reserve_one(store)
    store.cancel(job_id)
    result, _ = store.end_attempt(
        Ending(job_id=job_id, token=r.token, outcome=outcome, error="it raised")
    )
    assert result.state == "cancelled"
    got = job(store, job_id)
    assert (got.state, got.tries_used, got.exceptions) == ("cancelled", 0, 0)
    ended = attempt(store, job_id, r.attempt)
    assert ended.outcome == "cancelled"
    assert ended.error is not None and outcome in ended.error and "it raised" in ended.error


def test_a_cancelled_job_whose_worker_died_is_rescued_as_cancelled(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=5, backoff=0)))
    reserve_one(store, lease=0.3)
    store.cancel(job_id)
    wait_until(lambda: store.now() > job(store, job_id).lease_expires_at + 0.01, what="expiry")  # type: ignore[operator]
    (rescued,) = store.sweep(prune=False).rescued
    assert rescued.result.state == "cancelled"
    got = job(store, job_id)
    assert (got.state, got.tries_used) == ("cancelled", 0)
    assert got.attempts[-1].outcome == "cancelled"


def test_a_job_that_succeeds_after_its_cancel_succeeded(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    r = reserve_one(store)
    store.cancel(job_id)
    assert store.end_attempt(Ending(job_id=job_id, token=r.token))[0].accepted
    assert job(store, job_id).state == "succeeded"


def test_a_cancel_outcome_nobody_asked_for_hands_the_job_back(store: Store) -> None:
    # A soft stop meant for the attempt before this one must not cancel this job.
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=1, backoff=0)))
    r = reserve_one(store)
    result, _ = store.end_attempt(
        Ending(job_id=job_id, token=r.token, outcome="cancelled", error="stray")
    )
    assert result.state == "queued"
    got = job(store, job_id)
    assert (got.state, got.tries_used) == ("queued", 0)
    assert reserve_one(store).job_id == job_id


def test_cancelling_a_finished_or_unknown_job_is_refused(store: Store) -> None:
    done, failed, cancelled = enqueue(store, new_job(), new_job(policy=ONE_TRY), new_job())
    r = reserve_one(store)
    store.end_attempt(Ending(job_id=done, token=r.token))
    r = reserve_one(store)
    store.end_attempt(Ending(job_id=failed, token=r.token, outcome="failed", error="boom"))
    store.cancel(cancelled)
    for job_id, state in ((done, "succeeded"), (failed, "failed"), (cancelled, "cancelled")):
        assert store.cancel(job_id) == CancelResult(accepted=False, state=state)
        assert job(store, job_id).state == state
    assert store.cancel("no-such-job") == CancelResult(accepted=False, state="missing")
    assert store.cancel("") == CancelResult(accepted=False, state="missing")


def test_a_cancelled_batch_member_counts_as_a_cancelled_member(store: Store) -> None:
    members = [new_job(), new_job(), new_job()]
    batch_id = secrets.token_hex(6)
    store.enqueue_many(
        members, batch=NewBatch(id=batch_id, name="b", then=new_job(queue="default", name="then"))
    )
    running = reserve_one(store)
    queued = next(m.id for m in members if m.id != running.job_id)
    assert store.cancel(queued).state == "cancelled"
    got = get_batch(store, batch_id)
    assert got is not None
    assert (got.state, got.cancelled, got.pending) == ("running", 1, 2)
    # the running member, cancelled: it ends cancelled, counted once
    store.cancel(running.job_id)
    store.end_attempt(
        Ending(job_id=running.job_id, token=running.token, outcome="cancelled", error="x")
    )
    got = get_batch(store, batch_id)
    assert got is not None
    assert (got.cancelled, got.pending) == (2, 1)
    last = reserve_one(store)
    store.end_attempt(Ending(job_id=last.job_id, token=last.token))
    got = get_batch(store, batch_id)
    assert got is not None
    assert (got.state, got.done, got.cancelled, got.pending) == ("succeeded", 1, 2, 0)
    assert got.then_job_id is not None  # settled as with any cancelled member


# -- pause and resume a queue ------------------------------------------------------------------
def test_a_paused_queue_hands_out_nothing_until_resumed(store: Store) -> None:
    enqueue(store, new_job(queue="mail"), new_job(queue="default"))
    store.set_control(paused={"mail": True})
    got = store.reserve(queues=["mail", "default"], worker=W1, lease=30, limit=5)
    assert [r.queue for r in got] == ["default"]
    enqueue(store, new_job(queue="mail"))  # dispatch still works
    assert store.reserve(queues=["mail"], worker=W1, lease=30, limit=5) == []
    assert store.queue_counts()["mail"]["queued"] == 2
    store.set_control(paused={"mail": False})
    assert len(store.reserve(queues=["mail"], worker=W1, lease=30, limit=5)) == 2


def test_a_paused_queue_lets_its_running_jobs_finish(store: Store) -> None:
    enqueue(store, new_job(queue="mail"), new_job(queue="mail"))
    r = reserve_one(store, queues=["mail"])
    store.set_control(paused={"mail": True})
    reply = store.heartbeat(worker=W1, leases=[(r.job_id, r.token)], lease=30)
    assert (reply.lost, reply.cancel) == ([], [])
    # the hot path records the success but claims nothing of the paused queue
    result, following = store.end_attempt(
        Ending(job_id=r.job_id, token=r.token), queues=["mail"], worker=W1, lease=30
    )
    assert result.accepted and following is None
    assert job(store, r.job_id).state == "succeeded"


def test_complete_and_reserve_goes_on_to_a_queue_not_paused(store: Store) -> None:
    enqueue(store, new_job(queue="mail"))
    r = reserve_one(store, queues=["mail"])
    enqueue(store, new_job(queue="mail"), other := new_job(queue="default"))
    store.set_control(paused={"mail": True})
    result, following = store.end_attempt(
        Ending(job_id=r.job_id, token=r.token), queues=["mail", "default"], worker=W1, lease=30
    )
    assert result.accepted
    assert following is None or following.job_id == other.id  # never one of the paused queue


def test_pausing_is_held_in_the_store_and_idempotent(store: Store, other_store: Store) -> None:
    store.set_control(paused={"mail": True})
    store.set_control(paused={"mail": True})
    enqueue(store, new_job(queue="mail"))
    # another client (another host, or a worker started later) sees it at once
    assert other_store.reserve(queues=["mail"], worker=W2, lease=30, limit=1) == []
    assert other_store.queue_counts()["mail"].paused
    other_store.set_control(paused={"mail": False})
    other_store.set_control(paused={"mail": False})
    assert not store.queue_counts()["mail"].paused
    assert len(store.reserve(queues=["mail"], worker=W1, lease=30, limit=1)) == 1


def test_a_queue_with_no_job_yet_may_be_paused(store: Store) -> None:
    store.set_control(paused={"later": True})
    counts = store.queue_counts()
    assert set(counts) == {"later"}
    assert counts["later"].paused and sum(counts["later"].values()) == 0
    assert total_counts(store.queue_counts())["queued"] == 0
    enqueue(store, new_job(queue="later"))
    assert store.reserve(queues=["later"], worker=W1, lease=30, limit=1) == []
    store.set_control(paused={"later": False})
    store.set_control(paused={"never-paused": False})  # harmless
    assert "never-paused" not in store.queue_counts()


def test_one_control_call_sets_several_switches_at_the_time_it_returns(store: Store) -> None:
    before = store.now()
    at = store.set_control(paused={"a": True, "b": True}, restart=True)
    assert before - 0.01 <= at <= store.now() + 0.01
    assert {q for q, c in store.queue_counts().items() if c.paused} == {"a", "b"}
    told = store.heartbeat(worker=W1, leases=[], lease=30).restart_requested_at
    assert told == pytest.approx(at, abs=1e-6)
    resumed_at = store.set_control(paused={"a": False})
    assert resumed_at >= at
    assert {q for q, c in store.queue_counts().items() if c.paused} == {"b"}
    assert store.heartbeat(worker=W1, leases=[], lease=30).restart_requested_at == told


# -- how long jobs wait ----------------------------------------------------------------------
def test_the_age_of_the_oldest_ready_job_is_measured_on_the_store_clock(store: Store) -> None:
    (first,) = enqueue(store, new_job(queue="a"))
    enqueued_at = job(store, first).run_at
    enqueue(store, new_job(queue="a"), new_job(queue="b", delay=LATER))
    wait_until(lambda: store.now() > enqueued_at + 0.2, what="the store clock to move")
    counts = store.queue_counts()
    age = counts["a"].oldest_ready_age
    assert age is not None and 0.2 <= age <= store.now() - enqueued_at + 0.01
    assert counts["b"].oldest_ready_age is None  # scheduled is not waiting
    assert not counts["a"].paused and not counts["b"].paused
    # once the oldest is taken, the next one is the oldest
    r = reserve_one(store, queues=["a"])
    assert r.job_id == first
    later = store.queue_counts()["a"].oldest_ready_age
    assert later is not None and later < store.now() - enqueued_at + 0.01
    reserve_one(store, queues=["a"])
    assert store.queue_counts()["a"].oldest_ready_age is None  # nothing ready


def test_a_paused_queue_shows_how_long_its_jobs_wait(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(queue="mail"))
    store.set_control(paused={"mail": True})
    ready_at = job(store, job_id).run_at
    wait_until(lambda: store.now() > ready_at + 0.1, what="the store clock to move")
    counts = store.queue_counts()["mail"]
    assert counts.paused
    assert counts.oldest_ready_age is not None and counts.oldest_ready_age >= 0.1


def test_one_cancel_verb_for_a_job_or_a_batch(store: Store) -> None:
    batch_id = secrets.token_hex(6)
    store.enqueue_many([new_job(), new_job()], batch=NewBatch(id=batch_id, name="b"))
    assert store.cancel(batch_id=batch_id) == CancelResult(accepted=True, state="cancelled")
    assert store.cancel(batch_id=batch_id) == CancelResult(accepted=False, state="cancelled")
    assert store.cancel(batch_id="no-such-batch") == CancelResult(accepted=False, state="missing")
    with pytest.raises(ConfigError):
        store.cancel()
    with pytest.raises(ConfigError):
        store.cancel("a-job", batch_id=batch_id)
