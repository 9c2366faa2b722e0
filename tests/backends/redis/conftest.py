"""Fixtures of the Redis-only tests: a key prefix of the test's own on the session's server
(dropped afterwards), a store under it, and a client of the server behind the store's back.
A module defines its own where it needs another (a cluster, a store of an older layout)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tenure.stores.redis import RedisStore

from servers import isolated_store_url


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
