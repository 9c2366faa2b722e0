"""The `store` and `other_store` fixtures over a `store_url` fixture, shared by the conformance
suite (any backend) and the PostgreSQL-only tests; a conftest imports both to use them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tenure.stores import Store, open_store


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
