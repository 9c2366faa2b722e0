"""PostgreSQL as the shared SQL code (stores/sql/) sees it: the schema-qualified statements,
row locks, and the one insert every enqueue path shares."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from tenure.core.records import NewJob
from tenure.stores.postgres.claims import ENDED_PREFIX
from tenure.stores.postgres.database import CLOCK, Cursor, Database
from tenure.stores.postgres.guards import CONCURRENCY_LOCK
from tenure.stores.postgres.inserts import NOW, insert_jobs


class PostgresDialect:
    greatest = "greatest"
    lock_rows = " FOR UPDATE"
    creation_order = "seq"
    clock_sql = CLOCK
    fair_head = (
        "SELECT min(run_at) AS head FROM {s}.tenure_jobs WHERE ready_queue = %s AND run_at < %s"
    )
    slot_rows = True  # migration 0017
    statement_clock_sql = NOW  # now(): the transaction's start, one value for the statement
    # a value out of its column's range or type (DataError), a broken constraint; not
    # OperationalError, a lost connection, which no savepoint survives
    row_errors: tuple[type[Exception], ...] = (
        psycopg.errors.DataError,
        psycopg.errors.IntegrityError,
        ValueError,
        TypeError,
        KeyError,
        OverflowError,
    )

    def __init__(self, db: Database) -> None:
        self.q = db.q
        self._db = db

    def wake(self, cur: Cursor, queue: str) -> None:
        cur.execute("SELECT pg_notify(%s, %s)", (self._db.channel, queue))

    def job_ended(self, cur: Cursor, job_id: str) -> None:
        # the waiters of a job that failed or was cancelled (see claims.WAKE_WAITERS)
        cur.execute(
            self.q(
                "WITH woken AS (DELETE FROM {s}.tenure_waiters WHERE job_id = %s"
                " RETURNING job_id) SELECT pg_notify(%s, %s || job_id) FROM woken"
            ),
            (job_id, self._db.channel, ENDED_PREFIX),
        )

    def lock_key(self, cur: Cursor, key: str) -> None:
        # the lock a reservation *tries* before it counts the key's running attempts
        cur.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
            (CONCURRENCY_LOCK, f"{self._db.schema}:{key}"),
        )

    def end_slot(self, cur: Cursor, key: str, *, held: bool) -> None:
        # the upsert locks the key's row even when it changes nothing (claims.py's slots)
        cur.execute(
            self.q(
                "INSERT INTO {s}.tenure_concurrency (key, running) VALUES (%s, 0)"
                " ON CONFLICT (key) DO UPDATE SET running = greatest("
                "{s}.tenure_concurrency.running - %s, 0)"
            ),
            (key, int(held)),
        )

    def insert_jobs(
        self, cur: Cursor, jobs: Sequence[NewJob], now: float, *, skip_existing: bool
    ) -> int:
        # created_at and run_at come from the server's now() inside the statement itself
        return insert_jobs(self._db, cur, jobs, skip_existing=skip_existing)

    def text_list(self, values: Sequence[str]) -> list[str]:
        return list(values)

    def read_text_list(self, value: list[str]) -> tuple[str, ...]:
        return tuple(value)


def lock_batches(db: Database, cur: Cursor, batch_ids: Sequence[str]) -> None:
    """Lock several batch rows in one fixed order, for a caller ending jobs of many batches."""
    cur.execute(
        db.q("SELECT id FROM {s}.tenure_batches WHERE id = ANY(%s) ORDER BY id FOR UPDATE"),
        (sorted(set(batch_ids)),),
    )
