"""Leases on the store's clock: heartbeats renew them, expiry hands the job back as a crash."""

from __future__ import annotations

import time

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
from tenure.core.records import Ending, HeartbeatReply, WorkerRecord
from tenure.core.retry import Policy
from tenure.stores import Store


def test_heartbeat_renews_the_lease_and_stamps_the_attempt_and_worker(store: Store) -> None:
    store.heartbeat(worker=_record(W1.id))
    (job_id,) = enqueue(store, new_job())
    r = reserve_one(store, lease=5)
    seen_before = store.list_workers()[0].last_seen_at
    time.sleep(0.05)  # so the renewed lease is measurably later than the first
    assert store.heartbeat(worker=W1, leases=[(job_id, r.token)], lease=60).lost == []
    got = job(store, job_id)
    assert got.lease_expires_at is not None
    assert got.lease_expires_at > r.lease_expires_at + 50
    beat = attempt(store, job_id, 1).last_heartbeat_at
    assert beat is not None and beat > attempt(store, job_id, 1).started_at
    assert store.list_workers()[0].last_seen_at > seen_before


def test_heartbeat_keeps_a_slow_job_from_being_rescued(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    r = reserve_one(store, lease=0.6)
    deadline = time.monotonic() + 1.8  # three leases' worth of renewals
    while time.monotonic() < deadline:
        assert store.heartbeat(worker=W1, leases=[(job_id, r.token)], lease=0.6).lost == []
        assert store.sweep(prune=False).rescued == []
        time.sleep(0.1)
    assert job(store, job_id).state == "running"


def test_heartbeat_reports_leases_the_worker_no_longer_holds(store: Store) -> None:
    a, b, c = enqueue(store, new_job(), new_job(), new_job())
    held = store.reserve(queues=["default"], worker=W1, lease=30, limit=3)
    tokens = {r.job_id: r.token for r in held}
    store.end_attempt(Ending(job_id=c, token=tokens[c]))
    reply = store.heartbeat(
        worker=W1,
        leases=[(a, tokens[a]), (b, tokens[b] + 1), (c, tokens[c]), ("no-such-job", 1)],
        lease=30,
    )
    assert reply.lost == [b, c, "no-such-job"]
    assert reply.cancel == []


def test_heartbeat_with_nothing_held_is_fine(store: Store) -> None:
    assert store.heartbeat(worker=W1, leases=[], lease=30) == HeartbeatReply([], [], None)


def test_an_expired_lease_is_rescued_as_a_crash_naming_the_worker(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=3, backoff=0)))
    r = reserve_one(store, worker=W1, lease=0.5)
    assert store.sweep(prune=False).rescued == []  # not before the lease ends
    expire_and_rescue(store, job_id)
    a = attempt(store, job_id, 1)
    assert a.outcome == "crashed"
    # dated when its worker was last known alive, not at the rescue
    assert a.ended_at is not None and a.ended_at < r.lease_expires_at
    assert a.ended_at == (a.last_heartbeat_at or a.started_at)
    assert a.error is not None
    for detail in (W1.id, str(W1.pid), W1.host):
        assert detail in a.error
    got = job(store, job_id)
    assert got.state == "queued"
    assert (got.tries_used, got.exceptions) == (1, 1)
    assert got.lease_expires_at is None and got.worker_id is None
    assert got.last_error == a.error
    # the next attempt has the next token, so the crashed one's holder is fenced out
    again = reserve_one(store, worker=W2)
    assert (again.job_id, again.attempt, again.token) == (job_id, 2, 2)


def test_a_crash_is_dated_at_the_last_heartbeat_and_the_retry_at_the_rescue(
    store: Store,
) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=3, backoff=0)))
    r = reserve_one(store, worker=W1, lease=0.5)
    time.sleep(0.05)  # so the heartbeat is measurably later than the start
    assert store.heartbeat(worker=W1, leases=[(job_id, r.token)], lease=0.5).lost == []
    beat = attempt(store, job_id, 1).last_heartbeat_at
    assert beat is not None and beat > attempt(store, job_id, 1).started_at
    expire_and_rescue(store, job_id)
    a = attempt(store, job_id, 1)
    assert (a.outcome, a.ended_at) == ("crashed", beat)
    got = job(store, job_id)
    # the job's own timing is the rescue's: its retry is due then, after the lease ran out
    assert got.state == "queued" and got.run_at >= beat + 0.5


def test_rescue_reports_what_it_did(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=3, backoff=0)))
    reserve_one(store, lease=0.3)
    rescued = wait_until(lambda: store.sweep(prune=False).rescued, what="a rescue")
    assert [(x.job_id, x.attempt) for x in rescued] == [(job_id, 1)]
    assert rescued[0].result.accepted
    assert rescued[0].result.state == "queued"
    assert store.sweep(prune=False).rescued == []  # once only


def test_a_sweep_says_when_the_earliest_running_lease_lapses(store: Store) -> None:
    """Swept.next_lapse_in: the worker sweeps again then, so a crashed holder is rescued (and
    the jobs parked behind its concurrency slot handed back) as its lease lapses."""
    assert store.sweep(prune=False).next_lapse_in is None  # nothing runs
    enqueue(store, new_job(), new_job())
    reserve_one(store, lease=60)
    lapse = store.sweep(prune=False).next_lapse_in
    assert lapse is not None and 50 < lapse <= 60
    reserve_one(store, lease=20, worker=W2)
    lapse = store.sweep(prune=False).next_lapse_in
    assert lapse is not None and 10 < lapse <= 20  # the earlier of the two
    assert store.sweep(rescue=False, prune=False).next_lapse_in is None  # no rescue, no read


def test_a_rescued_job_retries_after_its_backoff(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=3, backoff=30)))
    reserve_one(store, lease=0.3)
    expire_and_rescue(store, job_id)
    got = job(store, job_id)
    assert got.state == "scheduled"
    # the backoff counts from the rescue: after the lease ran out, not from the crash's date
    # (the attempt's last heartbeat)
    crashed = attempt(store, job_id, 1).ended_at
    assert crashed is not None
    assert crashed + 0.3 + 30 <= got.run_at <= store.now() + 30


def test_crashes_use_up_tries_and_then_fail_the_job_with_a_reason(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=2, backoff=0)))
    for n in (1, 2):
        r = reserve_one(store, lease=0.3)
        assert r.attempt == n
        expire_and_rescue(store, job_id)
    got = job(store, job_id)
    assert got.state == "failed"
    assert got.finished_at is not None
    assert got.tries_used == 2
    assert got.last_error is not None and "used all 2 tries" in got.last_error
    assert [a.outcome for a in got.attempts] == ["crashed", "crashed"]
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=1) == []


def test_crashes_count_toward_max_exceptions(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=10, max_exceptions=1, backoff=0)))
    reserve_one(store, lease=0.3)
    wait_until(lambda: store.sweep(prune=False).rescued, what="a rescue")
    got = job(store, job_id)
    assert got.state == "failed"
    assert got.last_error is not None and "max_exceptions=1" in got.last_error


def test_count_crashes_false_keeps_crashes_out_of_max_exceptions(store: Store) -> None:
    policy = Policy(tries=5, max_exceptions=1, count_crashes=False, backoff=0)
    (job_id,) = enqueue(store, new_job(policy=policy))
    reserve_one(store, lease=0.3)
    expire_and_rescue(store, job_id)
    got = job(store, job_id)
    assert got.state == "queued"
    assert (got.tries_used, got.exceptions) == (1, 0)


def test_leases_are_measured_on_the_store_clock_not_the_workers(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker host whose clock runs two minutes off must neither lose its lease at once nor
    # keep it for two minutes: the store never asks the worker what time it is.
    (job_id,) = enqueue(store, new_job())
    true_now = store.now()
    for skew in (+120.0, -120.0):
        monkeypatch.setattr(time, "time", lambda skew=skew: _real_time() + skew)
        assert abs(store.now() - true_now) < 5.0
    monkeypatch.setattr(time, "time", lambda: _real_time() + 120.0)
    r = reserve_one(store, lease=1.0)
    assert r.lease_expires_at - store.now() == pytest.approx(1.0, abs=0.5)
    assert store.sweep(prune=False).rescued == []
    monkeypatch.setattr(time, "time", lambda: _real_time() - 120.0)
    expire_and_rescue(store, job_id, timeout=5.0)


_REAL_TIME = time.time


def _real_time() -> float:
    return _REAL_TIME()


def _record(worker_id: str) -> WorkerRecord:
    return WorkerRecord(
        id=worker_id,
        host="host-a",
        pid=4242,
        queues=("default",),
        concurrency=2,
        started_at=0.0,
        last_seen_at=0.0,
    )
