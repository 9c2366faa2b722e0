"""end_attempt with a next reservation (once complete_and_reserve): a busy worker records an
attempt's end and claims its slot's next job in one store call. It must do exactly what
recording the end alone (no queues, no worker) then `reserve(limit=1)` would do."""

from __future__ import annotations

import secrets
from dataclasses import replace

import pytest

from conformance.helpers import W1, W2, attempt, counts, enqueue, job, new_job, reserve_one
from tenure.core.guards import Guards
from tenure.core.records import Ending, NewBatch
from tenure.stores import Store
from tenure.stores.base import get_batch


def test_it_records_the_success_and_opens_the_next_attempt(store: Store) -> None:
    first, second = enqueue(store, new_job(), new_job())
    held = reserve_one(store)
    assert held.job_id == first

    result, following = store.end_attempt(
        Ending(job_id=first, token=held.token), queues=["default"], worker=W1, lease=30
    )

    assert result.accepted and result.state == "succeeded"
    assert job(store, first).state == "succeeded"
    assert attempt(store, first, held.attempt).outcome == "succeeded"
    assert following is not None and following.job_id == second
    assert following.attempt == following.token == 1
    nxt = job(store, second)
    assert (nxt.state, nxt.worker_id) == ("running", W1.id)
    opened = attempt(store, second, 1)
    assert opened.outcome is None and opened.worker_id == W1.id
    # the next attempt opens when the previous one has ended, never before
    ended_at = attempt(store, first, held.attempt).ended_at
    assert ended_at is not None and opened.started_at >= ended_at
    assert following.lease_expires_at >= opened.started_at + 29


def test_a_failure_is_decided_as_alone_and_opens_the_next_attempt_too(store: Store) -> None:
    first, second = enqueue(store, new_job(), new_job())
    held = reserve_one(store)

    result, following = store.end_attempt(
        Ending(job_id=first, token=held.token, outcome="failed", error="boom"),
        queues=["default"],
        worker=W1,
        lease=30,
    )

    assert result.accepted and result.state in ("queued", "scheduled")  # its retry
    assert attempt(store, first, held.attempt).outcome == "failed"
    assert attempt(store, first, held.attempt).error == "boom"
    # QUICK retries at once: queued at the store's now, the retry ties with `second` on a
    # coarse clock and then goes first by its older seq; either is the next ready job
    assert following is None or following.job_id in (first, second)
    if following is not None:
        assert job(store, following.job_id).state == "running"
    stale, _ = store.end_attempt(Ending(job_id=first, token=held.token, outcome="failed"))
    assert not stale.accepted  # fenced: the attempt ended once


def test_with_nothing_ready_it_only_records_the_success(store: Store) -> None:
    (only,) = enqueue(store, new_job())
    later = enqueue(store, new_job(delay=60))
    held = reserve_one(store)

    result, following = store.end_attempt(
        Ending(job_id=only, token=held.token), queues=["default"], worker=W1, lease=30
    )

    assert result.accepted and following is None
    assert job(store, later[0]).state == "scheduled"
    assert counts(store)["running"] == 0


def test_without_queues_or_worker_it_records_the_success_and_claims_nothing(
    store: Store,
) -> None:
    first, second = enqueue(store, new_job(), new_job())
    held = reserve_one(store)

    result, following = store.end_attempt(Ending(job_id=first, token=held.token))

    assert (result.accepted, result.state, following) == (True, "succeeded", None)
    assert attempt(store, first, held.attempt).outcome == "succeeded"
    assert job(store, second).state == "queued"  # no attempt opened for the next job


def test_a_stale_token_is_refused_and_changes_nothing_of_the_job(store: Store) -> None:
    first, second = enqueue(store, new_job(), new_job())
    held = reserve_one(store)
    store.end_attempt(Ending(job_id=first, token=held.token))

    result, following = store.end_attempt(
        Ending(job_id=first, token=held.token), queues=["default"], worker=W1, lease=30
    )

    assert not result.accepted and result.state == "succeeded"
    assert job(store, first).tries_used == 1
    # the slot is free either way: the next job is handed out once, to it or to a reserve
    others = store.reserve(queues=["default"], worker=W2, lease=30, limit=5)
    handed = [r.job_id for r in others] + ([following.job_id] if following else [])
    assert handed == [second]


def test_an_unknown_job_is_refused_as_missing(store: Store) -> None:
    result, following = store.end_attempt(
        Ending(job_id="no-such-job", token=1), queues=["default"], worker=W1, lease=30
    )
    assert not result.accepted and result.state == "missing"
    assert following is None


def test_earlier_queues_come_first(store: Store) -> None:
    (current,) = enqueue(store, new_job(queue="low"))
    held = reserve_one(store, queues=["low"])
    low, high = enqueue(store, new_job(queue="low"), new_job(queue="high"))

    _, following = store.end_attempt(
        Ending(job_id=current, token=held.token), queues=["high", "low"], worker=W1, lease=30
    )
    assert following is not None and following.job_id == high

    _, following = store.end_attempt(
        Ending(job_id=high, token=following.token), queues=["high", "low"], worker=W1, lease=30
    )
    assert following is not None and following.job_id == low


def test_a_job_whose_overlap_key_is_held_is_never_started_by_it(store: Store) -> None:
    holder = replace(new_job(queue="q"), guards=Guards(overlap_key="k", overlap_delay=30))
    waiter = replace(new_job(queue="q"), guards=Guards(overlap_key="k", overlap_delay=30))
    plain = new_job(queue="q")
    (current,) = enqueue(store, new_job(queue="q"))
    held = reserve_one(store, queues=["q"])
    enqueue(store, holder)
    running_holder = reserve_one(store, queues=["q"], worker=W2)
    assert running_holder.job_id == holder.id
    enqueue(store, waiter, plain)

    _, following = store.end_attempt(
        Ending(job_id=current, token=held.token), queues=["q"], worker=W1, lease=30
    )

    # The store may hand out the plain job or leave the guarded head for `reserve`; it must
    # never start the waiter while the holder runs.
    assert following is None or following.job_id == plain.id
    assert job(store, waiter.id).state != "running"
    again = store.reserve(queues=["q"], worker=W1, lease=30, limit=5)
    started = {r.job_id for r in again} | ({following.job_id} if following else set())
    assert started == {plain.id}
    assert job(store, waiter.id).state in ("queued", "scheduled")


@pytest.mark.batches_across_queues
def test_batch_members_are_counted_in_their_batch_and_settle_it_once(store: Store) -> None:
    batch_id = "b-" + secrets.token_hex(4)
    members = [new_job(batch_id=batch_id) for _ in range(2)]
    then = new_job(name="notify", queue="callbacks")
    store.enqueue_many(members, batch=NewBatch(id=batch_id, name="exports", total=2, then=then))
    held = reserve_one(store)

    result, following = store.end_attempt(
        Ending(job_id=held.job_id, token=held.token), queues=["default"], worker=W1, lease=30
    )
    assert result.accepted and following is not None
    progress = get_batch(store, batch_id)
    assert progress is not None and (progress.done, progress.state) == (1, "running")

    result, following = store.end_attempt(
        Ending(job_id=following.job_id, token=following.token),
        queues=["default"],
        worker=W1,
        lease=30,
    )
    assert result.accepted and following is None
    settled = get_batch(store, batch_id)
    assert settled is not None and (settled.done, settled.state) == (2, "succeeded")
    # the `then` callback was enqueued exactly once, by the call that settled the batch
    assert [r.name for r in store.reserve(queues=["callbacks"], worker=W1, lease=30, limit=5)] == [
        "notify"
    ]
