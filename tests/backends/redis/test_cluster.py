"""The Redis store on a real three-master Redis Cluster (`redis+cluster://`): calls that span
queues on different nodes are split per node and all land, a worker waiting on queues of
several slots wakes for any of them, a script the nodes forgot is loaded again, and what cannot
work is refused with a clear error. The whole conformance suite runs on the cluster too
(backend `redis_cluster`)."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator

import pytest

from conformance.helpers import W1, counts, new_job
from tenure.core.errors import ConfigError, StoreMisconfigured
from tenure.core.records import Ending
from tenure.stores import open_store
from tenure.stores.base import get_batch
from tenure.stores.redis import RedisStore

from servers import raw_redis


@pytest.fixture
def store(redis_cluster_url: str) -> Iterator[RedisStore]:
    tag = f"tenure_tc_{secrets.token_hex(5)}"
    s = open_store(f"{redis_cluster_url}?prefix={tag}")
    assert isinstance(s, RedisStore)
    s.migrate()
    yield s
    client = raw_redis(redis_cluster_url)
    try:
        for key in list(client.scan_iter(match=f"{tag}:*", count=1000)):
            client.delete(key)
    finally:
        client.close()
        s.close()


def queues_on_every_node(store: RedisStore, url: str) -> list[str]:
    """One queue name per master, found by asking the cluster where each tag lives."""
    client = raw_redis(url)
    try:
        found: dict[str, str] = {}
        for i in range(200):
            name = f"q{i}"
            node = client.get_node_from_key(f"{store.prefix}:{{q:{name}}}:queued").name
            found.setdefault(node, name)
        return list(found.values())
    finally:
        client.close()


def test_calls_spanning_queues_on_every_node_all_land(
    store: RedisStore, redis_cluster_url: str
) -> None:
    queues = queues_on_every_node(store, redis_cluster_url)
    assert len(queues) == 3
    jobs = [new_job(queue=q) for q in queues for _ in range(2)]
    assert store.enqueue_many(jobs) == [j.id for j in jobs]
    assert {q: c["queued"] for q, c in store.queue_counts().items()} == dict.fromkeys(queues, 2)
    held = store.reserve(queues=queues, worker=W1, lease=30, limit=6)
    assert sorted(r.job_id for r in held) == sorted(j.id for j in jobs)
    # one heartbeat: the worker's record ({g}) and one script per queue, on three nodes
    assert (
        store.heartbeat(worker=W1, leases=[(r.job_id, r.token) for r in held], lease=30).lost == []
    )
    for r in held:
        assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    assert counts(store)["succeeded"] == 6
    assert {j.queue for j in store.list_jobs(state="succeeded")} == set(queues)


def test_a_script_the_nodes_forgot_is_loaded_again(
    store: RedisStore, redis_cluster_url: str
) -> None:
    queues = queues_on_every_node(store, redis_cluster_url)
    client = raw_redis(redis_cluster_url)
    try:
        client.script_flush()  # on every primary
    finally:
        client.close()
    jobs = [new_job(queue=q) for q in queues]
    store.enqueue_many(jobs)
    assert counts(store)["queued"] == 3


def test_functions_the_nodes_forgot_are_loaded_again(
    store: RedisStore, redis_cluster_url: str
) -> None:
    queues = queues_on_every_node(store, redis_cluster_url)
    store.enqueue_many([new_job(queue=queues[0])])  # loads the libraries on every primary
    client = raw_redis(redis_cluster_url)
    try:
        for node in client.get_primaries():
            client.get_redis_connection(node).function_flush()  # the cluster's own nodes
        store.enqueue_many([new_job(queue=q) for q in queues])  # one pipeline per node
        assert counts(store)["queued"] == len(queues) + 1
        got = [store.reserve(queues=[q], worker=W1, lease=30) for q in queues]  # one call each
        assert all(len(r) == 1 for r in got)
        fcalls = sum(
            int(client.get_redis_connection(n).info("commandstats")["cmdstat_fcall"]["calls"])
            for n in client.get_primaries()
        )
        assert fcalls >= len(queues)
    finally:
        client.close()


def test_a_worker_waiting_on_queues_of_several_slots_wakes_for_any(
    store: RedisStore, redis_cluster_url: str
) -> None:
    first, *others = queues_on_every_node(store, redis_cluster_url)
    last = others[-1]
    store.enqueue_many([new_job(queue=first)])  # registers the queues; its token is taken next
    store.wait_for_work(queues=[first], timeout=1)
    done = threading.Event()

    def wait() -> None:
        store.wait_for_work(queues=[first, *others], timeout=8)
        done.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    try:
        time.sleep(0.3)  # let the waiter block before the job arrives: that is the case tested
        other = open_store(store.url)
        try:
            other.enqueue_many([new_job(queue=last)])
        finally:
            other.close()
        assert done.wait(timeout=5), "the wait did not end when a job arrived in a later queue"
    finally:
        waiter.join(timeout=15)


def test_a_batch_across_queues_is_refused_naming_them(store: RedisStore) -> None:
    from tenure.core.records import NewBatch

    batch = NewBatch(id=secrets.token_hex(4), name="mixed")
    with pytest.raises(ConfigError, match=r"'exports'.*\['mail'\]"):
        store.enqueue_many([new_job(queue="exports"), new_job(queue="mail")], batch=batch)
    assert get_batch(store, batch.id) is None
    assert store.list_jobs(queue="mail") == [] and store.list_jobs(queue="exports") == []


def test_a_redis_url_to_a_cluster_node_is_refused(redis_cluster_url: str) -> None:
    node = redis_cluster_url.removeprefix("redis+cluster://").split(",")[0]
    s = open_store(f"redis://{node}/0?prefix=tenure_tc_{secrets.token_hex(4)}")
    try:
        with pytest.raises(StoreMisconfigured, match=r"node of a Redis Cluster.*redis\+cluster://"):
            s.migrate()
    finally:
        s.close()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis+cluster://127.0.0.1:7000/1", "database 0 only"),
        ("redis+cluster://127.0.0.1:7000,127.0.0.1/0", "host:port for every node"),
        (
            "redis+cluster://127.0.0.1:7000/0?socket_timeout=3",
            r"unknown option 'socket_timeout'; the accepted ones are prefix$",
        ),
        ("redis+cluster://127.0.0.1:7000/0?prefix={x}", "without braces"),
    ],
)
def test_a_bad_cluster_url_is_refused_before_connecting(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        open_store(url)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis+sentinel://127.0.0.1:26379", "master's name and a database number"),
        ("redis+sentinel://127.0.0.1:26379/mymaster/zero", "master's name and a database"),
        ("redis+sentinel://127.0.0.1:26379/mymaster/0/extra", "master's name and a database"),
        ("redis+sentinel://127.0.0.1:x/mymaster/0", "host:port for every node"),
    ],
)
def test_a_bad_sentinel_url_is_refused_before_connecting(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        open_store(url)
