"""A running job's own writes and its completion in one transaction (`ctx.transaction()`,
DESIGN 6, issue 5): where the store can (`capabilities.job_transactions`), the job's rows and
its `succeeded` commit together or not at all, and a stale token rolls the job's writes back; a
store that cannot says so clearly.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from backends.kit import Kit
from conformance.helpers import W1, W2, counts, enqueue, expire_and_rescue, job, new_job
from tenure.core.errors import ConfigError, JobTransactionEnded
from tenure.core.records import Ending, NewBatch
from tenure.stores import Store
from tenure.stores.base import get_batch


class AppDB:
    """The application's own table next to the store, and a connection of its own to read it."""

    def __init__(self, kit: Kit) -> None:
        self.kit = kit
        self.table = kit.app_table("app_rows")
        self.mark = kit.placeholder
        self.conn: Any = kit.app_connection(autocommit=True)
        self.conn.execute(f"CREATE TABLE {self.table} (job_id TEXT NOT NULL, n INTEGER NOT NULL)")

    def insert(self, conn: Any, job_id: str, n: int) -> None:
        conn.execute(f"INSERT INTO {self.table} VALUES ({self.mark}, {self.mark})", (job_id, n))

    def rows(self) -> list[tuple[str, int]]:
        return [tuple(r) for r in self.conn.execute(f"SELECT job_id, n FROM {self.table}")]

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def app_db(store: Store, kit: Kit) -> Iterator[AppDB]:
    if not store.capabilities.job_transactions:
        pytest.skip("this store cannot commit a job's writes with its completion (see refusal)")
    db = AppDB(kit)
    try:
        yield db
    finally:
        db.close()


def test_the_jobs_rows_and_its_success_commit_together(store: Store, app_db: AppDB) -> None:
    j = new_job()
    enqueue(store, j)
    r = store.reserve(queues=["default"], worker=W1, lease=30)[0]
    tx = store.job_transaction(job_id=j.id, token=r.token)
    app_db.insert(tx.connection, j.id, 1)
    app_db.insert(tx.connection, j.id, 2)
    assert app_db.rows() == []  # nobody sees the job's writes before its end
    assert job(store, j.id).state == "running"  # and the store still answers meanwhile
    result = tx.complete()
    assert result.accepted and result.state == "succeeded"
    assert sorted(app_db.rows()) == [(j.id, 1), (j.id, 2)]
    record = job(store, j.id)
    assert record.state == "succeeded" and record.tries_used == 1
    assert [a.outcome for a in record.attempts] == ["succeeded"]
    assert record.attempts[0].ended_at is not None and record.finished_at is not None


def test_a_rollback_leaves_neither_rows_nor_success(store: Store, app_db: AppDB) -> None:
    j = new_job()
    enqueue(store, j)
    r = store.reserve(queues=["default"], worker=W1, lease=30)[0]
    tx = store.job_transaction(job_id=j.id, token=r.token)
    app_db.insert(tx.connection, j.id, 1)
    tx.rollback()  # the job raised: its writes go, and the attempt ends as any failure does
    assert app_db.rows() == []
    assert job(store, j.id).state == "running"
    ended, _ = store.end_attempt(Ending(job_id=j.id, token=r.token, outcome="failed", error="boom"))
    assert ended.accepted and ended.state == "queued"
    # the next attempt writes again and commits
    r2 = store.reserve(queues=["default"], worker=W1, lease=30)[0]
    tx = store.job_transaction(job_id=j.id, token=r2.token)
    app_db.insert(tx.connection, j.id, 2)
    assert tx.complete().accepted
    assert app_db.rows() == [(j.id, 2)]


def test_a_stale_token_rolls_the_jobs_writes_back(store: Store, app_db: AppDB) -> None:
    j = new_job()
    enqueue(store, j)
    r1 = store.reserve(queues=["default"], worker=W1, lease=0.4)[0]
    expire_and_rescue(store, j.id)  # the worker paused past its lease; the job moved on
    r2 = store.reserve(queues=["default"], worker=W2, lease=30)[0]
    late = store.job_transaction(job_id=j.id, token=r1.token)
    app_db.insert(late.connection, j.id, 1)
    result = late.complete()
    assert not result.accepted and result.state == "running"
    assert app_db.rows() == []  # the fenced attempt's writes did not land
    first = job(store, j.id).attempts[0]
    assert first.outcome == "lost_lease"
    assert first.error is not None and "refused (fencing)" in first.error
    # the holder of the lease commits its own
    tx = store.job_transaction(job_id=j.id, token=r2.token)
    app_db.insert(tx.connection, j.id, 2)
    assert tx.complete().accepted
    assert app_db.rows() == [(j.id, 2)]
    assert job(store, j.id).state == "succeeded"


def test_a_takeover_during_the_transaction_is_refused_at_its_end(
    store: Store, other_store: Store, app_db: AppDB
) -> None:
    if not store.capabilities.concurrent_job_transactions:
        pytest.skip("a job transaction holds the one write lock: nobody rescues meanwhile")
    j = new_job()
    enqueue(store, j)
    r1 = store.reserve(queues=["default"], worker=W1, lease=0.4)[0]
    tx = store.job_transaction(job_id=j.id, token=r1.token)
    app_db.insert(tx.connection, j.id, 1)
    expire_and_rescue(other_store, j.id)  # while the job's transaction is open
    r2 = other_store.reserve(queues=["default"], worker=W2, lease=30)[0]
    assert r2.token == r1.token + 1
    assert not tx.complete().accepted
    assert app_db.rows() == []
    assert job(store, j.id).state == "running"


def test_transactions_of_two_jobs_do_not_share_a_connection(store: Store, app_db: AppDB) -> None:
    if not store.capabilities.concurrent_job_transactions:
        pytest.skip("one writer: a second job transaction waits for the first")
    a, b = new_job(), new_job()
    enqueue(store, a, b)
    ra, rb = store.reserve(queues=["default"], worker=W1, lease=30, limit=2)
    ta = store.job_transaction(job_id=ra.job_id, token=ra.token)
    tb = store.job_transaction(job_id=rb.job_id, token=rb.token)
    assert ta.connection is not tb.connection
    app_db.insert(ta.connection, ra.job_id, 1)
    app_db.insert(tb.connection, rb.job_id, 2)
    tb.rollback()
    assert counts(store)["running"] == 2  # the pool still serves the store meanwhile
    assert ta.complete().accepted
    assert app_db.rows() == [(ra.job_id, 1)]
    assert job(store, rb.job_id).state == "running"


def test_a_batch_members_end_is_in_the_same_commit(store: Store, app_db: AppDB) -> None:
    then = new_job(name="report")
    member = new_job()
    store.enqueue_many([member], batch=NewBatch(id="b-tx", name="tx", total=1, then=then))
    r = store.reserve(queues=["default"], worker=W1, lease=30)[0]
    tx = store.job_transaction(job_id=r.job_id, token=r.token)
    app_db.insert(tx.connection, r.job_id, 1)
    assert tx.complete().accepted
    batch = get_batch(store, "b-tx")
    assert batch is not None and batch.state == "succeeded" and batch.done == 1
    assert batch.then_job_id == then.id
    assert job(store, then.id).state == "queued"
    assert app_db.rows() == [(r.job_id, 1)]


def test_a_store_without_job_transactions_refuses_one_clearly(store: Store) -> None:
    if store.capabilities.job_transactions:
        pytest.skip("this store supports job transactions (the tests above)")
    j = new_job()
    enqueue(store, j)
    r = store.reserve(queues=["default"], worker=W1, lease=30)[0]
    with pytest.raises(ConfigError):
        store.job_transaction(job_id=j.id, token=r.token)
    assert job(store, j.id).state == "running"


@pytest.mark.parametrize("ending", ["commit", "rollback"])
def test_a_job_that_ends_its_transaction_itself_is_not_recorded_as_done(
    store: Store, app_db: AppDB, ending: str
) -> None:
    j = new_job()
    enqueue(store, j)
    r = store.reserve(queues=["default"], worker=W1, lease=30)[0]
    tx = store.job_transaction(job_id=j.id, token=r.token)
    app_db.insert(tx.connection, j.id, 1)
    getattr(tx.connection, ending)()  # what the job must not do: tenure commits it
    app_db.insert(tx.connection, j.id, 2)

    with pytest.raises(JobTransactionEnded, match=rf"job {j.id} committed or rolled back"):
        tx.complete()

    # its success is not recorded with writes that did not commit with it; the worker fails
    # the job for good (see the e2e test), nothing here runs it again
    assert job(store, j.id).state == "running"
    committed = [(j.id, 1)] if ending == "commit" else []
    # statements after the job's own COMMIT either run one by one (they land) or are held in
    # a transaction tenure rolls back, as the backend's driver does
    later = [(j.id, 2)] if app_db.kit.statements_after_its_own_commit_land else []
    assert sorted(app_db.rows()) == committed + later
