"""PostgreSQL keeps a row per wait for a job's end (tenure_waiters); a waiter that is gone
leaves its row until it lapses, and the workers' sweep (and `tenure prune`) deletes the
lapsed rows, a bounded chunk at a time, leaving live waits alone."""

from __future__ import annotations

from typing import Any

import psycopg

from backends.postgres.kit import PostgresKit
from conformance.helpers import enqueue, new_job, reserve_one
from tenure.stores import Store


def waiter_rows(kit: PostgresKit) -> dict[str, float]:
    with psycopg.connect(kit.conninfo, autocommit=True) as conn:
        rows: list[Any] = conn.execute(
            f"SELECT job_id, until FROM {kit.app_table('tenure_waiters')}".encode()
        ).fetchall()
    return {r[0]: r[1] for r in rows}


def lapse(kit: PostgresKit, job_ids: list[str]) -> None:
    """What an hour does to the rows of waiters that died: their `until` is behind."""
    with psycopg.connect(kit.conninfo, autocommit=True) as conn:
        conn.execute(
            f"UPDATE {kit.app_table('tenure_waiters')} SET until = until - 7200"
            " WHERE job_id = ANY(%s)".encode(),
            (job_ids,),
        )


def test_the_sweep_prunes_lapsed_waiters_and_keeps_live_ones(
    store: Store, kit: PostgresKit
) -> None:
    ended, running = new_job(), new_job()
    enqueue(store, running)
    res = reserve_one(store)
    assert res.job_id == running.id
    # A wait on a job that has ended already (or was never there): no end will delete its
    # row. And a live wait on the running job.
    store.wait_for_work(queues=["default"], timeout=0.0, ended=[ended.id])
    store.wait_for_work(queues=["default"], timeout=30.0, ended=[running.id])
    assert set(waiter_rows(kit)) == {ended.id, running.id}
    assert store.sweep().pruned.waiters == 0  # neither has lapsed

    lapse(kit, [ended.id])
    assert store.sweep(dry_run=True).pruned.waiters == 1
    assert set(waiter_rows(kit)) == {ended.id, running.id}  # a dry run deletes nothing
    pruned = store.sweep().pruned
    assert pruned.waiters == 1 and not pruned.more
    assert set(waiter_rows(kit)) == {running.id}
    assert store.sweep(dry_run=True).pruned.waiters == 0


def test_lapsed_waiters_go_a_bounded_chunk_per_sweep(store: Store, kit: PostgresKit) -> None:
    gone = [new_job().id for _ in range(7)]
    store.wait_for_work(queues=["default"], timeout=0.0, ended=gone)
    lapse(kit, gone)
    first = store.sweep(limit=3).pruned
    assert (first.waiters, first.more) == (3, True)
    assert len(waiter_rows(kit)) == 4
    second = store.sweep(limit=3).pruned
    third = store.sweep(limit=3).pruned
    assert (second.waiters, third.waiters, third.more) == (3, 1, False)
    assert waiter_rows(kit) == {}
