"""A batch through its whole life, the same on every backend: members ending by every path
(complete, end_attempt, rescue of an expired lease), callbacks enqueued exactly once with their
job ids on the record, the first failure stopping the work not yet started, cancel, progress
that never goes backwards against a declared total, and damaged batch records that must not
crash a reader. (tests/conformance/test_batches.py covers the basics these build on.)
"""

from __future__ import annotations

import itertools
import logging
import secrets
from collections.abc import Sequence

import pytest

from backends.kit import Kit
from conformance.helpers import (
    W1,
    batch,
    counts,
    drain_in_threads,
    expire_and_rescue,
    job,
    new_job,
    reserve_one,
)
from tenure.core.records import BatchRecord, Ending, NewBatch, NewJob, Reservation
from tenure.core.retry import Policy
from tenure.stores import Store
from tenure.stores.base import get_job

ONE_TRY = Policy(tries=1, backoff=0)
TWO_TRIES = Policy(tries=2, backoff=0)
CALLBACKS = "callbacks"


def make_batch(
    store: Store,
    members: Sequence[NewJob],
    *,
    total: int | None = None,
    allow_failures: bool = False,
) -> str:
    batch_id = secrets.token_hex(6)
    store.enqueue_many(
        list(members),
        batch=NewBatch(
            id=batch_id,
            name="exports",
            total=total,
            allow_failures=allow_failures,
            then=new_job(queue=CALLBACKS, name="then", payload='{"args":["then"],"kwargs":{}}'),
            catch=new_job(queue=CALLBACKS, name="catch"),
            finally_=new_job(queue=CALLBACKS, name="finally"),
        ),
    )
    return batch_id


def callbacks(store: Store) -> list[str]:
    """The callback jobs enqueued so far, by name: each may appear once at most."""
    return sorted(j.name for j in store.list_jobs(queue=CALLBACKS))


def assert_callback_ids(store: Store, b: BatchRecord, *kinds: str) -> None:
    """The record names exactly the callback jobs that exist, one job per kind."""
    recorded = {"then": b.then_job_id, "catch": b.catch_job_id, "finally": b.finally_job_id}
    assert {k for k, v in recorded.items() if v is not None} == set(kinds)
    jobs = store.list_jobs(queue=CALLBACKS)
    assert sorted(j.id for j in jobs) == sorted(v for v in recorded.values() if v is not None)
    for kind in kinds:
        found = job(store, recorded[kind] or "")
        assert (found.name, found.queue, found.batch_id) == (kind, CALLBACKS, None)


def fail_for_good(store: Store, job_id: str, token: int) -> None:
    result, _ = store.end_attempt(
        Ending(job_id=job_id, token=token, outcome="failed", error="bad row", permanent=True)
    )
    assert result.accepted and result.state == "failed"


# -- creating and adding -------------------------------------------------------------------
@pytest.mark.batches_across_queues
def test_without_a_declared_total_progress_is_the_share_of_members_settled(store: Store) -> None:
    batch_id = make_batch(store, [new_job() for _ in range(4)])
    b = batch(store, batch_id)
    assert (b.total, b.jobs, b.declared_total, b.pending) == (4, 4, None, 4)
    r = reserve_one(store)
    store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    assert batch(store, batch_id).progress == pytest.approx(0.25)
    assert len(store.enqueue_many([new_job() for _ in range(4)], into_batch=batch_id)) == 4
    b = batch(store, batch_id)
    # no total was promised, so adding work may move the bar back: that is what totals are for
    assert (b.total, b.jobs, b.done, b.pending) == (8, 8, 1, 7)
    assert b.progress == pytest.approx(1 / 8)


@pytest.mark.batches_across_queues
def test_a_declared_total_smaller_than_the_members_gives_way_to_them(store: Store) -> None:
    batch_id = make_batch(store, [new_job() for _ in range(2)], total=2)
    store.enqueue_many([new_job()], into_batch=batch_id)
    b = batch(store, batch_id)
    assert (b.total, b.jobs, b.declared_total, b.pending) == (3, 3, 2, 3)


@pytest.mark.batches_across_queues
def test_members_are_ordinary_jobs_of_their_own_queues(store: Store) -> None:
    here, there = new_job(queue="default"), new_job(queue="reports", delay=3600)
    batch_id = make_batch(store, [here, there])
    assert (job(store, here.id).state, job(store, there.id).state) == ("queued", "scheduled")
    assert job(store, there.id).batch_id == batch_id
    assert reserve_one(store, queues=["reports", "default"]).job_id == here.id


@pytest.mark.batches_across_queues
def test_adding_stops_once_the_batch_failed_or_was_cancelled(store: Store) -> None:
    failing = make_batch(store, [new_job(policy=ONE_TRY), new_job()])
    r = reserve_one(store)
    fail_for_good(store, r.job_id, r.token)
    late = new_job()
    assert len(store.enqueue_many([late], into_batch=failing)) == 0
    assert get_job(store, late.id) is None

    cancelled = make_batch(store, [new_job()])
    assert store.cancel(batch_id=cancelled).accepted
    assert len(store.enqueue_many([late], into_batch=cancelled)) == 0
    assert len(store.enqueue_many([late], into_batch="no-such-batch")) == 0
    assert get_job(store, late.id) is None


@pytest.mark.batches_across_queues
def test_an_empty_batch_settles_at_once_and_records_its_callbacks(store: Store) -> None:
    batch_id = make_batch(store, [], total=None)
    b = batch(store, batch_id)
    assert (b.state, b.progress, b.pending, b.jobs) == ("succeeded", 1.0, 0, 0)
    assert b.finished_at is not None
    assert_callback_ids(store, b, "then", "finally")
    assert job(store, b.then_job_id or "").payload == '{"args":["then"],"kwargs":{}}'
    assert len(store.enqueue_many([new_job()], into_batch=batch_id)) == 0
    assert not store.cancel(batch_id=batch_id).accepted


@pytest.mark.batches_across_queues
def test_list_batches_is_newest_first_and_includes_finished_ones(store: Store) -> None:
    ids = [make_batch(store, [new_job()]), make_batch(store, []), make_batch(store, [new_job()])]
    listed = store.list_batches()
    assert [b.id for b in listed] == ids[::-1]
    assert [b.state for b in listed] == ["running", "succeeded", "running"]
    assert [b.id for b in store.list_batches(limit=2)] == ids[:0:-1]
    assert store.list_batches(limit=0) == []


# -- members ending, callbacks once ----------------------------------------------------------
@pytest.mark.batches_across_queues
def test_callbacks_are_jobs_enqueued_once_and_named_on_the_record(store: Store) -> None:
    members = [new_job() for _ in range(3)]
    batch_id = make_batch(store, members)
    for _ in members:
        r = reserve_one(store)
        assert batch(store, batch_id).finished_at is None
        assert callbacks(store) == []
        store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    b = batch(store, batch_id)
    assert (b.state, b.done, b.pending, b.progress) == ("succeeded", 3, 0, 1.0)
    assert_callback_ids(store, b, "then", "finally")
    # running the callbacks changes nothing about the batch: they are not its members
    for r in store.reserve(queues=[CALLBACKS], worker=W1, lease=30, limit=10):
        store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    assert batch(store, batch_id) == b
    assert callbacks(store) == ["finally", "then"]


@pytest.mark.batches_across_queues
def test_the_first_failure_cancels_queued_and_scheduled_members_not_running_ones(
    store: Store,
) -> None:
    first, running, waiting, later = (
        new_job(policy=ONE_TRY),
        new_job(),
        new_job(),
        new_job(delay=3600),
    )
    batch_id = make_batch(store, [first, running, waiting, later])
    got = store.reserve(queues=["default"], worker=W1, lease=30, limit=2)
    assert [r.job_id for r in got] == [first.id, running.id]
    fail_for_good(store, first.id, got[0].token)
    b = batch(store, batch_id)
    assert (b.state, b.failed, b.cancelled, b.pending) == ("failed", 1, 2, 1)
    assert (job(store, waiting.id).state, job(store, later.id).state) == ("cancelled", "cancelled")
    assert b.finished_at is None  # one member still runs
    assert_callback_ids(store, b, "catch")
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=10) == []
    # the running member finishes and is counted; the batch stays failed; then never runs
    assert store.end_attempt(Ending(job_id=running.id, token=got[1].token))[0].accepted
    b = batch(store, batch_id)
    assert (b.state, b.done, b.failed, b.cancelled, b.pending) == ("failed", 1, 1, 2, 0)
    assert b.finished_at is not None
    assert_callback_ids(store, b, "catch", "finally")


@pytest.mark.batches_across_queues
def test_a_retry_of_a_member_of_a_failed_batch_is_cancelled_instead(store: Store) -> None:
    doomed, retried = new_job(policy=ONE_TRY), new_job(policy=TWO_TRIES)
    batch_id = make_batch(store, [doomed, retried])
    got = store.reserve(queues=["default"], worker=W1, lease=30, limit=2)
    fail_for_good(store, doomed.id, got[0].token)
    result, _ = store.end_attempt(
        Ending(job_id=retried.id, token=got[1].token, outcome="failed", error="e")
    )
    assert (result.accepted, result.state) == (True, "cancelled")
    assert job(store, retried.id).state == "cancelled"
    b = batch(store, batch_id)
    assert (b.state, b.failed, b.cancelled, b.pending) == ("failed", 1, 1, 0)
    assert callbacks(store) == ["catch", "finally"]


@pytest.mark.batches_across_queues
def test_a_member_whose_lease_expired_is_rescued_into_its_batch(store: Store) -> None:
    fragile, other = new_job(policy=ONE_TRY), new_job()
    batch_id = make_batch(store, [fragile, other])
    r = store.reserve(queues=["default"], worker=W1, lease=0.2, limit=1)[0]
    assert r.job_id == fragile.id
    expire_and_rescue(store, fragile.id)
    assert job(store, fragile.id).state == "failed"
    b = batch(store, batch_id)
    assert (b.state, b.failed, b.cancelled) == ("failed", 1, 1)
    assert_callback_ids(store, b, "catch", "finally")


@pytest.mark.batches_across_queues
def test_a_rescued_member_with_tries_left_runs_again_and_counts_once(store: Store) -> None:
    member = new_job(policy=TWO_TRIES)
    batch_id = make_batch(store, [member])
    store.reserve(queues=["default"], worker=W1, lease=0.2, limit=1)
    expire_and_rescue(store, member.id)
    b = batch(store, batch_id)
    assert (b.state, b.failed, b.pending, b.finished_at) == ("running", 0, 1, None)
    again = reserve_one(store)
    assert (again.job_id, again.attempt) == (member.id, 2)
    store.end_attempt(Ending(job_id=member.id, token=again.token))
    b = batch(store, batch_id)
    assert (b.state, b.done, b.failed) == ("succeeded", 1, 0)
    assert callbacks(store) == ["finally", "then"]


@pytest.mark.batches_across_queues
def test_allow_failures_counts_every_failure_sends_catch_once_and_then(store: Store) -> None:
    members = [new_job(policy=ONE_TRY) for _ in range(5)]
    batch_id = make_batch(store, members, allow_failures=True)
    for n in range(5):
        r = reserve_one(store)
        if n % 2 == 0:
            store.end_attempt(Ending(job_id=r.job_id, token=r.token, outcome="failed", error="e"))
        else:
            store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    b = batch(store, batch_id)
    assert (b.state, b.done, b.failed, b.cancelled, b.progress) == ("succeeded", 2, 3, 0, 1.0)
    assert_callback_ids(store, b, "then", "catch", "finally")


@pytest.mark.batches_across_queues
def test_members_failing_at_once_send_catch_once(store: Store, store_url: str) -> None:
    members = [new_job(policy=ONE_TRY) for _ in range(24)]
    batch_id = make_batch(store, members, allow_failures=True)

    def fail(own: Store, r: Reservation) -> None:
        own.end_attempt(Ending(job_id=r.job_id, token=r.token, outcome="failed", error="e"))

    drain_in_threads(store_url, fail)
    b = batch(store, batch_id)
    assert (b.state, b.failed, b.pending) == ("succeeded", 24, 0)
    assert callbacks(store) == ["catch", "finally", "then"]


# -- cancel ----------------------------------------------------------------------------------
@pytest.mark.batches_across_queues
def test_cancel_lets_running_members_finish_then_sends_finally_once(store: Store) -> None:
    members = [new_job() for _ in range(4)]
    batch_id = make_batch(store, members)
    running = store.reserve(queues=["default"], worker=W1, lease=30, limit=2)
    assert store.cancel(batch_id=batch_id).accepted
    assert not store.cancel(batch_id=batch_id).accepted
    b = batch(store, batch_id)
    assert (b.state, b.cancelled, b.pending, b.finished_at) == ("cancelled", 2, 2, None)
    assert callbacks(store) == []
    assert store.reserve(queues=["default"], worker=W1, lease=30, limit=10) == []
    assert store.end_attempt(Ending(job_id=running[0].job_id, token=running[0].token))[0].accepted
    assert callbacks(store) == []  # one member is still running
    assert store.end_attempt(Ending(job_id=running[1].job_id, token=running[1].token))[0].accepted
    b = batch(store, batch_id)
    assert (b.state, b.done, b.cancelled, b.pending) == ("cancelled", 2, 2, 0)
    assert b.finished_at is not None
    assert_callback_ids(store, b, "finally")
    assert not store.cancel(batch_id=batch_id).accepted


@pytest.mark.batches_across_queues
def test_cancel_with_nothing_running_settles_at_once(store: Store) -> None:
    batch_id = make_batch(store, [new_job(), new_job(delay=3600)], total=10)
    assert store.cancel(batch_id=batch_id).accepted
    b = batch(store, batch_id)
    assert (b.state, b.cancelled, b.jobs, b.finished_at is not None) == ("cancelled", 2, 2, True)
    assert_callback_ids(store, b, "finally")
    assert counts(store)["cancelled"] == 2
    assert not store.cancel(batch_id="no-such-batch").accepted


# -- progress --------------------------------------------------------------------------------
@pytest.mark.batches_across_queues
def test_progress_against_a_declared_total_never_goes_back_through_a_whole_life(
    store: Store,
) -> None:
    first = [new_job(policy=TWO_TRIES) for _ in range(2)]
    batch_id = make_batch(store, first, total=6)
    samples = [batch(store, batch_id).progress]

    def sample() -> None:
        samples.append(batch(store, batch_id).progress)

    a = reserve_one(store)
    for fraction in (0.3, 0.6, 0.4, 0.6, -1.0):  # kept as the highest ever reported
        store.report_progress(job_id=a.job_id, token=a.token, fraction=fraction)
        sample()
    assert samples[-1] == pytest.approx(0.6 / 6)
    # a failed attempt keeps the member's share: the retry resumes from there
    store.end_attempt(Ending(job_id=a.job_id, token=a.token, outcome="failed", error="e"))
    sample()
    assert samples[-1] == pytest.approx(0.6 / 6)
    store.enqueue_many([new_job() for _ in range(2)], into_batch=batch_id)  # a slice
    sample()
    while got := store.reserve(queues=["default"], worker=W1, lease=30, limit=1):
        r = got[0]
        store.report_progress(job_id=r.job_id, token=r.token, fraction=0.5)
        sample()
        store.report_progress(job_id=r.job_id, token=r.token, fraction=2.0)  # clamped to 1
        sample()
        store.end_attempt(Ending(job_id=r.job_id, token=r.token))
        store.report_progress(job_id=r.job_id, token=r.token, fraction=0.1)  # ended: ignored
        sample()
        if batch(store, batch_id).jobs < 6:
            store.enqueue_many([new_job()], into_batch=batch_id)
            sample()
    b = batch(store, batch_id)
    assert (b.state, b.done, b.jobs, b.total) == ("succeeded", 6, 6, 6)
    assert samples[-1] == 1.0
    assert all(x <= y for x, y in itertools.pairwise(samples)), samples


def test_progress_of_a_member_outside_any_batch_is_harmless(store: Store) -> None:
    loner = new_job()
    store.enqueue_many([loner])
    r = reserve_one(store)
    store.report_progress(job_id=r.job_id, token=r.token, fraction=0.5)
    store.report_progress(job_id="no-such-job", token=1, fraction=0.5)
    assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted


# -- damaged records ----------------------------------------------------------------------------
NUMBERS_DAMAGE = {"jobs": "garbage", "declared_total": "x", "done": "3.5.1", "failed": "-4"}


@pytest.mark.batches_across_queues
def test_a_damaged_batch_does_not_crash_readers(store: Store, kit: Kit) -> None:
    batch_id = make_batch(store, [new_job()], total=3)
    healthy = make_batch(store, [new_job()])
    kit.damage_batch(batch_id, kit.damaged_batch)
    assert batch(store, batch_id).id == batch_id
    assert [b.id for b in store.list_batches()] == [healthy, batch_id]


@pytest.mark.batches_across_queues
def test_counts_that_are_not_numbers_do_not_crash_readers(store: Store, kit: Kit) -> None:
    if not kit.counts_can_be_damaged:
        pytest.skip("this backend's integer columns cannot hold a damaged count")
    batch_id = make_batch(store, [new_job()], total=3)
    kit.damage_batch(batch_id, NUMBERS_DAMAGE)
    b = batch(store, batch_id)
    assert (b.id, b.jobs, b.failed, b.declared_total) == (batch_id, 0, 0, None)
    assert 0.0 <= b.progress <= 1.0
    assert [x.id for x in store.list_batches()] == [batch_id]


@pytest.mark.batches_across_queues
def test_a_member_of_a_batch_with_unreadable_callbacks_still_ends(store: Store, kit: Kit) -> None:
    member = new_job()
    batch_id = make_batch(store, [member])
    kit.damage_batch(batch_id, kit.unreadable_callbacks)
    r = reserve_one(store)
    assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    b = batch(store, batch_id)
    assert (b.state, b.done, b.finished_at is not None) == ("succeeded", 1, True)


def test_a_callback_lost_to_a_damaged_record_is_logged_the_same_on_every_store(
    store: Store, kit: Kit, caplog: pytest.LogCaptureFixture
) -> None:
    # one queue for the batch, its member and its callback: this runs on Redis Cluster too
    then = new_job(name="report")
    damaged, plain = secrets.token_hex(6), secrets.token_hex(6)
    store.enqueue_many([new_job()], batch=NewBatch(id=damaged, name="damaged", then=then))
    store.enqueue_many([new_job()], batch=NewBatch(id=plain, name="no callbacks"))
    kit.damage_batch(damaged, kit.unreadable_callbacks)
    with caplog.at_level(logging.ERROR, logger="tenure.store"):
        for _ in range(2):
            r = reserve_one(store)
            assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    lost = [r.getMessage() for r in caplog.records if "callback is unreadable" in r.getMessage()]
    # the damaged batch's `then` is named; a batch that simply has no callbacks says nothing
    assert f"batch {damaged}: its then callback is unreadable and was not enqueued" in lost
    assert not [line for line in lost if plain in line]
    assert get_job(store, then.id) is None
    b = batch(store, damaged)
    assert (b.state, b.then_job_id) == ("succeeded", None)
