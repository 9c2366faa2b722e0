"""A running job's own writes and its completion in one SQLite transaction
(`ctx.transaction()` of a `transactional=True` job)."""

from __future__ import annotations

import sqlite3

from tenure.core.records import Ending, EndResult
from tenure.core.words import transaction_ended
from tenure.stores.sql import endings
from tenure.stores.sqlite.dialect import SQLITE
from tenure.stores.sqlite.jobs import SQLiteJobs


class SQLiteJobTransaction:
    """The job's own writes and its completion in one SQLite transaction.

    It holds SQLite's single write lock from the start to the job's end (BEGIN IMMEDIATE: a
    deferred transaction could not upgrade to a write once another process committed), so
    every other writer waits meanwhile: keep such jobs short, or use PostgreSQL.
    """

    def __init__(self, store: SQLiteJobs, job_id: str, token: int) -> None:
        self._store = store
        self._job_id = job_id
        self._token = token
        self.connection = sqlite3.connect(store.db.path, timeout=30.0, isolation_level=None)
        self.connection.row_factory = sqlite3.Row
        self.connection.execute("BEGIN IMMEDIATE")

    def complete(self, result: str | None = None) -> EndResult:
        conn = self.connection
        try:
            if not conn.in_transaction:  # the job committed or rolled back by itself
                raise transaction_ended(self._job_id)
            now = self._store.db.clock(conn)
            if endings.held_job(SQLITE, conn, self._job_id, self._token) is None:
                # Fenced: the job's own writes must not land either. Roll back, then record
                # the refusal in a transaction of its own.
                conn.execute("ROLLBACK")
                return self._store.end_attempt(Ending(job_id=self._job_id, token=self._token))[0]
            ended = self._store._complete_on(conn, self._job_id, self._token, now, result)
            conn.execute("COMMIT")
            return ended
        finally:
            conn.close()

    def rollback(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")
        self.connection.close()
