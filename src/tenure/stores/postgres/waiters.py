"""Pruning the rows of waiters that are gone (PostgreSQL's tenure_waiters, migration 0007).

A waiter's row is deleted by its job's end; one whose waiter gave up or died stays until it
lapses at `until`, and nothing else deletes it: a wait registered on a job that had already
ended (the waiter reads the job again and returns), or on a job that never ends, leaves its
row behind. The workers' retention tick (`Store.sweep`) and `tenure prune` delete the lapsed
rows, one bounded chunk per sweep; two sweepers at once skip each other's rows (SKIP LOCKED).
"""

from __future__ import annotations

from tenure.stores.postgres.database import Cursor, Database


def prune(db: Database, cur: Cursor, now: float, limit: int) -> int:
    """Delete up to `limit` rows that lapsed before `now`; how many went."""
    return int(
        cur.execute(
            db.q(
                "DELETE FROM {s}.tenure_waiters WHERE job_id IN (SELECT job_id"
                " FROM {s}.tenure_waiters WHERE until < %s LIMIT %s FOR UPDATE SKIP LOCKED)"
            ),
            (now, limit),
        ).rowcount
    )


def count_lapsed(db: Database, cur: Cursor, now: float) -> int:
    row = cur.execute(
        db.q("SELECT count(*) AS n FROM {s}.tenure_waiters WHERE until < %s"), (now,)
    ).fetchone()
    return int(row["n"]) if row else 0
