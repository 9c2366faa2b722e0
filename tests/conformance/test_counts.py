"""Counts per queue and state (issue 9): `queue_counts()`, and the totals App shows from it,
on every backend.

The dashboard reads them on every refresh, so no backend may count by scanning jobs; what
these tests hold them to is agreeing, at every moment they are read, with the jobs themselves.
Where the counts are counters of their own, tests/backends/ compares them with the jobs after
the same mixed workload (`run_mixed_workload`).
"""

from __future__ import annotations

import random
import secrets
import threading
from dataclasses import replace
from typing import Any

import pytest

from conformance.helpers import W2, counts, enqueue, new_job, reserve_one, wait_until
from tenure.core.guards import Guards
from tenure.core.records import Ending, NewBatch, NewJob, Reservation, WorkerRef
from tenure.core.retry import Policy
from tenure.core.states import JOB_STATES
from tenure.stores import Store, open_store
from tenure.stores.base import get_batch

ONE_TRY = Policy(tries=1, backoff=0)
TWO_TRIES = Policy(tries=2, backoff=0)
LATER = 3600.0  # a delay that stays in the future for the whole test: firmly "scheduled"


def zeros(**nonzero: int) -> dict[str, int]:
    return {**dict.fromkeys(JOB_STATES, 0), **nonzero}


def truth(store: Store) -> dict[str, dict[str, int]]:
    """Jobs per queue and visible state, counted one by one from the listing."""
    out: dict[str, dict[str, int]] = {}
    for record in store.list_jobs(limit=10_000_000):
        out.setdefault(record.queue, zeros())[record.state] += 1
    return out


def assert_counts_agree(store: Store) -> dict[str, dict[str, int]]:
    by_queue = store.queue_counts()
    assert by_queue == truth(store)
    totals = counts(store)
    assert totals == {s: sum(q[s] for q in by_queue.values()) for s in JOB_STATES}
    return by_queue


# -- the shape -------------------------------------------------------------------------------
def test_an_empty_store_has_no_queues_and_every_state_at_zero(store: Store) -> None:
    assert store.queue_counts() == {}
    assert counts(store) == zeros()


def test_queue_counts_split_by_queue_and_state(store: Store) -> None:
    enqueue(store, new_job(queue="a"), new_job(queue="a"), new_job(queue="b", delay=LATER))
    running = reserve_one(store, queues=["a"])
    enqueue(store, failing := new_job(queue="b", policy=ONE_TRY), done := new_job(queue="c"))
    bad = reserve_one(store, queues=["b"])
    assert bad.job_id == failing.id
    store.end_attempt(Ending(job_id=failing.id, token=bad.token, outcome="failed", error="boom"))
    ok = reserve_one(store, queues=["c"])
    assert ok.job_id == done.id and running.queue == "a"
    store.end_attempt(Ending(job_id=done.id, token=ok.token))

    assert assert_counts_agree(store) == {
        "a": zeros(queued=1, running=1),
        "b": zeros(scheduled=1, failed=1),
        "c": zeros(succeeded=1),
    }
    assert counts(store) == zeros(queued=1, scheduled=1, running=1, succeeded=1, failed=1)


def test_a_bulk_enqueue_is_counted_in_full(store: Store) -> None:
    jobs = [new_job(queue=f"bulk{i % 3}", delay=LATER if i % 4 == 0 else 0.0) for i in range(3000)]
    store.enqueue_many(jobs)
    store.enqueue_many(jobs[:500])  # ids already stored are skipped, and counted once
    by_queue = assert_counts_agree(store)
    assert counts(store) == zeros(queued=2250, scheduled=750)
    assert sorted(by_queue) == ["bulk0", "bulk1", "bulk2"]


def test_cancelling_a_batch_moves_its_queued_members_to_cancelled(store: Store) -> None:
    members = [new_job(queue="batch") for _ in range(40)]
    store.enqueue_many(members, batch=NewBatch(id=secrets.token_hex(8), name="cancel-me"))
    store.enqueue_many(
        [new_job(queue="other") for _ in range(3)],
        batch=NewBatch(id=(kept := secrets.token_hex(8)), name="kept"),
    )
    held = reserve_one(store, queues=["batch"])
    batch_id = next(b.id for b in store.list_batches() if b.name == "cancel-me")
    assert store.cancel(batch_id=batch_id).accepted
    assert assert_counts_agree(store) == {
        "batch": zeros(running=1, cancelled=39),
        "other": zeros(queued=3),
    }
    # the running member ends; its batch no longer runs new work, so a retry is cancelled
    store.end_attempt(Ending(job_id=held.job_id, token=held.token, outcome="failed", error="x"))
    assert assert_counts_agree(store)["batch"] == zeros(cancelled=40)
    assert get_batch(store, kept) is not None


def test_retry_and_forget_move_the_counts(store: Store) -> None:
    enqueue(store, failing := new_job(queue="ops", policy=ONE_TRY))
    r = reserve_one(store, queues=["ops"])
    store.end_attempt(Ending(job_id=failing.id, token=r.token, outcome="failed", error="boom"))
    assert assert_counts_agree(store) == {"ops": zeros(failed=1)}

    assert store.retry_job(failing.id)
    assert assert_counts_agree(store) == {"ops": zeros(queued=1)}
    assert not store.forget_job(failing.id)  # still live: nothing moves
    assert assert_counts_agree(store) == {"ops": zeros(queued=1)}

    r = reserve_one(store, queues=["ops"])
    store.end_attempt(Ending(job_id=failing.id, token=r.token))
    assert store.forget_job(failing.id)
    # a queue whose jobs were all forgotten is gone from the counts, not a row of zeros
    assert assert_counts_agree(store) == {}
    assert counts(store) == zeros()


def test_a_crashed_attempt_is_counted_where_the_rescue_puts_it(store: Store) -> None:
    enqueue(store, retried := new_job(queue="r", policy=TWO_TRIES))
    enqueue(store, failed := new_job(queue="r", policy=ONE_TRY))
    first = reserve_one(store, queues=["r"], lease=0.05)
    second = reserve_one(store, queues=["r"], lease=0.05)
    assert {first.job_id, second.job_id} == {retried.id, failed.id}
    assert assert_counts_agree(store) == {"r": zeros(running=2)}

    rescued: set[str] = set()

    def both_rescued() -> bool:
        rescued.update(r.job_id for r in store.sweep(prune=False).rescued)
        return len(rescued) == 2

    wait_until(both_rescued, what="both leases to expire and be rescued")
    assert assert_counts_agree(store) == {"r": zeros(queued=1, failed=1)}


def test_a_deferral_moves_a_job_to_scheduled_and_back(store: Store) -> None:
    holder = replace(new_job(queue="g"), guards=Guards(overlap_key="k", overlap_delay=LATER))
    waiter = replace(new_job(queue="g"), guards=Guards(overlap_key="k", overlap_delay=LATER))
    enqueue(store, holder)
    reserve_one(store, queues=["g"])
    enqueue(store, waiter)
    assert store.reserve(queues=["g"], worker=W2, lease=30, limit=1) == []  # deferred
    assert assert_counts_agree(store) == {"g": zeros(running=1, scheduled=1)}


# -- everything at once ----------------------------------------------------------------------
def one_in_each_state(store: Store) -> None:
    queue = "mixed-tail"
    enqueue(store, new_job(queue=queue, delay=LATER), new_job(queue=queue))
    running = reserve_one(store, queues=[queue])
    enqueue(store, new_job(queue=queue, policy=ONE_TRY), new_job(queue=queue))
    for outcome in ("failed", "succeeded"):
        r = reserve_one(store, queues=[queue])
        if outcome == "failed":
            store.end_attempt(Ending(job_id=r.job_id, token=r.token, outcome="failed", error="x"))
        else:
            store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    batch_id = secrets.token_hex(8)
    store.enqueue_many([new_job(queue=queue)], batch=NewBatch(id=batch_id, name="tail"))
    assert store.cancel(batch_id=batch_id).accepted
    enqueue(store, new_job(queue=queue))  # and one waiting behind the running one
    assert running.queue == queue


QUEUES = ("mixed-a", "mixed-b", "mixed-c")


class Workload:
    """One thread's share of a mixed workload: every verb that moves a job, chosen at random
    (seeded), against queues the other threads use too."""

    def __init__(self, store: Store, seed: int, worker: WorkerRef, sql: bool) -> None:
        self.store = store
        self.rng = random.Random(seed)
        self.worker = worker
        self.sql = sql
        self.held: list[Reservation] = []

    def job(self, **kw: Any) -> NewJob:
        policy = self.rng.choice((ONE_TRY, TWO_TRIES, Policy(tries=3, backoff=0)))
        return new_job(queue=self.rng.choice(QUEUES), policy=policy, **kw)

    def step(self) -> None:
        rng, store = self.rng, self.store
        op = rng.choice(
            (
                "enqueue",
                "enqueue",
                "scheduled",
                "reserve",
                "reserve",
                "complete",
                "fail",
                "give_up",
                "heartbeat",
                "expire",
                "rescue",
                "retry",
                "forget",
                "batch",
                "overlap",
                "transaction",
            )
        )
        if op == "enqueue":
            store.enqueue_many([self.job() for _ in range(rng.randint(1, 30))])
        elif op == "scheduled":
            store.enqueue_many([self.job(delay=LATER) for _ in range(rng.randint(1, 5))])
        elif op == "reserve":
            queues = rng.sample(QUEUES, rng.randint(1, 3))
            self.held += store.reserve(
                queues=queues, worker=self.worker, lease=30, limit=rng.randint(1, 6)
            )
        elif op == "expire":  # a lease that runs out: a later rescue finds it
            store.reserve(queues=[rng.choice(QUEUES)], worker=self.worker, lease=0.01, limit=2)
        elif op == "rescue":
            store.sweep(prune=False)
        elif op == "heartbeat" and self.held:
            store.heartbeat(
                worker=self.worker, leases=[(r.job_id, r.token) for r in self.held], lease=30
            )
        elif op in ("complete", "fail", "give_up", "transaction") and self.held:
            r = self.held.pop(rng.randrange(len(self.held)))
            if op == "complete":
                store.end_attempt(Ending(job_id=r.job_id, token=r.token))
            elif op == "transaction" and self.sql:
                # the job's own transaction enqueues into another queue and completes: several
                # statements, several queues, one commit
                tx = store.job_transaction(job_id=r.job_id, token=r.token)
                store.enqueue_many([self.job()], conn=tx.connection)
                tx.complete()
            else:
                store.end_attempt(
                    Ending(
                        job_id=r.job_id,
                        token=r.token,
                        outcome="failed",
                        error="boom",
                        permanent=op == "give_up",
                    )
                )
        elif op == "retry":
            for failed in store.list_jobs(state="failed", limit=1):
                store.retry_job(failed.id)
        elif op == "forget":
            state = rng.choice(("succeeded", "failed", "cancelled"))
            for finished in store.list_jobs(state=state, limit=3):
                store.forget_job(finished.id)
        elif op == "batch":
            batch_id = secrets.token_hex(8)
            store.enqueue_many(
                [self.job() for _ in range(rng.randint(1, 12))],
                batch=NewBatch(id=batch_id, name="mixed"),
            )
            if rng.random() < 0.5:
                store.cancel(batch_id=batch_id)
        elif op == "overlap":
            key = f"k{rng.randint(1, 3)}"
            store.enqueue_many(
                [
                    replace(self.job(), guards=Guards(overlap_key=key, overlap_delay=LATER))
                    for _ in range(2)
                ]
            )


def run_mixed_workload(store: Store, store_url: str) -> None:
    """Four clients of one store running a random mix of every change of state at once."""
    stores = [store] + [open_store(store_url) for _ in range(3)]
    errors: list[BaseException] = []
    sql = store.capabilities.job_transactions
    workloads = [
        Workload(s, seed=9000 + i, worker=WorkerRef(f"mixed-{i}", "host", 100 + i), sql=sql)
        for i, s in enumerate(stores)
    ]

    def run(w: Workload) -> None:
        try:
            for _ in range(120):
                w.step()
        except BaseException as exc:  # reported below: a thread's failure fails the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in workloads]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
    finally:
        for s in stores[1:]:
            s.close()


@pytest.mark.batches_across_queues
def test_counts_agree_with_the_jobs_after_a_concurrent_mixed_workload(
    store: Store, store_url: str
) -> None:
    run_mixed_workload(store, store_url)
    one_in_each_state(store)  # whatever the threads' interleaving left, every state is held
    by_queue = assert_counts_agree(store)
    assert all(sum(q[state] for q in by_queue.values()) for state in JOB_STATES), by_queue
