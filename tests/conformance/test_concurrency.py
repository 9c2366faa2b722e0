"""Concurrency limits held in the store (issue 31), on every backend: at most N attempts of a
key run at once; a job over its limit is parked (not reserved: no attempt, no try), and the end
of a running attempt of its key hands the oldest parked one back, in that end's transaction;
a crashed holder frees its slot when it is rescued. A limited backlog never holds up the jobs
behind it.
"""

from __future__ import annotations

import secrets
from dataclasses import replace

from conformance.helpers import (
    W1,
    W2,
    counts,
    enqueue,
    expire_and_rescue,
    job,
    new_job,
    wait_until,
)
from tenure.core.guards import Guards
from tenure.core.records import Ending, NewBatch, NewJob
from tenure.describe import describe_job
from tenure.stores import Store


def limited(key: str, limit: int, **kw: object) -> NewJob:
    return replace(
        new_job(**kw),  # type: ignore[arg-type]
        guards=Guards(concurrency_key=key, concurrency_limit=limit),
    )


def reserve(store: Store, limit: int = 10, worker: object = W1) -> list[str]:
    return [
        r.job_id
        for r in store.reserve(queues=["default"], worker=worker, lease=30, limit=limit)  # type: ignore[arg-type]
    ]


def test_at_most_n_run_and_the_rest_wait_without_an_attempt(store: Store) -> None:
    jobs = [limited("sync:acme", 2) for _ in range(5)]
    enqueue(store, *jobs)
    started = reserve(store, limit=10)
    assert started == [jobs[0].id, jobs[1].id]
    assert reserve(store, worker=W2) == []  # another worker gets none either
    for parked in jobs[2:]:
        record = job(store, parked.id)
        assert record.state == "queued"  # waiting on its key, not 'scheduled' in year 9999
        assert record.attempts == [] and record.tries_used == 0
        assert record.waiting_on == "sync:acme"
    text = "\n".join(describe_job(job(store, jobs[2].id)))
    assert "waiting on concurrency key 'sync:acme'" in text
    assert "9999-" not in text  # no far-future date (a hex id may hold "9999", never "9999-")


def test_an_ending_hands_back_the_oldest_parked_job(store: Store) -> None:
    jobs = [limited("k", 1) for _ in range(3)]
    enqueue(store, *jobs)
    assert reserve(store) == [jobs[0].id]
    assert reserve(store) == []
    # end the running one: the next parked one, FIFO, is ready at once
    held = job(store, jobs[0].id)
    ended, _ = store.end_attempt(Ending(job_id=held.id, token=held.attempts[-1].number))
    assert ended.accepted
    assert reserve(store) == [jobs[1].id]
    assert job(store, jobs[2].id).waiting_on == "k"
    r = job(store, jobs[1].id)
    # a failure frees the slot too
    store.end_attempt(
        Ending(
            job_id=r.id, token=r.attempts[-1].number, outcome="failed", error="boom", permanent=True
        )
    )
    assert reserve(store) == [jobs[2].id]


def test_the_end_and_the_next_claim_in_one_call_honours_the_limit(store: Store) -> None:
    jobs = [limited("k", 1) for _ in range(3)]
    enqueue(store, *jobs)
    [r] = store.reserve(queues=["default"], worker=W1, lease=30)
    assert store.reserve(queues=["default"], worker=W2, lease=30) == []  # parks the rest
    done: list[str] = []
    for _ in range(3):
        ended, r2 = store.end_attempt(
            Ending(job_id=r.job_id, token=r.token), queues=["default"], worker=W1, lease=30
        )
        assert ended.accepted
        done.append(r.job_id)
        if r2 is None:
            claimed = store.reserve(queues=["default"], worker=W1, lease=30)
            if not claimed:
                break
            r2 = claimed[0]
        r = r2
    assert done == [j.id for j in jobs]
    assert counts(store)["succeeded"] == 3


def test_limits_are_per_key_and_a_limited_backlog_holds_up_nothing(store: Store) -> None:
    a = [limited("acct:a", 1) for _ in range(3)]
    b = [limited("acct:b", 1) for _ in range(2)]
    plain = [new_job() for _ in range(2)]
    enqueue(store, *a, *b, *plain)
    started = set(reserve(store, limit=10))
    assert started == {a[0].id, b[0].id, *(p.id for p in plain)}


def test_a_crashed_holder_frees_its_slot_when_rescued(store: Store) -> None:
    jobs = [limited("k", 1) for _ in range(2)]
    enqueue(store, *jobs)
    [r] = store.reserve(queues=["default"], worker=W1, lease=0.3)
    assert reserve(store, worker=W2) == []
    assert job(store, jobs[1].id).waiting_on == "k"
    expire_and_rescue(store, r.job_id)
    started = reserve(store, worker=W2)
    # both are ready again: the rescued one (retried) and the parked one handed back; the
    # limit still lets only one of them start
    assert len(started) == 1
    assert counts(store)["running"] == 1


def test_a_crashed_holders_slot_is_free_to_a_new_claim_once_its_lease_lapses(
    store: Store,
) -> None:
    """Within one lease of the crash, sweep or no sweep: a slot follows its holder's lease
    (the issue's contract), so a job of the key dispatched since is claimed once it lapses."""
    first, later = limited("k", 1), limited("k", 1)
    enqueue(store, first)
    [r] = store.reserve(queues=["default"], worker=W1, lease=0.3)
    enqueue(store, later)  # not reserved yet, so not parked: it waits for nothing but a slot
    wait_until(lambda: store.now() > r.lease_expires_at, what="the holder's lease to lapse")
    assert reserve(store, worker=W2) == [later.id]
    assert job(store, first.id).state == "running"  # not rescued: no sweep ran


def test_a_cancelled_holder_frees_its_slot(store: Store) -> None:
    jobs = [limited("k", 1) for _ in range(2)]
    enqueue(store, *jobs)
    [r] = store.reserve(queues=["default"], worker=W1, lease=30)
    assert reserve(store) == []
    store.cancel(r.job_id)
    ended, _ = store.end_attempt(
        Ending(job_id=r.job_id, token=r.token, outcome="interrupted", error="stopped")
    )
    assert ended.state == "cancelled"
    assert reserve(store) == [jobs[1].id]


def test_counts_show_parked_jobs_as_queued_and_waiting_and_per_key(store: Store) -> None:
    jobs = [limited("sync:a", 2) for _ in range(5)] + [limited("sync:b", 1)]
    enqueue(store, *jobs, new_job(delay=3600))
    reserve(store, limit=10)  # a: 2 run, 3 parked; b: 1 runs
    [c] = store.queue_counts().values()
    assert (c["running"], c["queued"], c["scheduled"], c.waiting) == (3, 3, 1, 3)
    assert c.by_key is None  # only when asked for
    [c] = store.queue_counts(keys=True).values()
    assert c.by_key is not None
    assert {k: (v.running, v.waiting, v.limit) for k, v in c.by_key.items()} == {
        "sync:a": (2, 3, 2),
        "sync:b": (1, 0, 1),
    }
    assert c["running"] == 3 and c.waiting == 3


def test_batch_members_and_a_callback_keep_their_limit(store: Store) -> None:
    members = [limited("export", 1) for _ in range(3)]
    then = limited("export", 1)
    batch = NewBatch(id=secrets.token_hex(6), name="exports", then=then)
    store.enqueue_many(members, batch=batch)
    done = []
    while len(done) < 4:
        got = reserve(store)
        assert len(got) == 1, got  # one at a time: members, then the callback
        [r] = store.reserve(queues=["default"], worker=W2, lease=30) or [None]
        assert r is None
        held = job(store, got[0])
        assert store.end_attempt(Ending(job_id=held.id, token=held.attempts[-1].number))[0].accepted
        done += got
    assert done[-1] == then.id


def test_cancelling_a_handed_back_job_hands_back_the_next(store: Store) -> None:
    jobs = [limited("k", 1) for _ in range(3)]
    enqueue(store, *jobs)
    [r] = store.reserve(queues=["default"], worker=W1, lease=30)
    assert reserve(store) == []  # the other two parked
    store.end_attempt(Ending(job_id=r.job_id, token=r.token))  # hands back jobs[1]
    assert store.cancel(jobs[1].id).state == "cancelled"  # before it ran
    assert reserve(store) == [jobs[2].id]  # not stuck behind an end that will not come
    assert store.cancel(jobs[2].id).state == "running"


def test_cancelling_a_parked_job_leaves_the_rest_in_order(store: Store) -> None:
    jobs = [limited("k", 1) for _ in range(3)]
    enqueue(store, *jobs)
    [r] = store.reserve(queues=["default"], worker=W1, lease=30)
    assert reserve(store) == []
    assert store.cancel(jobs[1].id).state == "cancelled"
    [c] = store.queue_counts().values()
    assert c.waiting == 1
    store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    assert reserve(store) == [jobs[2].id]


def test_cancelling_a_batch_hands_back_past_its_handed_back_member(store: Store) -> None:
    first, member, later = limited("k", 1), limited("k", 1), limited("k", 1)
    enqueue(store, first)
    store.enqueue_many([member], batch=NewBatch(id=secrets.token_hex(6), name="b"))
    enqueue(store, later)
    [r] = store.reserve(queues=["default"], worker=W1, lease=30)
    assert r.job_id == first.id
    assert reserve(store) == []  # member and later parked
    store.end_attempt(Ending(job_id=r.job_id, token=r.token))  # hands back the member
    assert job(store, member.id).waiting_on is None
    batch_id = job(store, member.id).batch_id
    assert batch_id is not None
    assert store.cancel(batch_id=batch_id).state == "cancelled"
    assert job(store, member.id).state == "cancelled"
    # the member would have taken the free slot: the job parked behind it takes it instead
    assert reserve(store) == [later.id]


def test_cancelling_a_batch_takes_its_parked_members_off_their_key(store: Store) -> None:
    first, member, later = limited("k", 1), limited("k", 1), limited("k", 1)
    enqueue(store, first)
    store.enqueue_many([member], batch=NewBatch(id=secrets.token_hex(6), name="b"))
    enqueue(store, later)
    [r] = store.reserve(queues=["default"], worker=W1, lease=30)
    assert reserve(store) == []
    batch_id = job(store, member.id).batch_id
    assert batch_id is not None
    store.cancel(batch_id=batch_id)
    [c] = store.queue_counts(keys=True).values()
    assert c.waiting == 1 and c.by_key is not None and c.by_key["k"].waiting == 1
    store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    assert reserve(store) == [later.id]
    assert job(store, member.id).attempts == []


def test_a_key_out_of_use_is_listed_again_by_its_next_claim(store: Store) -> None:
    first, second, third = (limited("k", 2) for _ in range(3))
    enqueue(store, first)
    [r] = store.reserve(queues=["default"], worker=W1, lease=30)
    assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    enqueue(store, second, third)
    assert len(reserve(store)) == 2  # the second claim finds the key listed by the first
    [c] = store.queue_counts(keys=True).values()
    assert c.by_key is not None
    assert {k: (v.running, v.waiting, v.limit) for k, v in c.by_key.items()} == {"k": (2, 0, 2)}
