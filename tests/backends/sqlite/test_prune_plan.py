"""SQLite's plans of the prune chunk: every statement finds its rows by key or by an index
range, never by walking the finished jobs. SQLite keeps no statistics, and its planner took
`state IN (...)` of the delete by key to the (state, lease_expires_at) index once the key list
passed ten, which made each chunk cost as much as the store is big."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

from conformance.helpers import enqueue, new_job, reserve_one, wait_until
from tenure.core.records import Ending
from tenure.core.retention import Keep
from tenure.stores.sqlite import SQLiteStore


def test_every_statement_of_a_chunk_uses_a_key_or_an_index_range(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'plan.db'}")
    store.migrate()
    try:
        jobs = [replace(new_job(), keep=Keep(succeeded=0.0, failed=0.0)) for _ in range(40)]
        enqueue(store, *jobs)
        for _ in jobs:
            res = reserve_one(store)
            assert store.end_attempt(Ending(job_id=res.job_id, token=res.token))[0].accepted
        wait_until(lambda: store.sweep(dry_run=True).pruned.jobs == 40, what="all 40 due")
        statements: list[str] = []
        store.db.conn().set_trace_callback(statements.append)
        assert store.sweep(rescue=False, limit=30).pruned.jobs == 30
        store.db.conn().set_trace_callback(None)
    finally:
        store.close()
    chunk = [s for s in statements if s.lstrip().upper().startswith(("SELECT", "DELETE"))]
    assert any(s.startswith("DELETE FROM tenure_jobs") for s in chunk), statements
    conn = sqlite3.connect(tmp_path / "plan.db")
    try:
        for sql in chunk:
            plan = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
            if sql.startswith("DELETE FROM tenure_jobs WHERE id IN"):
                assert plan == [
                    "SEARCH tenure_jobs USING INDEX sqlite_autoindex_tenure_jobs_1 (id=?)"
                ], plan
            for step in plan:
                assert not step.startswith("SCAN tenure_jobs"), (sql, plan)
                assert "tenure_jobs_lease" not in step, (sql, plan)
    finally:
        conn.close()
