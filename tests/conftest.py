"""Session fixtures for the real servers every backend test runs against.

A server the developer does not run is started from the binaries on PATH; only when that fails
too is the backend skipped, and loudly. Under CI=true a skipped backend would be a silent hole
in the matrix, so it fails the run instead (dramatiq's rule).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from topologies import ThrowawayPgBouncer, ThrowawayRedisCluster, ThrowawayRedisSentinel

from servers import (
    DEFAULT_POSTGRES_URL,
    DEFAULT_REDIS_URL,
    ThrowawayPostgres,
    ThrowawayRedis,
    postgres_reachable,
    redis_reachable,
)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def skip_or_fail(reason: str) -> None:
    """Skip locally; in CI a backend that cannot be reached is a failure."""
    if in_ci():
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    url = os.environ.get("TENURE_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    why = postgres_reachable(url)
    if why is None:
        yield url
        return
    try:
        server = ThrowawayPostgres()
        server.start()
    except Exception as exc:
        skip_or_fail(
            f"PostgreSQL unreachable at {url} ({why}) and no throwaway server could be started"
            f" ({exc}); set TENURE_TEST_POSTGRES_URL or put initdb/pg_ctl on PATH"
        )
        return
    try:
        yield server.url
    finally:
        server.close()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    url = os.environ.get("TENURE_TEST_REDIS_URL", DEFAULT_REDIS_URL)
    why = redis_reachable(url)
    if why is None:
        yield url
        return
    try:
        server = ThrowawayRedis()
        server.start()
    except Exception as exc:
        skip_or_fail(
            f"Redis unreachable at {url} ({why}) and no throwaway server could be started"
            f" ({exc}); set TENURE_TEST_REDIS_URL or put redis-server on PATH"
        )
        return
    try:
        yield server.url
    finally:
        server.close()


@pytest.fixture
def throwaway_postgres() -> Iterator[ThrowawayPostgres]:
    """A private, started PostgreSQL the test may stop and start again (outage tests)."""
    try:
        server = ThrowawayPostgres()
        server.start()
    except Exception as exc:
        skip_or_fail(f"cannot start a throwaway PostgreSQL: {exc}")
        return
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def throwaway_redis() -> Iterator[ThrowawayRedis]:
    """A private, started redis-server with an fsync'd append-only file, so that a restart
    keeps its data; build a `ThrowawayRedis(appendonly=False)` to test losing it."""
    try:
        server = ThrowawayRedis(appendonly=True)
        server.start()
    except Exception as exc:
        skip_or_fail(f"cannot start a throwaway Redis: {exc}")
        return
    try:
        yield server
    finally:
        server.close()


# -- production topologies: the environment's if it names one, else a throwaway -------------
@pytest.fixture(scope="session")
def pgbouncer_url(postgres_url: str) -> Iterator[str]:
    """PgBouncer in transaction pooling before the test PostgreSQL."""
    named = os.environ.get("TENURE_TEST_PGBOUNCER_URL")
    if named:
        yield named
        return
    try:
        bouncer = ThrowawayPgBouncer(postgres_url)
        bouncer.start()
    except Exception as exc:
        skip_or_fail(f"no PgBouncer: {exc}; set TENURE_TEST_PGBOUNCER_URL or install pgbouncer")
        return
    try:
        yield bouncer.url
    finally:
        bouncer.close()


@pytest.fixture(scope="session")
def redis_cluster_url() -> Iterator[str]:
    """A Redis Cluster of three masters, as redis+cluster://host:port,host:port,.../0."""
    named = os.environ.get("TENURE_TEST_REDIS_CLUSTER_URL")
    if named:
        yield named
        return
    try:
        cluster = ThrowawayRedisCluster()
        cluster.start()
    except Exception as exc:
        skip_or_fail(f"no Redis Cluster: {exc}; set TENURE_TEST_REDIS_CLUSTER_URL")
        return
    try:
        yield cluster.url
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def redis_sentinel_url() -> Iterator[str]:
    """A master, a replica and three Sentinels shared by the session (never failed over), as
    redis+sentinel://host:port,host:port,host:port/mymaster/0."""
    named = os.environ.get("TENURE_TEST_REDIS_SENTINEL_URL")
    if named:
        yield named
        return
    try:
        topology = ThrowawayRedisSentinel()
        topology.start()
    except Exception as exc:
        skip_or_fail(f"no Redis Sentinel: {exc}; set TENURE_TEST_REDIS_SENTINEL_URL")
        return
    try:
        yield topology.url
    finally:
        topology.close()


@pytest.fixture
def redis_sentinel() -> Iterator[ThrowawayRedisSentinel]:
    """A master, a replica and three Sentinels of the test's own, to fail over at will."""
    try:
        topology = ThrowawayRedisSentinel()
        topology.start()
    except Exception as exc:
        skip_or_fail(f"cannot start a Redis Sentinel topology: {exc}")
        return
    try:
        yield topology
    finally:
        topology.close()
