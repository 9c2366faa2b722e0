"""A PostgreSQL store per test, in a schema of its own, for what only PostgreSQL promises."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backends.postgres.kit import PostgresKit
from store_fixtures import other_store, store  # noqa: F401 (fixtures used by the tests here)

from servers import isolated_store_url


@pytest.fixture
def store_url(postgres_url: str, tmp_path: Path) -> Iterator[str]:
    with isolated_store_url("postgres", postgres_url, tmp_path) as url:
        yield url


@pytest.fixture
def kit(store_url: str) -> PostgresKit:
    return PostgresKit(store_url)
