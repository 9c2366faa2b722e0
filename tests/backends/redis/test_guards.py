"""Redis-specific behaviour of the guards: every guard key lives in its queue's Cluster slot (and
the guards run on a real one-node cluster), a reservation facing deferrals with no delay cannot
spin, forgetting a job drops its guard entries, a rate window's key expires, damaged once()
records still read, and the verbs Redis cannot offer refuse with a ConfigError. Guard semantics
shared with the other backends live in tests/conformance/test_guards.py.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
from redis.crc import key_slot

from conformance.helpers import counts, wait_until
from tenure.core.errors import ConfigError
from tenure.core.guards import Guards
from tenure.core.records import Ending, NewBatch, NewJob, WorkerRef
from tenure.core.retry import Policy
from tenure.stores.base import get_job
from tenure.stores.redis import RedisStore, split_prefix

from servers import raw_redis

W1 = WorkerRef(id="w-1", host="host-a", pid=111)
W2 = WorkerRef(id="w-2", host="host-b", pid=222)


def job(guards: Guards | None = None, queue: str = "default") -> NewJob:
    return NewJob(
        id=secrets.token_hex(6),
        name="charge",
        queue=queue,
        payload='{"args":[],"kwargs":{}}',
        policy=Policy(tries=3, backoff=0),
        guards=guards or Guards(),
    )


def keys_of(store: RedisStore) -> list[str]:
    client = raw_redis(split_prefix(store.url)[0])
    try:
        return sorted(client.scan_iter(match=store.db.key_pattern(), count=1000))
    finally:
        client.close()


def drop_keys(store: RedisStore) -> None:
    client = raw_redis(split_prefix(store.url)[0])
    try:
        pipe = client.pipeline(transaction=False)  # one key per DEL: a cluster needs one slot
        for key in client.scan_iter(match=store.db.key_pattern(), count=1000):
            pipe.delete(key)
        pipe.execute()
    finally:
        client.close()


@pytest.fixture
def make_store(redis_url: str) -> Iterator[Callable[..., RedisStore]]:
    made: list[RedisStore] = []

    def make(url: str = redis_url) -> RedisStore:
        sep = "&" if "?" in url else "?"
        store = RedisStore(f"{url}{sep}prefix=tenure_guards_{secrets.token_hex(5)}")
        made.append(store)
        return store

    yield make
    for store in made:
        drop_keys(store)
        store.close()


def exercise_every_guard(store: RedisStore, queue: str) -> None:
    """Unique, overlap, rate and once() in one queue, asserting the semantics on the way."""
    first = job(Guards(unique_key="charge:1", overlap_key="charge:c1", overlap_delay=0), queue)
    dup = job(Guards(unique_key="charge:1"), queue)
    assert store.enqueue_many([first, dup]) == [first.id, first.id]
    same_key = job(Guards(overlap_key="charge:c1", overlap_delay=5), queue)
    limited = [job(Guards(rate_key="charge", rate_limit=1, rate_window=60), queue) for _ in "ab"]
    store.enqueue_many([same_key, *limited])
    got = store.reserve(queues=[queue], worker=W1, lease=30, limit=10)
    # first starts; same_key waits for it; one of the limited two starts, the other waits
    assert sorted(r.job_id for r in got) == sorted([first.id, limited[0].id])
    running = {r.job_id: r for r in got}
    assert store.claim_once(job_id=first.id, token=running[first.id].token, key="charge")
    assert not store.claim_once(job_id=first.id, token=running[first.id].token, key="charge")
    for waiting in (same_key, limited[1]):
        record = get_job(store, waiting.id)
        assert record is not None and record.state == "scheduled" and record.tries_used == 0
        assert [a.outcome for a in record.attempts] == ["deferred"]
    assert store.end_attempt(Ending(job_id=first.id, token=running[first.id].token))[0].accepted
    record = get_job(store, first.id)
    assert record is not None and [(e.key, e.attempt) for e in record.effects] == [("charge", 1)]


def test_every_guard_key_lives_in_its_queues_slot(make_store: Callable[..., RedisStore]) -> None:
    store = make_store()
    exercise_every_guard(store, "billing")
    slot = key_slot(f"{store.prefix}:{{q:billing}}:queued".encode())
    keys = keys_of(store)
    guard_keys = [k for k in keys if any(f":{kind}" in k for kind in ("uniq", "overlap", "rate"))]
    assert {k.split("}:", 1)[1].split(":", 1)[0] for k in guard_keys} == {
        "uniq",
        "overlap",
        "rate",
    }
    assert any(":once:" in k for k in keys)
    for key in keys:
        if "{q:" in key:
            assert key_slot(key.encode()) == slot, key


def test_guards_are_per_queue(make_store: Callable[..., RedisStore]) -> None:
    """Documented: one script reaches one slot, so the same key in two queues is two keys."""
    store = make_store()
    a, b = job(Guards(unique_key="k"), "a"), job(Guards(unique_key="k"), "b")
    assert store.enqueue_many([a, b]) == [a.id, b.id]


def test_a_rate_window_key_expires_after_the_window(make_store: Callable[..., RedisStore]) -> None:
    store = make_store()
    store.enqueue_many([job(Guards(rate_key="r", rate_limit=5, rate_window=2))])
    assert store.reserve(queues=["default"], worker=W1, lease=30)
    client = raw_redis(split_prefix(store.url)[0])
    try:
        ttl = client.pttl(f"{store.prefix}:{{q:default}}:rate:r")
    finally:
        client.close()
    assert 2000 < ttl <= 3000


def test_deferrals_without_delay_cannot_make_a_reservation_spin(
    make_store: Callable[..., RedisStore],
) -> None:
    store = make_store()
    guards = Guards(overlap_key="hot", overlap_delay=0)
    holder = job(guards)
    store.enqueue_many([holder])
    assert [r.job_id for r in store.reserve(queues=["default"], worker=W1, lease=30)] == [holder.id]
    waiting = [job(guards) for _ in range(100)]
    plain = job()
    store.enqueue_many([*waiting, plain])
    got = store.reserve(queues=["default"], worker=W2, lease=30, limit=2)
    # 100 blocked jobs in front of the plain one: the reservation looks at limit + 32 jobs,
    # each once, defers them (still due now) and returns without reaching the plain job
    assert got == []
    deferred = [get_job(store, w.id) for w in waiting]
    counts = [len(r.attempts) for r in deferred if r is not None]
    assert sum(counts) == 2 + 32 and max(counts) == 1
    assert all(r is not None and r.state == "queued" for r in deferred)


def test_forget_drops_the_jobs_guard_entries(make_store: Callable[..., RedisStore]) -> None:
    store = make_store()
    j = job(Guards(unique_key="u", overlap_key="o"))
    store.enqueue_many([j])
    (r,) = store.reserve(queues=["default"], worker=W1, lease=30)
    assert store.claim_once(job_id=j.id, token=r.token, key="e")
    assert store.end_attempt(Ending(job_id=j.id, token=r.token))[0].accepted
    assert any(":once:" in k or ":uniq:" in k or k.endswith(":overlap") for k in keys_of(store))
    assert store.forget_job(j.id)
    assert [k for k in keys_of(store) if ":once:" in k or ":uniq:" in k or ":overlap" in k] == []


def test_a_damaged_once_record_still_reads(make_store: Callable[..., RedisStore]) -> None:
    store = make_store()
    j = job()
    store.enqueue_many([j])
    client = raw_redis(split_prefix(store.url)[0])
    try:
        client.hset(f"{store.prefix}:{{q:default}}:once:{j.id}", "charge", "garbage")
    finally:
        client.close()
    record = get_job(store, j.id)
    assert record is not None and [(e.key, e.attempt, e.at) for e in record.effects] == [
        ("charge", 0, 0.0)
    ]


def test_what_redis_cannot_do_is_refused_clearly(make_store: Callable[..., RedisStore]) -> None:
    store = make_store()
    with pytest.raises(ConfigError, match="Redis cannot enqueue inside your database"):
        store.enqueue_many([job()], conn=object())
    assert counts(store)["queued"] == 0
    with pytest.raises(ConfigError, match="PostgreSQL or SQLite"):
        store.job_transaction(job_id="x", token=1)


def test_unique_for_counts_on_the_servers_clock(make_store: Callable[..., RedisStore]) -> None:
    store = make_store()
    first = job(Guards(unique_key="u", unique_for=0.3))
    assert store.enqueue_many([first]) == [first.id]
    again = replace(job(), guards=first.guards)
    assert store.enqueue_many([again]) == [first.id]
    time.sleep(0.35)  # unique_for itself: the lock's length, not a wait for a result
    assert store.enqueue_many([again]) == [again.id]


# -- Redis Cluster -------------------------------------------------------------------------------
def test_guards_run_on_a_cluster_within_one_slot(
    cluster_node: str, make_store: Callable[..., RedisStore]
) -> None:
    store = make_store(cluster_node)
    exercise_every_guard(store, "billing")
    slot = key_slot(f"{store.prefix}:{{q:billing}}:queued".encode())
    for key in keys_of(store):
        if "{q:" in key:
            assert key_slot(key.encode()) == slot, key


def test_batch_members_keep_their_overlap_and_rate_guards(
    make_store: Callable[..., RedisStore],
) -> None:
    store = make_store()
    holder = job(Guards(overlap_key="o"))
    store.enqueue_many([holder])
    assert store.reserve(queues=["default"], worker=W1, lease=30)
    members = [
        job(Guards(overlap_key="o", overlap_delay=5)),
        job(Guards(rate_key="r", rate_limit=1, rate_window=60)),
    ]
    members.append(job(Guards(rate_key="r", rate_limit=1, rate_window=60)))
    store.enqueue_many(members, batch=NewBatch(id=secrets.token_hex(4), name="guarded"))
    got = store.reserve(queues=["default"], worker=W2, lease=30, limit=5)
    assert [r.job_id for r in got] == [members[1].id]
    for waiting in (members[0], members[2]):
        record = get_job(store, waiting.id)
        assert record is not None and [a.outcome for a in record.attempts] == ["deferred"]


def test_an_end_hands_back_as_many_as_its_end_and_lapsed_holders_free(
    make_store: Callable[..., RedisStore],
) -> None:
    """One end frees its own slot and every slot a lapsed holder still held: the parked jobs
    behind them all go back. The end counts the key's set by its size first (issue 31), so it
    must count the lapsed holder out once the size's sure slots are used."""
    store = make_store()
    a, b, c, d = (job(Guards(concurrency_key="k", concurrency_limit=2)) for _ in range(4))
    store.enqueue_many([a, b, c, d])
    [ra] = store.reserve(queues=["default"], worker=W1, lease=0.3)
    [rb] = store.reserve(queues=["default"], worker=W1, lease=30)
    assert (ra.job_id, rb.job_id) == (a.id, b.id)
    assert store.reserve(queues=["default"], worker=W2, lease=30, limit=10) == []  # c, d parked
    wait_until(lambda: store.now() > ra.lease_expires_at, what="a's lease to lapse")
    assert store.end_attempt(Ending(job_id=rb.job_id, token=rb.token))[0].accepted
    started = store.reserve(queues=["default"], worker=W2, lease=30, limit=10)
    assert sorted(r.job_id for r in started) == sorted([c.id, d.id])
