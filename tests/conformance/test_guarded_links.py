"""Overlap and rate guards of jobs the store queues itself, on every backend: a chain's later
link (queued when the previous link succeeds) and a batch callback (queued when the batch
settles) are written down as records until their turn, and keep their guards there, so they
are deferred exactly as a plain guarded job is. Two runs of one overlap key never run at once,
whoever queued them."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import replace

import pytest

import tenure
from conformance.helpers import W1, W2, enqueue, job, new_job, reserve_one, wait_until
from conformance.test_guards import guarded, outcomes
from tenure.core import chains
from tenure.core.guards import Guards
from tenure.core.records import Ending, NewBatch, NewJob, Reservation
from tenure.stores import Store

KEY = Guards(overlap_key="customer:1", overlap_delay=0.3)


def running_holder(store: Store) -> Reservation:
    """A plain job holding the overlap key KEY, running."""
    holder = guarded(KEY)
    enqueue(store, holder)
    return reserve_one(store, worker=W2)


def chain_of(*links: NewJob) -> tuple[NewJob, list[str]]:
    """The first link to enqueue (carrying the rest) and every link's id, in order."""
    chain_id = secrets.token_hex(6)
    ids = [chains.link_id(chain_id, k + 1) for k in range(len(links))]
    named = [replace(link, id=i) for link, i in zip(links, ids, strict=True)]
    first = chains.first_link(chain_id, named, catch=None, finally_=None, pass_result=False)
    return first, ids


def assert_deferred_by(store: Store, job_id: str, holder: Reservation) -> None:
    """`job_id` was looked at and deferred for the holder of KEY, as a plain job is."""
    assert store.reserve(queues=["default"], worker=W1, lease=30) == []
    held = job(store, job_id)
    assert held.state == "scheduled" and held.tries_used == 0
    assert outcomes(store, job_id) == ["deferred"]
    error = held.attempts[0].error or ""
    assert "customer:1" in error and holder.job_id in error and "deferred 0.3 s" in error


def assert_runs_once_free(store: Store, job_id: str, holder: Reservation) -> None:
    assert store.end_attempt(Ending(job_id=holder.job_id, token=holder.token))[0].accepted
    got = wait_until(
        lambda: store.reserve(queues=["default"], worker=W1, lease=30),
        what="the deferred job to start once the key is free",
    )
    assert [r.job_id for r in got] == [job_id]
    assert store.end_attempt(Ending(job_id=job_id, token=got[0].token))[0].accepted
    done = job(store, job_id)
    assert done.state == "succeeded" and done.tries_used == 1
    assert outcomes(store, job_id) == ["deferred", "succeeded"]


def test_a_chains_later_link_keeps_its_overlap_guard(store: Store) -> None:
    holder = running_holder(store)
    first, (_, second_id) = chain_of(new_job(name="fetch"), guarded(KEY, name="sync"))
    enqueue(store, first)
    r = reserve_one(store)
    assert r.job_id == first.id
    assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    assert job(store, second_id).state == "queued"  # the store queued the next link
    assert_deferred_by(store, second_id, holder)
    assert_runs_once_free(store, second_id, holder)


def test_a_batch_then_callback_keeps_its_overlap_guard(store: Store) -> None:
    holder = running_holder(store)
    then = guarded(KEY, name="then")
    batch_id = secrets.token_hex(6)
    member = new_job()
    store.enqueue_many([member], batch=NewBatch(id=batch_id, name="b", then=then))
    r = reserve_one(store)
    assert r.job_id == member.id
    assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    batch = store.list_batches(ids=[batch_id])[0]
    assert batch.state == "succeeded" and batch.then_job_id == then.id
    assert_deferred_by(store, then.id, holder)
    assert_runs_once_free(store, then.id, holder)


def test_a_chain_link_respects_its_rate_limit(store: Store) -> None:
    # a window far longer than the test: the link is deferred to one window after the start
    # that filled it, and never reserved before then
    rate = Guards(rate_key="api", rate_limit=1, rate_window=60.0)
    plain = guarded(rate)
    enqueue(store, plain)
    started = reserve_one(store, worker=W2)
    assert store.end_attempt(Ending(job_id=started.job_id, token=started.token))[0].accepted
    first, (_, second_id) = chain_of(new_job(name="fetch"), guarded(rate, name="call_api"))
    enqueue(store, first)
    r = reserve_one(store)
    assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    assert store.reserve(queues=["default"], worker=W1, lease=30) == []
    held = job(store, second_id)
    assert held.state == "scheduled" and held.tries_used == 0
    assert outcomes(store, second_id) == ["deferred"]
    error = held.attempts[0].error or ""
    assert "rate limit 1 per 60 s" in error and "'api'" in error
    window_start = job(store, plain.id).attempts[0].started_at
    assert held.run_at == pytest.approx(window_start + 60.0, abs=0.5)
    assert store.reserve(queues=["default"], worker=W1, lease=30) == []


@pytest.fixture
def app(store_url: str, store: Store) -> Iterator[tenure.App]:
    application = tenure.App(store_url)

    @application.job(name="sync", backoff=0, overlap=lambda customer: customer, overlap_delay=0.3)
    def sync(customer: int) -> None:
        pass

    @application.job(name="step", backoff=0)
    def step() -> None:
        pass

    try:
        yield application
    finally:
        application.close()


def test_a_job_declared_with_overlap_keeps_it_as_a_link_and_as_a_callback(
    app: tenure.App, store: Store
) -> None:
    """The same through the application: the guard computed at dispatch reaches the row or
    hash the store writes when the link's or callback's turn comes."""
    sync, step = app.get_definition("sync"), app.get_definition("step")
    sync.dispatch(1)
    holder = reserve_one(store, worker=W2)
    chain = app.chain([step.sig(), sync.sig(1)])
    batch = app.batch([step.sig()], then=sync.sig(1))
    for _ in range(2):  # the first link and the batch's member
        r = reserve_one(store)
        assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    then_id = store.list_batches(ids=[batch.id])[0].then_job_id
    assert then_id is not None
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=2) == []
    for job_id in (chain.links[1].id, then_id):
        assert outcomes(store, job_id) == ["deferred"]
        assert holder.job_id in (job(store, job_id).attempts[0].error or "")
