"""One store per test, on each backend: the conformance suite runs every test three times."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure.stores import Store, open_store

from servers import isolated_store_url

BACKENDS = ("sqlite", "postgres", "redis")


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    kind: str = request.param
    base = ""
    if kind == "postgres":
        base = request.getfixturevalue("postgres_url")
    elif kind == "redis":
        # Only an absent module skips: a Redis store that exists but fails must fail here.
        if importlib.util.find_spec("tenure.stores.redis") is None:
            pytest.skip("redis store not written yet")
        base = request.getfixturevalue("redis_url")
    with isolated_store_url(kind, base, tmp_path) as url:
        yield url


@pytest.fixture
def backend(store_url: str) -> str:
    return {"sqlite": "sqlite", "postgresql": "postgres", "redis": "redis"}[
        store_url.split(":", 1)[0]
    ]


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = open_store(store_url)
    s.migrate()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def other_store(store_url: str) -> Iterator[Store]:
    """A second client of the same store: another connection, as another process would have."""
    s = open_store(store_url)
    try:
        yield s
    finally:
        s.close()
