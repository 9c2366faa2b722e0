"""Redis keeps no schema, but its key layout has a version: written on first use, and keys
written in a layout this code does not know are refused with a clear error, before any write."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from tenure.core.errors import ConfigError
from tenure.core.guards import Guards
from tenure.core.records import Ending, NewJob, WorkerRef
from tenure.core.retry import Policy
from tenure.stores.base import get_job
from tenure.stores.redis import RedisStore, operations

from servers import isolated_store_url


def job(priority: int = 0, delay: float = 0.0) -> NewJob:
    return NewJob(
        id=secrets.token_hex(8),
        name="j",
        queue="default",
        payload="[]",
        policy=Policy(),
        priority=priority,
        delay=delay,
    )


def test_first_use_records_the_layout_without_migrate(url: str, client: redis.Redis) -> None:
    store = RedisStore(url)
    try:
        store.enqueue_many([job()])
        assert client.hget(f"{store.prefix}:{{g}}:meta", "layout") == "6"
    finally:
        store.close()


def test_layout_1_keys_are_taken_over_and_marked_6(url: str, client: redis.Redis) -> None:
    """Layout 2 added priorities beside layout 1's keys, which read the same, layout 3
    dropped indexes, layout 4 moved attempts into the job's hash, layout 5 dropped the
    index of every job and layout 6 numbers jobs by the clock; marking the keys 6 makes an
    older tenure stop rather than miss jobs of other priorities, list jobs from an index nobody
    keeps, show a history it no longer finds or list its new jobs as the oldest."""
    store = RedisStore(url)
    try:
        meta = f"{store.prefix}:{{g}}:meta"
        client.hset(meta, "layout", "1")
        (stored,) = store.enqueue_many([job()])
        assert client.hget(meta, "layout") == "6"
        assert get_job(store, stored) is not None
    finally:
        store.close()


@pytest.mark.parametrize(
    ("stored", "message"),
    [("7", "use layout 7, newer than this tenure understands"), ("v1", "got 'v1'")],
)
def test_keys_in_another_layout_are_refused_before_any_write(
    url: str, client: redis.Redis, stored: str, message: str
) -> None:
    store = RedisStore(url)
    try:
        meta = f"{store.prefix}:{{g}}:meta"
        client.hset(meta, "layout", stored)
        with pytest.raises(ConfigError, match=message):
            store.enqueue_many([job()])
        with pytest.raises(ConfigError, match=message):
            store.migrate()
        assert list(client.scan_iter(match=store.db.key_pattern())) == [meta]
    finally:
        store.close()


def test_a_priority_leaves_the_list_once_a_reserve_finds_it_empty(
    url: str, client: redis.Redis
) -> None:
    """`priorities` lists the non-zero priorities that may hold jobs, and reserve walks each: one
    emptied by taking its last job goes when a reserve finds nothing in it, one holding only
    scheduled jobs stays."""
    store = RedisStore(url)
    worker = WorkerRef(id="w", host="h", pid=1)
    try:
        listed = f"{store.prefix}:{{q:default}}:priorities"
        store.enqueue_many([job(-1), job(-1), job(2), job(3, delay=3600)])
        taken = [store.reserve(queues=["default"], worker=worker, lease=30, limit=2)]
        taken.append(store.reserve(queues=["default"], worker=worker, lease=30, limit=1))
        assert client.zrange(listed, 0, -1) == ["2", "3"]
        taken.append(store.reserve(queues=["default"], worker=worker, lease=30, limit=1))
        assert [len(t) for t in taken] == [2, 1, 0]
        assert client.zrange(listed, 0, -1) == ["3"]
    finally:
        store.close()


@pytest.mark.parametrize("most", [10_000, 2])
def test_queued_and_running_jobs_are_listed_newest_first_without_an_index(
    url: str, most: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Layout 3 keeps no index of queued or running jobs, nor layout 5 of every job: a listing
    reads them whole from the queued zsets, parked lists and lease zset, or, past
    LISTED_READ_MAX of them, scans those for the newest; both give the same answer, and the
    listing of every state merges them with the finished jobs' indexes."""
    monkeypatch.setattr(operations, "LISTED_READ_MAX", most)
    store = RedisStore(url)
    worker = WorkerRef(id="w", host="h", pid=1)
    try:
        first, second, later, urgent = job(), job(), job(delay=3600), job(priority=-1)
        store.enqueue_many([first, second, later, urgent])
        (running,) = store.reserve(queues=["default"], worker=worker, lease=30, limit=1)
        assert running.job_id == urgent.id
        store.enqueue_many([newest := job()])

        def ids(state: str) -> list[str]:
            return [r.id for r in store.list_jobs(state=state, limit=10)]

        assert ids("queued") == [newest.id, second.id, first.id]
        assert [r.id for r in store.list_jobs(state="queued", limit=2)] == [newest.id, second.id]
        assert ids("scheduled") == [later.id]
        assert ids("running") == [urgent.id]
        store.end_attempt(Ending(job_id=running.job_id, token=running.token))
        every = [newest.id, urgent.id, later.id, second.id, first.id]
        assert [r.id for r in store.list_jobs(limit=10)] == every
        assert [r.id for r in store.list_jobs(limit=2)] == every[:2]
        assert ids("scheduled") == [later.id] and ids("succeeded") == [urgent.id]
    finally:
        store.close()


@pytest.fixture(params=["redis_url", "redis_cluster_url", "redis_sentinel_url"])
def any_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with isolated_store_url("redis", request.getfixturevalue(request.param), tmp_path) as isolated:
        yield isolated


def test_a_backlog_too_large_to_read_whole_is_scanned_on_every_topology(
    any_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past LISTED_READ_MAX queued or running jobs a listing scans the queued zsets (every
    priority), the parked lists and the lease zset (ZSCAN, LRANGE: one key a call, so a cluster
    routes each), and lists what a listing read whole would."""
    store = RedisStore(any_url)
    worker = WorkerRef(id="w", host="h", pid=1)
    try:
        limited = [
            replace(job(), guards=Guards(concurrency_key="k", concurrency_limit=1))
            for _ in range(2)
        ]
        store.enqueue_many(limited)
        (holder,) = store.reserve(queues=["default"], worker=worker, lease=30, limit=1)
        assert store.reserve(queues=["default"], worker=worker, lease=30, limit=1) == []
        plain = [job(), job(), job(delay=3600), job(priority=2)]
        for one in plain:
            store.enqueue_many([one])
        first, second, later, low = (one.id for one in plain)
        expected = {
            "queued": [low, second, first, limited[1].id],
            "scheduled": [later],
            "running": [holder.job_id],
            None: [low, later, second, first, limited[1].id, holder.job_id],
        }
        for most in (10_000, 2):
            monkeypatch.setattr(operations, "LISTED_READ_MAX", most)
            for state, ids in expected.items():
                assert [r.id for r in store.list_jobs(state=state, limit=10)] == ids, (most, state)
            assert [r.id for r in store.list_jobs(state="queued", limit=1)] == [low]
    finally:
        store.close()
