"""The topology fixtures are what they claim: a pooler in transaction mode, a cluster whose
keys spread over three masters, a Sentinel pair that fails over."""

from __future__ import annotations

import glob
import shutil
import subprocess

import psycopg
import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.sentinel import Sentinel

from topologies import ThrowawayRedisSentinel

pytestmark = pytest.mark.slow


def test_pgbouncer_pools_by_transaction(pgbouncer_url: str) -> None:
    # The admin console speaks the simple query protocol only: psql does.
    psql = shutil.which("psql") or next(iter(glob.glob("/usr/lib/postgresql/*/bin/psql")), None)
    assert psql is not None, "psql is part of PostgreSQL's client package"
    admin = pgbouncer_url.rsplit("/", 1)[0] + "/pgbouncer"
    shown = subprocess.run(
        [psql, admin, "-At", "-c", "SHOW CONFIG"], capture_output=True, text=True, timeout=30
    )
    assert shown.returncode == 0, shown.stderr
    assert "pool_mode|transaction" in shown.stdout
    with psycopg.connect(pgbouncer_url, autocommit=True, prepare_threshold=None) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def cluster_client(url: str) -> RedisCluster:
    hosts = url.removeprefix("redis+cluster://").split("/", 1)[0].split(",")
    nodes = [ClusterNode(h.rsplit(":", 1)[0], int(h.rsplit(":", 1)[1])) for h in hosts]
    return RedisCluster(startup_nodes=nodes)


def test_the_cluster_spreads_keys_over_three_masters(redis_cluster_url: str) -> None:
    client = cluster_client(redis_cluster_url)
    try:
        owners = set()
        for i in range(30):
            key = f"topology-check:{i}"
            client.set(key, i)
            owners.add(client.get_node_from_key(key).port)
            client.delete(key)
        assert len(owners) == 3
        with pytest.raises(redis.exceptions.RedisClusterException):
            client.eval("return 1", 2, "topology-check:a", "topology-check:b")  # two slots
    finally:
        client.close()


def test_sentinel_fails_over_and_the_data_moves(redis_sentinel: ThrowawayRedisSentinel) -> None:
    sentinel = Sentinel([("127.0.0.1", p) for p in redis_sentinel.sentinel_ports])
    master = sentinel.master_for(redis_sentinel.MASTER_NAME)
    master.set(
        "topology-check",
        "before",
    )
    master.wait(1, 5000)  # the replica has it before the failover
    old = redis_sentinel.master()
    new = redis_sentinel.failover()
    assert new != old
    assert sentinel.discover_master(redis_sentinel.MASTER_NAME)[1] == new
    assert master.get("topology-check") == b"before"  # the client followed the new master
