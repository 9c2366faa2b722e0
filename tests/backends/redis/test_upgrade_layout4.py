"""A store written in key layout 4 (the release before layout 5) keeps working after the upgrade:
its index of every job (`all`), which layout 5 no longer writes, is dropped, and every job is
still there, shown with the same history, listed (every state merged from the structures that
hold each job once), counted and runnable as before; by `tenure migrate` or a worker's start.

The layout-4 store is written by that release's own scripts, frozen in layout4/lua (a copy of
src/tenure/stores/redis/lua as layout 4 shipped it), driven by this code's Python, whose calls
to the scripts (KEYS, ARGV and replies) did not change; they run by EVALSHA, as on Redis 6.2."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from backends.redis.frozen import FrozenDatabase, FrozenStore
from backends.redis.test_store import wait_until
from backends.redis.test_upgrade import W1, W2, every_job, goes_on, listed, new, take
from backends.redis.test_upgrade_layout3 import fill_with_history
from tenure.core.records import Ending
from tenure.core.retry import Policy
from tenure.stores.base import get_job
from tenure.stores.redis import RedisStore
from tenure.stores.redis.connection import connect

from servers import isolated_store_url


class Layout4Database(FrozenDatabase):
    layout, older_calls = 4, True


class Layout4Store(FrozenStore):
    database = Layout4Database


# The upgrade's keys are each in its queue's slot: it runs on a Redis Cluster and behind
# Sentinel as on one server.
@pytest.fixture(params=["redis_url", "redis_cluster_url", "redis_sentinel_url"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with isolated_store_url("redis", request.getfixturevalue(request.param), tmp_path) as isolated:
        yield isolated


@pytest.fixture
def client(url: str) -> Iterator[redis.Redis]:
    """A client of the store's server (or cluster) of its own."""
    c = connect(url).client
    yield c
    c.close()


def every_job_index(client: redis.Redis, prefix: str) -> list[str]:
    return sorted(client.scan_iter(match=f"{prefix}:*:all"))


@pytest.mark.parametrize("by", ["migrate", "worker start"])
def test_a_layout_4_store_is_upgraded_in_place_and_nothing_is_lost(
    url: str, client: redis.Redis, by: str
) -> None:
    old = Layout4Store(url)
    try:
        ids = fill_with_history(old)
        before = {job_id: get_job(old, job_id) for job_id in every_job(old)}
        lists, counts = listed(old), old.queue_counts()
        newest_first = [record.id for record in old.list_jobs(limit=1000)]
    finally:
        old.close()
    meta = f"{old.prefix}:{{g}}:meta"
    assert client.hget(meta, "layout") == "4"
    # queued, scheduled, running, failed, succeeded, batched, chained, parked, paused: every
    # one of them in layout 4's index of every job
    indexed = sum(int(client.zcard(key)) for key in every_job_index(client, old.prefix))
    assert indexed == len(before) >= 15

    store = RedisStore(url)
    try:
        if by == "migrate":
            store.migrate()
            store.migrate()  # idempotent
        else:  # a worker's first call is a reservation: the layout is checked before it
            assert store.reserve(queues=["nothing-here"], worker=W2, lease=60, limit=1) == []
        assert client.hget(meta, "layout") == "6"
        assert every_job_index(client, old.prefix) == []

        # shown with the same history, listed (all states: newest first, as the index listed
        # them), and counted exactly as layout 4 showed them
        after = {job_id: get_job(store, job_id) for job_id in before}
        for job_id in before:
            assert after[job_id] == before[job_id], (after[job_id], before[job_id])
        assert [record.id for record in store.list_jobs(limit=1000)] == newest_first
        assert listed(store) == lists
        assert store.queue_counts() == counts
        running_id, _ = ids["running"]
        shown = get_job(store, running_id)
        assert shown is not None and shown.state == "running"
        (opened,) = shown.attempts
        assert (opened.worker_id, opened.host, opened.memory_mb) == ("w-old", "old-host", 12.5)

        goes_on(store, ids, counts, opened)
        # the job layout 4 left running on an old worker ends on the new code's scripts
        late = ids["late"]
        assert store.end_attempt(Ending(job_id=late.job_id, token=late.token))[0].accepted
        # layout 5 writes no index of every job, and still lists a new job first
        store.enqueue_many([fresh := new("plain")])
        assert store.list_jobs(limit=1)[0].id == fresh.id
        assert every_job_index(client, old.prefix) == []
    finally:
        store.close()


def test_what_an_old_worker_adds_to_the_dropped_index_goes_with_its_job(
    url: str, client: redis.Redis
) -> None:
    """A rolling deploy: a worker of the old release, still running after a new one upgraded
    the store, enqueues into `all` as layout 4 did. The job is listed once, and forgetting it
    takes its entry with it."""
    old = Layout4Store(url)
    try:
        old.db.check_layout()
        store = RedisStore(url)
        try:
            store.migrate()
            old.enqueue_many([job := new("late")])
            (index,) = every_job_index(client, store.prefix)
            assert [r.id for r in store.list_jobs(limit=10)] == [job.id]
            ran = take(store, "late", W1)
            store.end_attempt(Ending(job_id=ran.job_id, token=ran.token))
            assert store.forget_job(job.id)
            assert not client.exists(index)
        finally:
            store.close()
    finally:
        old.close()


def test_an_attempt_an_old_worker_claims_after_the_upgrade_keeps_its_history(
    url: str, client: redis.Redis
) -> None:
    """A rolling deploy: a worker of the old release claims jobs after a new one upgraded the
    store, keeping their open attempts where layout 4 did (`cur.*`). Its beats land there; the
    new code's rescue of one and end of another write those attempts whole, and a later claim
    by the new code starts a clean attempt (no field of the old claim shows in it)."""
    old = Layout4Store(url)
    try:
        old.db.check_layout()
        store = RedisStore(url)
        try:
            store.migrate()
            old.enqueue_many([new("mixed", policy=Policy(tries=3)), new("mixed")])
            crashing = old.reserve(queues=["mixed"], worker=W1, lease=0.5, limit=1)[0]
            ending = old.reserve(queues=["mixed"], worker=W1, lease=60, limit=1)[0]
            beat = [(crashing.job_id, crashing.token)]
            old.heartbeat(worker=W1, leases=beat, lease=0.5, memory={crashing.job_id: 7.5})
            wait_until(lambda: store.now() > crashing.lease_expires_at + 0.5, "lease to expire")
            (rescued,) = store.sweep(prune=False).rescued
            assert rescued.job_id == crashing.job_id
            failed = Ending(job_id=ending.job_id, token=ending.token, outcome="failed", error="x")
            assert store.end_attempt(failed)[0].accepted

            record = get_job(store, ending.job_id)
            assert record is not None
            ((outcome, worker, host, memory),) = [
                (a.outcome, a.worker_id, a.host, a.memory_mb) for a in record.attempts
            ]
            assert (outcome, worker, host, memory) == ("failed", "w-old", "old-host", None)
            crashed = get_job(store, crashing.job_id)
            assert crashed is not None
            (first,) = crashed.attempts
            assert (first.outcome, first.worker_id, first.memory_mb) == ("crashed", "w-old", 7.5)
            assert first.ended_at == first.last_heartbeat_at

            client.zadd(
                f"{store.db.base('mixed')}:queued",
                {m: 0 for m in client.zrange(f"{store.db.base('mixed')}:queued", 0, -1)},
            )  # its backoff over
            again = take(store, "mixed", W2)
            assert again.job_id == crashing.job_id and again.attempt == 2
            shown = get_job(store, crashing.job_id)
            assert shown is not None
            second = shown.attempts[1]
            assert (second.worker_id, second.host, second.memory_mb) == ("w-new", "new-host", None)
            assert store.end_attempt(Ending(job_id=again.job_id, token=again.token))[0].accepted
            done = get_job(store, crashing.job_id)
            assert done is not None
            assert [(a.outcome, a.worker_id) for a in done.attempts] == [
                ("crashed", "w-old"),
                ("succeeded", "w-new"),
            ]
        finally:
            store.close()
    finally:
        old.close()
