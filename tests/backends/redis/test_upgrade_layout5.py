"""A store written in key layout 5 (the release before layout 6) keeps working after the upgrade:
layout 6 numbers a new job by the server's clock (its `seq`) instead of INCRing the queue's
counter, so nothing stored is rewritten; every job is still there, shown with the same history,
listed in the same order, counted and runnable as before, and a job made after the upgrade is
listed as the newest; by `tenure migrate` or a worker's start. A worker of the old release still
running mid-deploy enqueues and drains beside the new code's.

The layout-5 store is written by that release's own scripts, frozen in layout5/lua (a copy of
src/tenure/stores/redis/lua as layout 5 shipped it), driven by this code's Python, whose calls
to the scripts (KEYS, ARGV and replies) did not change; they run by EVALSHA, as on Redis 6.2."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis

from backends.redis.frozen import FrozenDatabase, FrozenStore
from backends.redis.test_upgrade import W1, W2, every_job, goes_on, listed, new, take
from backends.redis.test_upgrade_layout3 import fill_with_history
from tenure.core.records import Ending, JobRecord
from tenure.stores.base import get_job
from tenure.stores.redis import RedisStore
from tenure.stores.redis.connection import connect

from servers import isolated_store_url


class Layout5Database(FrozenDatabase):
    layout, older_calls = 5, False


class Layout5Store(FrozenStore):
    database = Layout5Database


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


def waiting_merged(lists: dict[str, set[str]]) -> dict[str, set[str]]:
    """listed()'s sets with queued and scheduled as one: a retry's backoff may run out between
    two listings (a job scheduled in the first is queued in the second)."""
    out = {state: ids for state, ids in lists.items() if state not in ("queued", "scheduled")}
    out["waiting"] = lists["queued"] | lists["scheduled"]
    return out


def settled(record: JobRecord | None) -> JobRecord | None:
    """The record, queued and scheduled as one state (as waiting_merged)."""
    if record is None or record.state not in ("queued", "scheduled"):
        return record
    return replace(record, state="waiting")


def counts_merged(counts: dict[str, Any]) -> dict[str, dict[str, int]]:
    """queue_counts() per queue, queued and scheduled as one (as waiting_merged)."""
    out = {}
    for queue, figures in counts.items():
        merged = {s: n for s, n in figures.items() if s not in ("queued", "scheduled")}
        merged["waiting"] = figures["queued"] + figures["scheduled"]
        out[queue] = merged
    return out


def seq_of(client: redis.Redis, store: RedisStore, queue: str, job_id: str) -> int:
    return int(str(client.hget(f"{store.db.base(queue)}:job:{job_id}", "seq")))


@pytest.mark.parametrize("by", ["migrate", "worker start"])
def test_a_layout_5_store_is_upgraded_in_place_and_nothing_is_lost(
    url: str, client: redis.Redis, by: str
) -> None:
    old = Layout5Store(url)
    try:
        ids = fill_with_history(old)
        before = {job_id: get_job(old, job_id) for job_id in every_job(old)}
        lists, counts = listed(old), old.queue_counts()
        newest_first = [record.id for record in old.list_jobs(limit=1000)]
        succeeded_first = [r.id for r in old.list_jobs(state="succeeded", limit=1000)]
    finally:
        old.close()
    meta = f"{old.prefix}:{{g}}:meta"
    assert client.hget(meta, "layout") == "5"
    assert len(before) >= 15
    # layout 5 numbered its jobs with the queue's counter
    assert client.get(f"{old.db.base('plain')}:seq") is not None

    store = RedisStore(url)
    try:
        if by == "migrate":
            store.migrate()
            store.migrate()  # idempotent
        else:  # a worker's first call is a reservation: the layout is checked before it
            assert store.reserve(queues=["nothing-here"], worker=W2, lease=60, limit=1) == []
        assert client.hget(meta, "layout") == "6"

        after = {job_id: get_job(store, job_id) for job_id in before}
        for job_id in before:
            assert settled(after[job_id]) == settled(before[job_id]), (
                after[job_id],
                before[job_id],
            )
        assert [record.id for record in store.list_jobs(limit=1000)] == newest_first
        assert [r.id for r in store.list_jobs(state="succeeded", limit=1000)] == succeeded_first
        assert waiting_merged(listed(store)) == waiting_merged(lists)
        assert counts_merged(store.queue_counts()) == counts_merged(counts)
        running_id, _ = ids["running"]
        shown = get_job(store, running_id)
        assert shown is not None and shown.state == "running"
        (opened,) = shown.attempts
        goes_on(store, ids, counts, opened)

        # a job made now is numbered by the clock, above every counter's number: listed
        # first, among every job and among the succeeded ones once it ran
        counter = client.get(f"{store.db.base('plain')}:seq")
        store.enqueue_many([fresh := new("plain")])
        assert client.get(f"{store.db.base('plain')}:seq") == counter
        assert store.list_jobs(limit=1)[0].id == fresh.id
        ran = take(store, "plain", W2)
        assert ran.job_id == fresh.id
        assert store.end_attempt(Ending(job_id=ran.job_id, token=ran.token))[0].accepted
        assert store.list_jobs(state="succeeded", limit=1)[0].id == fresh.id
    finally:
        store.close()


def test_old_and_new_workers_share_the_upgraded_store_mid_deploy(
    url: str, client: redis.Redis
) -> None:
    """A rolling deploy: a worker of the old release, still running after a new one upgraded
    the store, enqueues with its counter and claims as layout 5 did. Each release runs the
    other's jobs, in the order they are due, and every attempt is recorded whole."""
    old = Layout5Store(url)
    try:
        old.db.check_layout()
        store = RedisStore(url)
        try:
            store.migrate()
            assert client.hget(f"{store.prefix}:{{g}}:meta", "layout") == "6"
            old.enqueue_many([by_old := new("mixed")])
            store.enqueue_many([by_new := new("mixed")])
            assert seq_of(client, store, "mixed", by_old.id) < seq_of(
                client, store, "mixed", by_new.id
            )
            # the new code claims the old release's job, the old release the new one's
            first = take(store, "mixed", W2)
            second = take(old, "mixed", W1)
            assert (first.job_id, second.job_id) == (by_old.id, by_new.id)
            for held, by in ((first, old), (second, store)):
                assert by.end_attempt(Ending(job_id=held.job_id, token=held.token))[0].accepted
            for job_id, worker in ((by_old.id, "w-new"), (by_new.id, "w-old")):
                record = get_job(store, job_id)
                assert record is not None and record.state == "succeeded"
                assert [(a.outcome, a.worker_id) for a in record.attempts] == [
                    ("succeeded", worker)
                ]
            assert store.queue_counts()["mixed"]["succeeded"] == 2
        finally:
            store.close()
    finally:
        old.close()
