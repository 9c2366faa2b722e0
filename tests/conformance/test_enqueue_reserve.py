"""Enqueue, delay and reservation: what every backend hands out, in what order, to whom."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from conformance.helpers import W1, W2, counts, enqueue, job, new_job, reserve_one, wait_until
from tenure.core.guards import Guards
from tenure.core.retry import Policy
from tenure.stores import Store
from tenure.stores.base import get_job


def test_enqueue_many_makes_queued_jobs_with_everything_they_were_sent_with(store: Store) -> None:
    policy = Policy(timeout=12.0, tries=5, backoff=[1, 2], max_exceptions=4, count_crashes=False)
    jobs = [new_job(policy=policy, batch_id="b1", payload=f'{{"n":{i}}}') for i in range(3)]
    before = store.now()
    store.enqueue_many(jobs)
    after = store.now()
    for sent in jobs:
        got = job(store, sent.id)
        assert (got.name, got.queue, got.payload, got.batch_id) == (
            sent.name,
            sent.queue,
            sent.payload,
            "b1",
        )
        assert got.state == "queued"
        assert got.policy == policy
        assert before - 0.01 <= got.created_at <= after + 0.01
        assert got.run_at == got.created_at
        assert (got.tries_used, got.exceptions, got.finished_at) == (0, 0, None)
        assert got.lease_expires_at is None and got.worker_id is None
        assert got.attempts == []


def test_enqueue_of_nothing_is_a_no_op(store: Store) -> None:
    store.enqueue_many([])
    assert sum(counts(store).values()) == 0


def test_get_job_of_an_unknown_id_is_none(store: Store) -> None:
    assert get_job(store, "no-such-job") is None


def test_a_delayed_job_is_scheduled_then_becomes_ready_on_the_store_clock(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(delay=0.6))
    got = job(store, job_id)
    assert got.state == "scheduled"
    assert got.run_at - got.created_at == _approx(0.6)
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=5) == []
    assert counts(store)["scheduled"] == 1

    reserved = wait_until(
        lambda: store.reserve(queues=["default"], worker=W1, lease=30, limit=5),
        what="the delayed job to become ready",
    )
    assert [r.job_id for r in reserved] == [job_id]
    # never before its time, measured on the store's clock
    assert attempt_start(store, job_id) >= got.run_at


def test_a_negative_delay_means_now(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(delay=-5))
    got = job(store, job_id)
    assert got.state == "queued" and got.run_at == got.created_at


def test_reserve_opens_an_attempt_and_fences_it_with_the_attempt_number(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(batch_id="b7"))
    before = store.now()
    r = reserve_one(store, lease=20)
    after = store.now()
    assert (r.job_id, r.attempt, r.token, r.batch_id) == (job_id, 1, 1, "b7")
    assert before + 20 - 0.01 <= r.lease_expires_at <= after + 20 + 0.01
    got = job(store, job_id)
    assert got.state == "running"
    assert got.worker_id == W1.id
    assert got.lease_expires_at == _approx(r.lease_expires_at)
    (a,) = got.attempts
    assert (a.number, a.worker_id, a.host, a.pid) == (1, W1.id, W1.host, W1.pid)
    assert a.worker == W1.id
    assert (a.outcome, a.ended_at, a.error, a.traceback) == (None, None, None, None)
    assert before - 0.01 <= a.started_at <= after + 0.01


def test_reserve_hands_out_the_payload_and_policy(store: Store) -> None:
    policy = Policy(timeout=3.5, kill_after=1.0, tries=7, backoff="exponential")
    (_job_id,) = enqueue(store, new_job(policy=policy, name="export", payload='{"x":"é"}'))
    r = reserve_one(store)
    assert (r.name, r.queue, r.payload, r.policy) == ("export", "default", '{"x":"é"}', policy)


def test_reserve_takes_earlier_queues_first_and_each_queue_in_order(store: Store) -> None:
    low = enqueue(store, *[new_job(queue="low") for _ in range(3)])
    high = enqueue(store, *[new_job(queue="high") for _ in range(2)])
    enqueue(store, new_job(queue="elsewhere"))
    got = store.reserve(queues=["high", "low"], worker=W1, lease=30, limit=4)
    assert [r.job_id for r in got] == [*high, *low[:2]]
    assert [r.queue for r in got] == ["high", "high", "low", "low"]
    rest = store.reserve(queues=["low", "high"], worker=W1, lease=30, limit=10)
    assert [r.job_id for r in rest] == low[2:]


def test_reserve_respects_the_limit(store: Store) -> None:
    enqueue(store, *[new_job() for _ in range(5)])
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=0) == []
    assert len(store.reserve(queues=["default"], worker=W1, lease=30, limit=2)) == 2
    assert len(store.reserve(queues=["default"], worker=W1, lease=30, limit=2)) == 2
    assert len(store.reserve(queues=["default"], worker=W1, lease=30, limit=2)) == 1
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=2) == []


def test_reserve_never_hands_out_a_job_twice(store: Store, other_store: Store) -> None:
    ids = enqueue(store, *[new_job() for _ in range(6)])
    first = store.reserve(queues=["default"], worker=W1, lease=30, limit=4)
    second = other_store.reserve(queues=["default"], worker=W2, lease=30, limit=4)
    third = store.reserve(queues=["default"], worker=W1, lease=30, limit=4)
    handed = [r.job_id for r in first + second + third]
    assert sorted(handed) == sorted(ids)
    assert third == []


def test_reserve_from_queues_with_nothing_ready_returns_nothing(store: Store) -> None:
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=3) == []
    assert store.reserve(queues=[], worker=W1, lease=30, limit=3) == []


def test_a_queue_name_is_matched_exactly(store: Store) -> None:
    enqueue(store, new_job(queue="mail"), new_job(queue="mail:slow"), new_job(queue="Mail"))
    got = store.reserve(queues=["mail"], worker=W1, lease=30, limit=10)
    assert [r.queue for r in got] == ["mail"]


def test_the_store_clock_is_the_wall_clock_of_the_server(store: Store) -> None:
    # Same machine in the tests: the store's clock and ours agree closely.
    assert abs(store.now() - time.time()) < 2.0
    a = store.now()
    b = store.now()
    assert b >= a


def test_migrate_is_idempotent_and_keeps_data(store: Store, other_store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    store.migrate()
    other_store.migrate()
    assert job(other_store, job_id).state == "queued"


def _approx(x: float) -> object:
    return pytest.approx(x, abs=0.01)


def attempt_start(store: Store, job_id: str) -> float:
    return job(store, job_id).attempts[-1].started_at


def test_guard_seconds_given_as_int_and_float_enqueue_together(store: Store) -> None:
    # psycopg once refused the batch: a list mixing int (30) and float (1.0) has no one type
    whole = replace(new_job(), guards=Guards(overlap_key="a", overlap_delay=30))
    rate = replace(new_job(), guards=Guards(rate_key="r", rate_limit=5, rate_window=2))
    ids = enqueue(store, whole, rate, new_job())
    assert [job(store, i).state for i in ids] == ["queued"] * 3
