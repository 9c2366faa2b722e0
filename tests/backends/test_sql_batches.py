"""The batch lifecycle both SQL stores share (stores/sql/batches.py), where the two used to
drift: a damaged callbacks column is logged, then skipped, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends.kit import Kit, kit_for
from conformance.helpers import new_job, reserve_one
from tenure.stores import Store, open_store
from tenure.stores.base import NewBatch

from servers import isolated_store_url


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    base = request.getfixturevalue("postgres_url") if request.param == "postgres" else ""
    with isolated_store_url(request.param, base, tmp_path) as url:
        yield url


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = open_store(store_url)
    s.migrate()
    try:
        yield s
    finally:
        s.close()


def test_an_unreadable_callback_is_logged_and_the_member_still_ends(
    store: Store, store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    kit: Kit = kit_for(store_url)
    then = new_job(name="report")
    store.enqueue_many([new_job()], batch=NewBatch(id="b-damaged", name="d", then=then))
    kit.damage_batch("b-damaged", {"callbacks": "{not json"})
    r = reserve_one(store)
    with caplog.at_level(logging.ERROR, logger="tenure.store"):
        assert store.complete_and_reserve(job_id=r.job_id, token=r.token)[0].accepted
    assert "batch b-damaged: its then callback is unreadable and was not enqueued" in caplog.text
    batch = store.get_batch("b-damaged")
    assert batch is not None and (batch.state, batch.then_job_id) == ("succeeded", None)
    assert store.get_job(then.id) is None
