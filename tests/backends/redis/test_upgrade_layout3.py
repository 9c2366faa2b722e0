"""A store written in key layout 3 (the release before layout 4) keeps working after the upgrade:
its ended attempts, kept in a hash per job (`att:ID`), move into the job's own hash, a page of
each queue at a time, and every job is still there, shown with the same history, listed,
counted and runnable as before.

The layout-3 store is written by that release's own scripts, frozen in layout3/lua (a copy of
src/tenure/stores/redis/lua as layout 3 shipped it), driven by this code's Python, whose calls
to the scripts (KEYS, ARGV and replies) did not change; they run by EVALSHA, as on Redis 6.2."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from backends.redis.frozen import FrozenDatabase, FrozenStore
from backends.redis.test_upgrade import (
    W1,
    W2,
    every_job,
    fill,
    goes_on,
    listed,
    new,
    take,
)
from tenure.core.guards import Guards
from tenure.core.records import Ending
from tenure.core.retry import Policy
from tenure.stores.base import get_job
from tenure.stores.redis import RedisStore, database
from tenure.stores.redis.connection import connect

from servers import isolated_store_url


class Layout3Database(FrozenDatabase):
    layout, older_calls = 3, True


class Layout3Store(FrozenStore):
    database = Layout3Database


# The upgrade's keys of one job are in one slot (its queue's hash tag): it runs on a Redis
# Cluster and behind Sentinel as on one server.
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


def fill_with_history(store: RedisStore) -> dict[str, Any]:
    """fill()'s jobs, and jobs whose history has more than one attempt or a deferral."""
    ids = fill(store)
    # failed once, queued again for its second try (scheduled by its backoff: an hour, so that
    # it is still scheduled when the upgraded store lists it, however slow the machine)
    store.enqueue_many([new("again", policy=Policy(tries=3, backoff=3600))])
    first = take(store, "again")
    ending = Ending(job_id=first.job_id, token=first.token, outcome="failed", error="flaky")
    store.end_attempt(ending)
    ids["retrying"] = first.job_id
    # two jobs of one rate key allowing one start an hour: the second's claim is deferred
    rated = [new("rated", guards=Guards(rate_key="r", rate_limit=1, rate_window=3600))]
    rated.append(new("rated", guards=Guards(rate_key="r", rate_limit=1, rate_window=3600)))
    store.enqueue_many(rated)
    started = take(store, "rated")
    assert store.reserve(queues=["rated"], worker=W1, lease=60, limit=1) == []
    store.end_attempt(Ending(job_id=started.job_id, token=started.token))
    ids["deferred"] = rated[1].id
    # running on a worker of the old release, which ends it after the upgrade
    store.enqueue_many([new("late")])
    ids["late"] = take(store, "late")
    return ids


def attempts_hashes(client: redis.Redis, prefix: str) -> list[str]:
    return list(client.scan_iter(match=f"{prefix}:*:att:*"))


def test_a_layout_3_store_is_upgraded_in_place_and_nothing_is_lost(
    url: str, client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = Layout3Store(url)
    try:
        ids = fill_with_history(old)
        before = {job_id: get_job(old, job_id) for job_id in every_job(old)}
        lists, counts = listed(old), old.queue_counts()
    finally:
        old.close()
    meta = f"{old.prefix}:{{g}}:meta"
    assert client.hget(meta, "layout") == "3"
    stored = attempts_hashes(client, old.prefix)
    # one per job with an ended attempt: failed, succeeded, retrying, the two rate-limited
    assert len(stored) == 5
    deferred = before[ids["deferred"]]
    assert deferred is not None and [a.outcome for a in deferred.attempts] == ["deferred"]
    retrying = before[ids["retrying"]]
    assert retrying is not None and [a.outcome for a in retrying.attempts] == ["failed"]

    # pages of two jobs, so that the queues with more than two jobs take several
    monkeypatch.setattr(database, "UPGRADE_PAGE", 2)
    store = RedisStore(url)
    try:
        # a process that stopped after one page of one queue: the mark stays 3, the next
        # start finishes (and a second run finds nothing left to move)
        store.db._layout_checked = True
        store.db.run_many([store.db.qcall("upgrade_attempts", "done", "-inf", 1)])
        assert client.hget(meta, "layout") == "3"
        assert len(attempts_hashes(client, old.prefix)) == len(stored) - 1
        store.migrate()
        assert client.hget(meta, "layout") == "6"
        assert attempts_hashes(client, old.prefix) == []
        assert store.db.upgrade_attempts(store.db.queues()) == 0

        # shown with the same history, listed and counted exactly as layout 3 showed them
        after = {job_id: get_job(store, job_id) for job_id in before}
        for job_id in before:
            assert after[job_id] == before[job_id], (after[job_id], before[job_id])
        assert listed(store) == lists
        assert store.queue_counts() == counts
        running_id, _ = ids["running"]
        shown = get_job(store, running_id)
        assert shown is not None and shown.state == "running"
        (opened,) = shown.attempts
        assert (opened.worker_id, opened.host, opened.memory_mb) == ("w-old", "old-host", 12.5)

        goes_on(store, ids, counts, opened)
        # the retried job's second try appends to the history layout 3 began
        queued = f"{store.db.base('again')}:queued"
        (member,) = client.zrange(queued, 0, -1)
        client.zadd(queued, {member: 0})  # its backoff over
        second = take(store, "again", W2)
        assert second.job_id == ids["retrying"] and second.attempt == 2
        store.end_attempt(Ending(job_id=second.job_id, token=second.token))
        record = get_job(store, ids["retrying"])
        assert record is not None and record.state == "succeeded"
        assert [a.outcome for a in record.attempts] == ["failed", "succeeded"]
        assert attempts_hashes(client, old.prefix) == []  # layout 4 writes none
    finally:
        store.close()


def test_an_attempt_an_old_worker_ends_after_the_upgrade_is_shown_and_deleted(
    url: str, client: redis.Redis
) -> None:
    """A rolling deploy: a worker of the old release, still running after a new one upgraded
    the store, ends its attempt into `att:ID` as layout 3 did. The history shows it, and the
    job's deletion takes the hash with it."""
    old = Layout3Store(url)
    try:
        old.enqueue_many([new("late")])
        late = take(old, "late")
        store = RedisStore(url)
        try:
            store.migrate()
            assert client.hget(f"{store.prefix}:{{g}}:meta", "layout") == "6"
            old.end_attempt(Ending(job_id=late.job_id, token=late.token))
            (leftover,) = attempts_hashes(client, store.prefix)
            record = get_job(store, late.job_id)
            assert record is not None and record.state == "succeeded"
            assert [(a.outcome, a.worker_id) for a in record.attempts] == [("succeeded", "w-old")]
            assert store.forget_job(late.job_id)
            assert not client.exists(leftover)
        finally:
            store.close()
    finally:
        old.close()


def test_a_layout_3_store_with_no_queue_is_marked_5(url: str, client: redis.Redis) -> None:
    old = Layout3Store(url)
    old.db.check_layout()
    old.close()
    store = RedisStore(url)
    try:
        store.migrate()
        assert client.hget(f"{store.prefix}:{{g}}:meta", "layout") == "6"
    finally:
        store.close()
