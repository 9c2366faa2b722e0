"""One store per test, on each backend: the conformance suite runs every test three times.

No test here names a backend (tests/backends/test_conformance_is_backend_blind.py checks it):
a difference in ability is read from `store.capabilities`, what differs behind the store
from the `kit` fixture, and what only one backend promises is tested in tests/backends/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backends.kit import Kit, kit_for
from store_fixtures import other_store, store  # noqa: F401 (fixtures used by the tests here)
from tenure.stores import store_class
from topologies import through_pgbouncer

from servers import isolated_store_url

# "pgbouncer": the PostgreSQL store behind PgBouncer in transaction pooling, LISTEN direct.
# "redis_cluster": the Redis store on a Redis Cluster of three masters.
# "redis_sentinel": the Redis store on the master Sentinels name, each write confirmed by its
# replica (wait_replicas=1, the default there).
BACKENDS = ("sqlite", "postgres", "redis", "pgbouncer", "redis_cluster", "redis_sentinel")


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    kind: str = request.param
    base = ""
    if kind == "postgres":
        base = request.getfixturevalue("postgres_url")
    elif kind == "redis":
        base = request.getfixturevalue("redis_url")
    elif kind == "redis_cluster":
        kind, base = "redis", request.getfixturevalue("redis_cluster_url")
    elif kind == "redis_sentinel":
        kind, base = "redis", request.getfixturevalue("redis_sentinel_url")
    elif kind == "pgbouncer":
        direct = request.getfixturevalue("postgres_url")
        bouncer = request.getfixturevalue("pgbouncer_url")
        with isolated_store_url("postgres", bouncer, tmp_path) as url:
            yield through_pgbouncer(url, direct)
        return
    with isolated_store_url(kind, base, tmp_path) as url:
        yield url


@pytest.fixture(autouse=True)
def _what_the_store_cannot_do(request: pytest.FixtureRequest) -> None:
    """A test marked batches_across_queues skips, with the reason, on a store that refuses
    such batches (Redis Cluster: one batch, one slot); the refusal itself is tested there."""
    if request.node.get_closest_marker("batches_across_queues") is None:
        return
    url: str = request.getfixturevalue("store_url")
    if not store_class(url).capabilities.batches_span_queues:
        pytest.skip(
            "this store keeps every job and callback of a batch in the batch's queue "
            "(capabilities.batches_span_queues is false) and refuses others with a ConfigError"
        )


@pytest.fixture
def kit(store_url: str) -> Kit:
    """What a test does behind the store's back (its own connection, damaged records), for
    whichever backend runs; what a backend can do is `store.capabilities`."""
    return kit_for(store_url)
