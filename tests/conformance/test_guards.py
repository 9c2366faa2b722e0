"""Guards against duplicate work, held in the store (DESIGN 6-7, issue 5), and enqueueing inside
the application's own transaction (issue 11), on every backend.

Uniqueness is decided atomically with the enqueue, overlap and rate limits with the
reservation; deferrals record a `deferred` attempt and use no try; `claim_once` is true once per
job and key and only for the attempt holding the lease.
"""

from __future__ import annotations

import collections
import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from backends.kit import Kit, foreign_connection
from conformance.helpers import (
    W1,
    W2,
    counts,
    enqueue,
    expire_and_rescue,
    job,
    new_job,
    race,
    wait_until,
)
from tenure.core.errors import ConfigError
from tenure.core.guards import Guards
from tenure.core.records import Ending, NewJob, WorkerRef
from tenure.stores import Store
from tenure.stores.base import get_job


def guarded(guards: Guards, **kw: Any) -> NewJob:
    return replace(new_job(**kw), guards=guards)


def outcomes(store: Store, job_id: str) -> list[str | None]:
    return [a.outcome for a in job(store, job_id).attempts]


# -- uniqueness ------------------------------------------------------------------------------
def test_a_held_unique_key_returns_the_holders_id_and_stores_nothing(store: Store) -> None:
    first = guarded(Guards(unique_key="order:7"))
    assert store.enqueue_many([first]) == [first.id]
    second = guarded(Guards(unique_key="order:7"))
    other = guarded(Guards(unique_key="order:8"))
    plain = new_job()
    assert store.enqueue_many([second, other, plain]) == [first.id, other.id, plain.id]
    assert get_job(store, second.id) is None
    # two jobs of one key in one call: the first takes it, the second is the first's
    a, b = guarded(Guards(unique_key="order:9")), guarded(Guards(unique_key="order:9"))
    assert store.enqueue_many([a, b]) == [a.id, a.id]
    assert get_job(store, b.id) is None
    assert counts(store)["queued"] == 4


def test_an_id_already_present_is_skipped(store: Store) -> None:
    j = new_job()
    u = guarded(Guards(unique_key="k"))
    assert store.enqueue_many([j, u]) == [j.id, u.id]
    assert store.enqueue_many([j, u]) == [j.id, u.id]  # a retried dispatch: nothing twice
    assert counts(store)["queued"] == 2


def test_unique_until_completed_holds_the_key_while_running(store: Store) -> None:
    key = Guards(unique_key="report", unique_until="completed")
    first = guarded(key)
    store.enqueue_many([first])
    r = store.reserve(queues=["default"], worker=W1, lease=30)[0]
    assert store.enqueue_many([guarded(key)]) == [first.id]  # running still holds it
    assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    again = guarded(key)
    assert store.enqueue_many([again]) == [again.id]  # free once the holder completed
    assert counts(store)["queued"] == 1


def test_unique_until_processing_frees_the_key_when_the_holder_starts(
    store: Store,
) -> None:
    key = Guards(unique_key="sync", unique_until="processing")
    first = guarded(key)
    store.enqueue_many([first])
    assert store.enqueue_many([guarded(key)]) == [first.id]  # queued: held
    store.reserve(queues=["default"], worker=W1, lease=30)
    second = guarded(key)
    assert store.enqueue_many([second]) == [second.id]  # running: free again
    assert store.enqueue_many([guarded(key)]) == [second.id]


def test_a_forgotten_or_failed_holder_frees_the_key(store: Store) -> None:
    key = Guards(unique_key="once-a-day")
    first = guarded(key, policy=replace(new_job().policy, tries=1))
    store.enqueue_many([first])
    r = store.reserve(queues=["default"], worker=W1, lease=30)[0]
    store.end_attempt(Ending(job_id=r.job_id, token=r.token, outcome="failed", error="boom"))
    assert job(store, first.id).state == "failed"
    second = guarded(key)
    assert store.enqueue_many([second]) == [second.id]
    r = store.reserve(queues=["default"], worker=W1, lease=30)[0]
    store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    assert store.forget_job(second.id)
    third = guarded(key)
    assert store.enqueue_many([third]) == [third.id]


def test_unique_for_expires_on_the_stores_clock(store: Store) -> None:
    key = Guards(unique_key="digest", unique_for=0.5)
    first = guarded(key)
    store.enqueue_many([first])
    created = job(store, first.id).created_at
    assert store.enqueue_many([guarded(key)]) == [first.id]
    wait_until(lambda: store.now() > created + 0.6, what="unique_for to pass")
    later = guarded(key)
    assert store.enqueue_many([later]) == [later.id]  # the first is still queued, but expired
    assert counts(store)["queued"] == 2


DISPATCHER = r"""
import secrets, sys
from tenure.core.guards import Guards
from tenure.core.retry import Policy
from tenure.stores import open_store
from tenure.stores.base import NewJob

store = open_store(sys.argv[1])
store.now()  # connected before the start line, so all processes begin together
print("ready", flush=True)
sys.stdin.readline()
ids = []
for _ in range(50):
    job = NewJob(id=secrets.token_hex(8), name="unique_order", queue="default",
                 payload='{"args":[7],"kwargs":{}}', policy=Policy(),
                 guards=Guards(unique_key="unique_order:7"))
    ids += store.enqueue_many([job])
store.close()
print(" ".join(ids), flush=True)
"""


def test_concurrent_dispatches_of_one_key_from_four_processes_store_one_job(
    store: Store, store_url: str
) -> None:
    outputs, codes = race(DISPATCHER, store_url, timeout=120)
    answers = [out.split() for out in outputs]
    assert codes == [0, 0, 0, 0]
    assert sum(len(a) for a in answers) == 200
    assert len({i for a in answers for i in a}) == 1, "two dispatches both took the key"
    assert counts(store)["queued"] == 1


# -- overlap ---------------------------------------------------------------------------------
def test_overlap_defers_while_the_holder_runs_and_uses_no_try(store: Store) -> None:
    first = guarded(Guards(overlap_key="customer:1", overlap_delay=0.3))
    second = guarded(Guards(overlap_key="customer:1", overlap_delay=0.3))
    elsewhere = guarded(Guards(overlap_key="customer:2", overlap_delay=0.3))
    enqueue(store, first, second, elsewhere)
    got = store.reserve(queues=["default"], worker=W1, lease=30, limit=3)
    assert sorted(r.job_id for r in got) == sorted([first.id, elsewhere.id])
    held = job(store, second.id)
    assert held.state == "scheduled" and held.tries_used == 0
    assert outcomes(store, second.id) == ["deferred"]
    deferral = held.attempts[0]
    assert deferral.error is not None and "customer:1" in deferral.error
    assert first.id in deferral.error and "deferred 0.3 s" in deferral.error
    assert held.run_at == pytest.approx(deferral.started_at + 0.3, abs=0.05)
    r1 = next(r for r in got if r.job_id == first.id)
    assert store.end_attempt(Ending(job_id=first.id, token=r1.token))[0].accepted
    again = wait_until(
        lambda: store.reserve(queues=["default"], worker=W2, lease=30),
        what="the deferred job to start once the key is free",
    )
    assert [r.job_id for r in again] == [second.id]
    assert store.end_attempt(Ending(job_id=second.id, token=again[0].token))[0].accepted
    done = job(store, second.id)
    assert done.state == "succeeded" and done.tries_used == 1  # the deferral cost nothing
    assert outcomes(store, second.id) == ["deferred", "succeeded"]


def test_the_overlap_lock_follows_the_holders_lease(store: Store) -> None:
    holder = guarded(Guards(overlap_key="k", overlap_delay=0.05))
    waiter = guarded(Guards(overlap_key="k", overlap_delay=0.05))
    enqueue(store, holder)
    store.reserve(queues=["default"], worker=W1, lease=1.5)  # then never heartbeats: crashed
    enqueue(store, waiter)
    assert store.reserve(queues=["default"], worker=W2, lease=30) == []
    assert outcomes(store, waiter.id) == ["deferred"]
    got = wait_until(
        lambda: store.reserve(queues=["default"], worker=W2, lease=30),
        what="the key to free when the holder's lease expires",
    )
    assert [r.job_id for r in got] == [waiter.id]
    assert job(store, holder.id).lease_expires_at is not None  # not even rescued yet


def test_concurrent_reservers_never_overlap_one_key(store: Store) -> None:
    jobs = [
        guarded(Guards(overlap_key=f"key:{i % 2}", overlap_delay=0.01), queue="ov")
        for i in range(16)
    ]
    enqueue(store, *jobs)
    spans: list[tuple[str, float, float]] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    key_of = {j.id: j.guards.overlap_key or "" for j in jobs}

    def reserver(n: int) -> None:
        me = WorkerRef(id=f"ov-{n}", host="h", pid=n)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and counts(store)["succeeded"] < len(jobs):
                for r in store.reserve(queues=["ov"], worker=me, lease=30, limit=2):
                    time.sleep(0.02)  # the attempt's work
                    assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
                time.sleep(0.005)
        except BaseException as exc:
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=reserver, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert counts(store)["succeeded"] == len(jobs)
    for j in jobs:
        record = job(store, j.id)
        assert record.tries_used == 1
        ran = [a for a in record.attempts if a.outcome == "succeeded"]
        assert len(ran) == 1 and ran[0].ended_at is not None
        spans.append((key_of[j.id], ran[0].started_at, ran[0].ended_at))
    for key in {k for k, _, _ in spans}:
        mine = sorted((s, e) for k, s, e in spans if k == key)
        for (_, end), (start, _) in itertools.pairwise(mine):
            assert start >= end, f"two attempts of {key} overlapped: {mine}"


# -- rate limits -----------------------------------------------------------------------------
def test_rate_limit_defers_in_a_sliding_window_without_using_tries(store: Store) -> None:
    rate = Guards(rate_key="api", rate_limit=2, rate_window=1.0)
    jobs = [guarded(rate) for _ in range(5)]
    enqueue(store, *jobs)
    first = store.reserve(queues=["default"], worker=W1, lease=30, limit=5)
    assert len(first) == 2
    waiting = [j for j in jobs if j.id not in {r.job_id for r in first}]
    starts = [job(store, r.job_id).attempts[0].started_at for r in first]
    for j in waiting:
        record = job(store, j.id)
        assert record.state == "scheduled" and record.tries_used == 0
        assert outcomes(store, j.id) == ["deferred"]
        error = record.attempts[0].error or ""
        assert "rate limit 2 per 1 s" in error and "'api'" in error
        # deferred to when the window frees: one window after the oldest start
        assert record.run_at == pytest.approx(min(starts) + 1.0, abs=0.05)
    for r in first:
        store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    got: list[str] = []

    def more() -> bool:
        got.extend(r.job_id for r in store.reserve(queues=["default"], worker=W1, lease=30))
        return len(got) >= 2

    wait_until(more, timeout=10, what="the window to slide")
    started = sorted(
        a.started_at for j in jobs for a in job(store, j.id).attempts if a.outcome != "deferred"
    )
    assert len(started) == 4
    for i, s in enumerate(started):  # no window of 1 s holds more than 2 starts
        assert sum(1 for t in started[i:] if t < s + 1.0 - 1e-6) <= 2, started
    for j in jobs:
        assert job(store, j.id).tries_used <= 1
        assert all(a.outcome == "deferred" for a in job(store, j.id).attempts[:-1])


RATE_RESERVER = r"""
import json, os, sys, time
from tenure.stores import open_store
from tenure.core.records import Ending, WorkerRef

store = open_store(sys.argv[1])
store.now()
print("ready", flush=True)
sys.stdin.readline()
me = WorkerRef(id=f"rate-{os.getpid()}", host="h", pid=os.getpid())
deadline = time.monotonic() + float(sys.argv[2])
got = []
while time.monotonic() < deadline:
    for r in store.reserve(queues=["rate"], worker=me, lease=30, limit=2):
        got.append(r.job_id)
        store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    time.sleep(0.002)
store.close()
print(json.dumps(got), flush=True)
"""


def test_processes_racing_under_a_rate_limit_never_exceed_it(store: Store, store_url: str) -> None:
    rate = Guards(rate_key="rl", rate_limit=3, rate_window=0.5)
    jobs = [guarded(rate, queue="rate") for _ in range(12)]
    enqueue(store, *jobs)
    outputs, _ = race(RATE_RESERVER, store_url, "2.4", timeout=60)
    handed = [i for out in outputs for i in json.loads(out)]
    assert len(handed) == len(set(handed))
    started = sorted(
        a.started_at for j in jobs for a in job(store, j.id).attempts if a.outcome == "succeeded"
    )
    assert len(started) == len(handed) >= 6  # about 3 per half second for 2.4 s
    for i, s in enumerate(started):
        assert sum(1 for t in started[i:] if t < s + 0.5 - 1e-6) <= 3, started
    assert all(job(store, j.id).tries_used <= 1 for j in jobs)
    assert counts(store)["failed"] == 0


# -- once() ----------------------------------------------------------------------------------
def test_claim_once_is_true_once_per_job_and_key(store: Store) -> None:
    j = new_job()
    enqueue(store, j)
    r = store.reserve(queues=["default"], worker=W1, lease=0.5)[0]
    assert store.claim_once(job_id=j.id, token=r.token, key="charge") is True
    assert store.claim_once(job_id=j.id, token=r.token, key="charge") is False
    assert store.claim_once(job_id=j.id, token=r.token, key="email") is True
    expire_and_rescue(store, j.id)  # the attempt crashed; the re-run must skip the charge
    r2 = store.reserve(queues=["default"], worker=W2, lease=30)[0]
    assert store.claim_once(job_id=j.id, token=r2.token, key="charge") is False
    assert store.claim_once(job_id=j.id, token=r2.token, key="receipt") is True
    effects = {e.key: e for e in job(store, j.id).effects}
    assert sorted(effects) == ["charge", "email", "receipt"]
    assert effects["charge"].attempt == r.token and effects["receipt"].attempt == r2.token
    attempt_one = job(store, j.id).attempts[0]
    assert attempt_one.started_at <= effects["charge"].at
    # another job's keys are its own
    k = new_job()
    enqueue(store, k)
    rk = store.reserve(queues=["default"], worker=W1, lease=30)[0]
    assert store.claim_once(job_id=k.id, token=rk.token, key="charge") is True


def test_a_stale_token_claims_nothing(store: Store) -> None:
    j = new_job()
    enqueue(store, j)
    r1 = store.reserve(queues=["default"], worker=W1, lease=0.4)[0]
    expire_and_rescue(store, j.id)
    r2 = store.reserve(queues=["default"], worker=W2, lease=30)[0]
    assert store.claim_once(job_id=j.id, token=r1.token, key="charge") is False
    assert job(store, j.id).effects == []
    assert store.claim_once(job_id=j.id, token=r2.token, key="charge") is True
    store.end_attempt(Ending(job_id=j.id, token=r2.token))
    # a finished job's attempt holds no lease either
    assert store.claim_once(job_id=j.id, token=r2.token, key="late") is False
    assert [e.key for e in job(store, j.id).effects] == ["charge"]


def test_forget_removes_the_once_records(store: Store) -> None:
    j = new_job()
    enqueue(store, j)
    r = store.reserve(queues=["default"], worker=W1, lease=30)[0]
    assert store.claim_once(job_id=j.id, token=r.token, key="charge")
    store.end_attempt(Ending(job_id=j.id, token=r.token))
    assert store.forget_job(j.id)
    assert get_job(store, j.id) is None
    enqueue(store, j)  # the same id again: a new job, with nothing claimed
    r = store.reserve(queues=["default"], worker=W1, lease=30)[0]
    assert job(store, j.id).effects == []
    assert store.claim_once(job_id=j.id, token=r.token, key="charge") is True


# -- enqueue inside the application's transaction -------------------------------------------
@pytest.fixture
def conn(store: Store, kit: Kit) -> Iterator[Any]:
    """The application's own connection, where the store can enqueue in its transaction."""
    if not store.capabilities.enqueue_in_caller_transaction:
        pytest.skip("this store has no application transaction (see the refusal test)")
    c = kit.app_connection()
    try:
        yield c
    finally:
        c.close()


def test_enqueue_in_a_rolled_back_transaction_leaves_no_job(store: Store, conn: Any) -> None:
    j = new_job()
    assert store.enqueue_many([j], conn=conn) == [j.id]
    assert get_job(store, j.id) is None  # not visible before the application commits
    conn.rollback()
    assert get_job(store, j.id) is None
    assert store.reserve(queues=["default"], worker=W1, lease=30) == []


def test_a_store_without_caller_transactions_refuses_conn(store: Store) -> None:
    if store.capabilities.enqueue_in_caller_transaction:
        pytest.skip("this store enqueues in the application's transaction (the tests around)")
    with pytest.raises(ConfigError):
        store.enqueue_many([new_job()], conn=object())
    assert counts(store)["queued"] == 0


def test_enqueue_in_a_committed_transaction_is_visible_after_commit(
    store: Store, conn: Any
) -> None:
    first = guarded(Guards(unique_key="signup:1"))
    dup = guarded(Guards(unique_key="signup:1"))
    plain = new_job()
    assert store.enqueue_many([first, dup, plain], conn=conn) == [first.id, first.id, plain.id]
    assert counts(store)["queued"] == 0
    conn.commit()
    assert counts(store)["queued"] == 2
    got = store.reserve(queues=["default"], worker=W1, lease=30, limit=5)
    assert sorted(r.job_id for r in got) == sorted([first.id, plain.id])
    assert store.enqueue_many([guarded(Guards(unique_key="signup:1"))]) == [first.id]


def test_enqueue_refuses_a_connection_it_cannot_write_in(
    store: Store, kit: Kit, tmp_path: Path
) -> None:
    capable = store.capabilities.enqueue_in_caller_transaction
    with pytest.raises(ConfigError, match="conn=" if capable else None):
        store.enqueue_many([new_job()], conn=object())
    if capable:
        other = foreign_connection(tmp_path)
        try:
            with pytest.raises(ConfigError, match=kit.foreign_connection_refusal):
                store.enqueue_many([new_job()], conn=other)
        finally:
            other.close()
    assert counts(store)["queued"] == 0


def test_workers_wake_only_when_the_application_commits(
    store: Store, other_store: Store, conn: Any
) -> None:
    if not store.capabilities.listen_notify:
        pytest.skip("this store's wake-ups do not travel with a transaction")
    other_store.wait_for_work(queues=["default"], timeout=0.1)  # LISTEN is in place
    store.enqueue_many([new_job()], conn=conn)
    began = time.monotonic()
    other_store.wait_for_work(queues=["default"], timeout=0.6)
    assert time.monotonic() - began >= 0.5, "woke before the application committed"
    conn.commit()
    began = time.monotonic()
    other_store.wait_for_work(queues=["default"], timeout=10)
    assert time.monotonic() - began < 5, "the commit's NOTIFY did not wake the worker"


def test_jobs_without_guards_reserve_in_order_as_before(store: Store) -> None:
    """Guards leave no trace on jobs without them: plain jobs reserve as before."""
    jobs = [new_job() for _ in range(5)]
    enqueue(store, *jobs)
    got = store.reserve(queues=["default"], worker=W1, lease=30, limit=5)
    assert [r.job_id for r in got] == [j.id for j in jobs]
    assert collections.Counter(outcomes(store, j.id)[0] for j in jobs) == {None: 5}
