"""Fixtures of the Redis-only tests: a key prefix of the test's own on the session's server
(dropped afterwards), a store under it, and a client of the server behind the store's back.
A module defines its own where it needs another (a cluster, a store of an older layout)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tenure.stores.redis import RedisStore

from servers import free_port, isolated_store_url, wait_for_port


@pytest.fixture
def url(redis_url: str, tmp_path: Path) -> Iterator[str]:
    with isolated_store_url("redis", redis_url, tmp_path) as isolated:
        yield isolated


@pytest.fixture
def store(url: str) -> Iterator[RedisStore]:
    """A store under the test's prefix, as opened (not migrated: its first script loads what
    it needs)."""
    s = RedisStore(url)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def cluster_node() -> Iterator[str]:
    """A one-node Redis Cluster owning every slot (a redis+cluster:// URL). Redis 7.0 does not
    refuse a script that crosses slots on a node that owns them all, so the tests using it
    also check the slot of every key written."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no redis-server on PATH to start a cluster node")
    root = Path(tempfile.mkdtemp(prefix="tenure-cluster-"))
    port = bus_port = free_port()
    while bus_port == port:  # a closed probe socket may hand the same port out twice
        bus_port = free_port()
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(root),
            "--save",
            "",
            "--appendonly",
            "no",
            "--cluster-enabled",
            "yes",
            "--cluster-port",
            str(bus_port),  # else port + 10000, which may not exist
            "--cluster-config-file",
            str(root / "nodes.conf"),
            "--logfile",
            str(root / "server.log"),
        ],
        start_new_session=True,
    )
    try:
        assert wait_for_port(port), (root / "server.log").read_text(errors="replace")
        url = f"redis://127.0.0.1:{port}/0"
        c = redis.Redis.from_url(url)
        c.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)  # type: ignore[no-untyped-call]
        deadline = time.monotonic() + 30
        while (info := c.cluster("INFO")).get("cluster_state") != "ok":
            log = (root / "server.log").read_text(errors="replace")
            assert time.monotonic() < deadline, f"the cluster never became ok: {info!r}\n{log}"
            time.sleep(0.02)
        c.close()
        # a redis:// URL to a cluster node is refused: the store reaches clusters this way
        yield url.replace("redis://", "redis+cluster://", 1)
    finally:
        proc.kill()
        proc.wait(timeout=15)
        shutil.rmtree(root, ignore_errors=True)
