"""wait_replicas=N: a write is done only once N replicas confirm it (WAIT on the same
connection), so a failover cannot undo what tenure reported as stored. The failover itself,
with real workers, is tests/e2e/test_topologies_e2e.py and chaos `sentinel-failover`."""

from __future__ import annotations

import secrets

import pytest

from conformance.helpers import new_job
from tenure.core.errors import ConfigError, StoreUnavailable
from tenure.stores import open_store

from servers import raw_redis, with_query_param


def test_a_write_no_replica_confirms_counts_as_not_done(redis_url: str) -> None:
    client = raw_redis(redis_url)
    try:
        if int(client.info("replication").get("connected_slaves", 0)) > 0:
            pytest.skip("the test Redis has a replica: it would confirm the write")
    finally:
        client.close()
    prefix = f"tenure_tr_{secrets.token_hex(4)}"
    url = with_query_param(with_query_param(redis_url, "prefix", prefix), "wait_replicas", "1")
    store = open_store(url)
    try:
        with pytest.raises(StoreUnavailable, match=r"0 of wait_replicas=1 replica\(s\) confirmed"):
            store.enqueue_many([new_job()])
    finally:
        store.close()
        client = raw_redis(redis_url)
        try:
            for key in list(client.scan_iter(match=f"{prefix}:*")):
                client.delete(key)
        finally:
            client.close()


@pytest.mark.parametrize("value", ["x", "-1", "1000"])
def test_a_bad_wait_replicas_is_refused(value: str) -> None:
    with pytest.raises(ConfigError, match="wait_replicas= expected"):
        open_store(f"redis://127.0.0.1:6379/0?wait_replicas={value}")
    with pytest.raises(ConfigError, match="wait_replicas= expected"):
        open_store(f"redis+sentinel://127.0.0.1:26379/mymaster/0?wait_replicas={value}")


def test_a_cluster_url_takes_no_wait_replicas() -> None:
    refusal = r"unknown option 'wait_replicas'; the accepted ones are prefix$"
    with pytest.raises(ConfigError, match=refusal):
        open_store("redis+cluster://127.0.0.1:7000/0?wait_replicas=1")
