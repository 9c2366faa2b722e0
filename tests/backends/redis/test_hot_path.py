"""The Redis store's hot path (issue 32): a plain job goes through the short enqueue script, a
guarded one through the generic one, and both read back alike; the combined end-and-claim call
answers flat and still refuses a stale token."""

from __future__ import annotations

import pytest

from tenure.core.guards import NO_GUARDS, Guards
from tenure.core.records import Ending, NewJob, WorkerRef
from tenure.core.retention import Keep
from tenure.core.retry import Policy
from tenure.stores.base import get_job
from tenure.stores.redis import RedisStore
from tenure.stores.redis.database import plain

WORKER = WorkerRef(id="w-hot", host="host-h", pid=7)


def new(job_id: str, **kw: object) -> NewJob:
    fields: dict[str, object] = {"name": "n", "payload": "[1]", "policy": Policy(tries=2), **kw}
    return NewJob(id=job_id, queue="default", **fields)  # type: ignore[arg-type]


def test_only_a_job_with_no_guard_batch_or_chain_is_plain() -> None:
    assert plain(new("a"))
    assert plain(new("a", delay=5.0, priority=-3, keep=Keep(succeeded=60.0, failed=None)))
    assert not plain(new("a", guards=Guards(unique_key="k")))
    # an empty Guards that is not the shared NO_GUARDS: the generic script, which is as right
    assert not plain(new("a", guards=Guards())) and Guards() == NO_GUARDS
    assert not plain(new("a", batch_id="b"))
    assert not plain(new("a", chain="{}"))


def test_plain_and_generic_enqueues_write_jobs_that_read_back_alike(store: RedisStore) -> None:
    kw: dict[str, object] = {
        "delay": 30.0,
        "priority": 4,
        "keep": Keep(succeeded=60.0, failed=None),
    }
    store.enqueue_many([new("plain", **kw)])
    store.enqueue_many([new("generic", guards=Guards(), **kw)])
    a, b = get_job(store, "plain"), get_job(store, "generic")
    assert a is not None and b is not None
    assert (a.state, a.priority, a.tries_used, a.exceptions) == ("scheduled", 4, 0, 0)
    same = ("name", "queue", "payload", "state", "priority", "tries_used", "exceptions", "policy")
    assert all(getattr(a, f) == getattr(b, f) for f in same)
    assert a.run_at - a.created_at == pytest.approx(30.0, abs=1e-5)


def test_a_plain_id_sent_twice_is_created_once(store: RedisStore) -> None:
    assert store.enqueue_many([new("once", payload="[1]")]) == ["once"]
    assert store.enqueue_many([new("once", payload="[2]")]) == ["once"]
    got = store.reserve(queues=["default"], worker=WORKER, lease=30, limit=5)
    assert [(r.job_id, r.payload) for r in got] == [("once", "[1]")]


def test_end_and_claim_answers_flat_and_fences_a_stale_token(store: RedisStore) -> None:
    store.enqueue_many([new("first"), new("second"), new("third")])
    (held,) = store.reserve(queues=["default"], worker=WORKER, lease=30)
    ended, following = store.end_attempt(
        Ending(job_id=held.job_id, token=held.token, result='"r"'),
        queues=["default"],
        worker=WORKER,
        lease=30,
    )
    assert ended.accepted and following is not None and following.job_id == "second"
    assert (following.attempt, following.payload, following.batch_id) == (1, "[1]", None)
    # the same token again: refused, and the claim that rode with it still happens
    stale, claimed = store.end_attempt(
        Ending(job_id=held.job_id, token=held.token), queues=["default"], worker=WORKER, lease=30
    )
    assert (stale.accepted, stale.state) == (False, "succeeded")
    assert claimed is not None and claimed.job_id == "third"
    record = get_job(store, "first")
    assert record is not None and record.result_text == '"r"'
    assert [(a.number, a.outcome, a.worker_id, a.host, a.pid) for a in record.attempts] == [
        (1, "succeeded", "w-hot", "host-h", 7)
    ]


def test_a_job_sequence_comes_from_the_clock_in_order_with_no_counter(store: RedisStore) -> None:
    """A new job's seq is the server's clock in microseconds (no INCR of a counter per job,
    issue 32): one call's jobs in the order sent, plain or generic, each later call's after
    them, and the newest listed first."""
    client = store.db.client
    store.enqueue_many([new("a1"), new("a2"), new("a3", guards=Guards()), new("a4")])
    store.enqueue_many([new("b1", guards=Guards()), new("b2")])
    store.enqueue_many([new("c1")])
    order = ["a1", "a2", "a3", "a4", "b1", "b2", "c1"]
    base = store.db.base("default")
    seqs = [int(client.hget(f"{base}:job:{job_id}", "seq")) for job_id in order]
    assert seqs == sorted(set(seqs))
    now_us = store.now() * 1e6
    assert now_us - 60e6 < seqs[0] <= seqs[-1] <= now_us
    assert not client.exists(f"{base}:seq")
    assert [r.id for r in store.list_jobs(limit=10)] == order[::-1]
    got = store.reserve(queues=["default"], worker=WORKER, lease=30, limit=10)
    assert [r.job_id for r in got] == order
