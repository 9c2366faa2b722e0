"""Batches in the store: counts that are never torn, callbacks enqueued exactly once,
progress that never goes backwards, and cancel that stops the work not yet started."""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import pytest

from conformance.helpers import W1, batch, drain_in_threads, job, new_job, reserve_one
from tenure.core.records import Ending, NewBatch, NewJob, Reservation
from tenure.core.retry import Policy
from tenure.stores import Store
from tenure.stores.base import get_batch, get_job

ONE_TRY = Policy(tries=1, backoff=0)


def make_batch(
    store: Store,
    members: Sequence[NewJob],
    *,
    total: int | None = None,
    allow_failures: bool = False,
    callbacks: bool = True,
) -> str:
    batch_id = secrets.token_hex(6)
    store.enqueue_many(
        list(members),
        batch=NewBatch(
            id=batch_id,
            name="invoices",
            total=total,
            allow_failures=allow_failures,
            then=new_job(queue="callbacks", name="then") if callbacks else None,
            catch=new_job(queue="callbacks", name="catch") if callbacks else None,
            finally_=new_job(queue="callbacks", name="finally") if callbacks else None,
        ),
    )
    return batch_id


def callbacks_enqueued(store: Store) -> list[str]:
    return sorted(j.name for j in store.list_jobs(queue="callbacks"))


def run_all(store: Store, *, fail: Sequence[str] = ()) -> None:
    """Reserve every ready member; succeed it, or fail it for good if its id is in `fail`."""
    while got := store.reserve(queues=["default"], worker=W1, lease=30, limit=10):
        for r in got:
            if r.job_id in fail:
                store.end_attempt(
                    Ending(
                        job_id=r.job_id,
                        token=r.token,
                        outcome="failed",
                        error="bad",
                        permanent=True,
                    )
                )
            else:
                assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted


@pytest.mark.batches_across_queues
def test_a_new_batch_counts_its_members(store: Store) -> None:
    members = [new_job() for _ in range(3)]
    batch_id = make_batch(store, members, total=5)
    b = batch(store, batch_id)
    assert (b.name, b.state, b.jobs, b.total, b.declared_total) == ("invoices", "running", 3, 5, 5)
    assert (b.done, b.failed, b.cancelled, b.pending) == (0, 0, 0, 5)
    assert b.progress == 0.0 and b.finished_at is None
    assert all(job(store, m.id).batch_id == batch_id for m in members)
    assert get_batch(store, "no-such-batch") is None


@pytest.mark.batches_across_queues
def test_list_batches_is_newest_first(store: Store) -> None:
    first = make_batch(store, [new_job()])
    second = make_batch(store, [new_job()])
    assert [b.id for b in store.list_batches()] == [second, first]
    assert [b.id for b in store.list_batches(limit=1)] == [second]


@pytest.mark.batches_across_queues
def test_list_batches_by_id_keeps_the_order_asked_and_skips_unknown_ids(store: Store) -> None:
    first = make_batch(store, [new_job()])
    second = make_batch(store, [new_job()])
    listed = store.list_batches(ids=[first, "no-such-batch", second, first], limit=1)
    assert [b.id for b in listed] == [first, second]
    assert store.list_batches(ids=[]) == []


@pytest.mark.batches_across_queues
def test_all_members_succeeding_enqueues_then_and_finally_once(store: Store) -> None:
    batch_id = make_batch(store, [new_job() for _ in range(3)])
    run_all(store)
    b = batch(store, batch_id)
    assert (b.state, b.done, b.progress) == ("succeeded", 3, 1.0)
    assert b.finished_at is not None
    assert callbacks_enqueued(store) == ["finally", "then"]
    assert b.then_job_id is not None and job(store, b.then_job_id).name == "then"
    assert b.catch_job_id is None


@pytest.mark.batches_across_queues
def test_a_failed_member_fails_the_batch_and_cancels_the_rest(store: Store) -> None:
    members = [new_job(policy=ONE_TRY) for _ in range(4)]
    batch_id = make_batch(store, members)
    first = reserve_one(store)
    store.end_attempt(Ending(job_id=first.job_id, token=first.token, outcome="failed", error="bad"))
    b = batch(store, batch_id)
    assert (b.state, b.failed, b.cancelled, b.pending) == ("failed", 1, 3, 0)
    assert callbacks_enqueued(store) == ["catch", "finally"]
    assert {job(store, m.id).state for m in members if m.id != first.job_id} == {"cancelled"}
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=10) == []


@pytest.mark.batches_across_queues
def test_allow_failures_still_runs_then_and_catch(store: Store) -> None:
    members = [new_job() for _ in range(3)]
    batch_id = make_batch(store, members, allow_failures=True)
    run_all(store, fail=[members[1].id])
    b = batch(store, batch_id)
    assert (b.state, b.done, b.failed) == ("succeeded", 2, 1)
    assert callbacks_enqueued(store) == ["catch", "finally", "then"]


def test_an_empty_batch_finishes_at_once(store: Store) -> None:
    batch_id = make_batch(store, [])
    assert batch(store, batch_id).state == "succeeded"
    assert callbacks_enqueued(store) == ["finally", "then"]


@pytest.mark.batches_across_queues
def test_cancel_stops_queued_members_and_a_running_ones_retry(store: Store) -> None:
    members = [new_job(policy=Policy(tries=3, backoff=0)) for _ in range(3)]
    batch_id = make_batch(store, members)
    running = reserve_one(store)
    assert store.cancel(batch_id=batch_id).accepted
    assert not store.cancel(batch_id=batch_id).accepted
    b = batch(store, batch_id)
    assert (b.state, b.cancelled) == ("cancelled", 2)
    result, _ = store.end_attempt(
        Ending(job_id=running.job_id, token=running.token, outcome="failed", error="e")
    )
    assert result.state == "cancelled"
    b = batch(store, batch_id)
    assert (b.cancelled, b.pending) == (3, 0)
    assert b.finished_at is not None
    assert callbacks_enqueued(store) == ["finally"]
    assert not store.cancel(batch_id="no-such-batch").accepted


@pytest.mark.batches_across_queues
def test_add_to_batch_skips_members_it_already_has(store: Store) -> None:
    a, b_, c = new_job(), new_job(), new_job()
    batch_id = make_batch(store, [a], total=4)
    assert store.enqueue_many([a, b_], into_batch=batch_id) == [b_.id]  # the ids it added
    assert store.enqueue_many([b_], into_batch=batch_id) == []
    assert store.enqueue_many([c, c], into_batch=batch_id) == [c.id]  # once, though given twice
    assert batch(store, batch_id).jobs == 3
    assert job(store, b_.id).batch_id == batch_id


def test_creating_a_batch_returns_its_members_ids_in_order(store: Store) -> None:
    members = [new_job() for _ in range(3)]
    created = store.enqueue_many(members, batch=NewBatch(id=secrets.token_hex(6), name="ids"))
    assert created == [m.id for m in members]
    with pytest.raises(ValueError, match="not both"):
        store.enqueue_many([new_job()], batch=NewBatch(id="b", name="b"), into_batch="b")


@pytest.mark.batches_across_queues
def test_add_to_a_finished_batch_adds_nothing(store: Store) -> None:
    batch_id = make_batch(store, [new_job()])
    run_all(store)
    extra = new_job()
    assert len(store.enqueue_many([extra], into_batch=batch_id)) == 0
    assert get_job(store, extra.id) is None


def test_progress_against_a_declared_total_never_goes_back(store: Store) -> None:
    batch_id = make_batch(store, [new_job(), new_job()], total=10, callbacks=False)
    r = reserve_one(store)
    store.report_progress(job_id=r.job_id, token=r.token, fraction=0.5)
    assert batch(store, batch_id).progress == pytest.approx(0.05)
    store.report_progress(job_id=r.job_id, token=r.token, fraction=0.2)  # kept at the max
    store.report_progress(job_id=r.job_id, token=r.token + 1, fraction=0.9)  # stale: ignored
    assert batch(store, batch_id).progress == pytest.approx(0.05)
    store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    assert batch(store, batch_id).progress == pytest.approx(0.1)
    store.enqueue_many([new_job(), new_job()], into_batch=batch_id)
    b = batch(store, batch_id)
    assert b.progress == pytest.approx(0.1) and b.total == 10 and b.jobs == 4


@pytest.mark.batches_across_queues
def test_members_ending_at_once_keep_exact_counts_and_one_then(
    store: Store, store_url: str
) -> None:
    members = [new_job() for _ in range(60)]
    batch_id = make_batch(store, members)

    def succeed(own: Store, r: Reservation) -> None:
        assert own.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted

    drain_in_threads(store_url, succeed)
    b = batch(store, batch_id)
    assert (b.state, b.done, b.pending) == ("succeeded", 60, 0)
    assert callbacks_enqueued(store) == ["finally", "then"]
