"""A batch's members, read with `list_jobs(batch_id=)`: every member whatever its state
(settled ones too), newest first, filtered by state and bounded by `limit`; never another
batch's jobs, a job of no batch, or a callback."""

from __future__ import annotations

import time

from conformance.helpers import W1, enqueue, new_job, reserve_one
from tenure.core.records import Ending, NewBatch
from tenure.core.retry import Policy
from tenure.stores import Store

ONE_TRY = Policy(tries=1, backoff=0)


def _batch(store: Store, batch_id: str, n: int) -> list[str]:
    ids = []
    for _ in range(n):  # one by one, so each member is measurably newer than the last
        member = new_job(batch_id=batch_id, policy=ONE_TRY)
        if not ids:
            store.enqueue_many(
                [member],
                batch=NewBatch(
                    id=batch_id,
                    name="invoices",
                    total=n,
                    allow_failures=True,
                    then=new_job(name="then"),
                ),
            )
        else:
            assert store.enqueue_many([member], into_batch=batch_id) == [member.id]
        ids.append(member.id)
        time.sleep(0.01)
    return ids


def test_a_batch_lists_its_members_newest_first_with_their_states(store: Store) -> None:
    ids = _batch(store, "b-members", 3)
    # the oldest member runs and fails; the batch still lists it, settled
    first = reserve_one(store, worker=W1)
    assert first.job_id == ids[0]
    store.end_attempt(
        Ending(job_id=first.job_id, token=first.token, outcome="failed", error="KeyError: 'x'")
    )
    enqueue(store, new_job())  # a job of no batch
    _batch(store, "b-other", 2)
    listed = store.list_jobs(batch_id="b-members")
    assert [j.id for j in listed] == ids[::-1]
    assert [j.state for j in listed] == ["queued", "queued", "failed"]
    assert listed[-1].last_error is not None and "KeyError" in listed[-1].last_error
    assert all(j.batch_id == "b-members" and j.attempts == [] for j in listed)


def test_members_are_filtered_by_state_and_bounded(store: Store) -> None:
    ids = _batch(store, "b-page", 4)
    assert [j.id for j in store.list_jobs(batch_id="b-page", limit=2)] == ids[:1:-1]
    assert [j.id for j in store.list_jobs(batch_id="b-page", state="queued")] == ids[::-1]
    assert store.list_jobs(batch_id="b-page", state="failed") == []
    assert store.list_jobs(batch_id="b-page", queue="elsewhere") == []
    assert store.list_jobs(batch_id="b-page", limit=0) == []


def test_an_unknown_batch_has_no_members(store: Store) -> None:
    enqueue(store, new_job())
    assert store.list_jobs(batch_id="no-such-batch") == []
