"""A batch created inside the application's own transaction (`app.batch(..., conn=conn)`, and
`app.batch_over_ids(..., conn=conn)`), as `job.options(conn=...)` does for single jobs: where
the store can (`capabilities.enqueue_in_caller_transaction`), a rollback leaves no batch and no
member, a commit makes them visible, and only then; a store that cannot refuses clearly.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tenure
from backends.kit import Kit, foreign_connection
from conformance.helpers import W1
from tenure.core.errors import ConfigError, JobNotFound
from tenure.stores import Store
from tenure.testing import drain


@pytest.fixture
def app(store: Store, store_url: str) -> Iterator[tenure.App]:
    a = tenure.App(store_url)

    @a.job(name="export_rows")
    def export_rows(lo: int, hi: int) -> None: ...

    @a.job(name="finish")
    def finish(tag: str) -> None: ...

    yield a
    a.close()


@pytest.fixture
def conn(store: Store, kit: Kit) -> Iterator[Any]:
    if not store.capabilities.enqueue_in_caller_transaction:
        pytest.skip("this store has no application transaction (see the refusal test)")
    c = kit.app_connection()
    try:
        yield c
    finally:
        c.close()


def sigs(app: tenure.App) -> list[tenure.Sig]:
    return [app.jobs["export_rows"].sig(i, i) for i in range(1, 4)]


def stored_jobs(app: tenure.App) -> int:
    return sum(app.counts().values())


def test_a_rolled_back_transaction_leaves_no_batch_and_no_member(
    app: tenure.App, conn: Any
) -> None:
    b = app.batch(sigs(app), name="nightly", then=app.jobs["finish"].sig("t"), conn=conn)
    over = app.batch_over_ids(app.jobs["export_rows"], 1, 100, chunk=10, conn=conn)
    conn.rollback()
    for batch_id in (b.id, over.id):
        with pytest.raises(JobNotFound):
            app.get_batch(batch_id)
    assert app.store.list_batches() == [] and stored_jobs(app) == 0
    assert app.store.reserve(queues=["default"], worker=W1, lease=30) == []


def test_a_committed_batch_is_visible_only_after_the_commit_and_runs(
    app: tenure.App, conn: Any
) -> None:
    b = app.batch(sigs(app), name="nightly", then=app.jobs["finish"].sig("t"), conn=conn)
    over = app.batch_over_ids(app.jobs["export_rows"], 1, 100, chunk=10, conn=conn)
    # tenure's own connections (a worker's, say) see nothing before the application commits
    assert app.store.list_batches() == [] and stored_jobs(app) == 0
    conn.commit()
    record = app.get_batch(b.id)
    assert (record.state, record.jobs, record.total, record.done) == ("running", 3, 3, 0)
    assert app.get_batch(over.id).total == 11  # 10 ranges and their one coordinator, declared
    assert stored_jobs(app) == 4  # 3 members, 1 coordinator; the callback waits for the end
    drain(app)
    assert app.get_batch(b.id).state == app.get_batch(over.id).state == "succeeded"
    assert app.get_batch(b.id).then_job_id is not None
    assert app.get_batch(over.id).progress == 1.0


def test_the_same_connection_checks_apply_as_for_single_jobs(
    app: tenure.App, kit: Kit, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="conn="):
        app.batch(sigs(app), conn=object())
    if app.store.capabilities.enqueue_in_caller_transaction:
        elsewhere = foreign_connection(tmp_path)
        try:
            with pytest.raises(ConfigError, match="conn=") as refused:
                app.batch(sigs(app), conn=elsewhere)
            assert kit.foreign_connection_refusal in str(refused.value)
        finally:
            elsewhere.close()
    assert app.store.list_batches() == [] and stored_jobs(app) == 0


def test_a_store_without_caller_transactions_refuses_a_batch_in_one_clearly(
    app: tenure.App,
) -> None:
    capabilities = app.store.capabilities
    if capabilities.enqueue_in_caller_transaction:
        pytest.skip("this store creates batches in the application's transaction (above)")
    refusal = f"{capabilities.name} cannot create a batch inside your database"
    with pytest.raises(ConfigError, match=refusal):
        app.batch(sigs(app), conn=object())
    with pytest.raises(ConfigError, match=refusal):
        app.batch_over_ids(app.jobs["export_rows"], 1, 100, conn=object())
    assert app.store.list_batches() == [] and stored_jobs(app) == 0
