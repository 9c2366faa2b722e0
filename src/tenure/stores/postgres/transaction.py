"""A running job's own writes committed together with its completion on PostgreSQL
(`ctx.transaction()`); enqueueing in the application's transaction is Database.caller_cursor."""

from __future__ import annotations

from typing import Any, cast

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row, tuple_row

from tenure.core.records import Ending, EndResult
from tenure.core.words import transaction_ended
from tenure.stores.postgres.database import Connection
from tenure.stores.postgres.jobs import PostgresJobs

_MARKER = "tenure.job_transaction"


class PostgresJobTransaction:
    """A running job's own writes and its completion in one PostgreSQL transaction.

    The connection is the job's alone until the end (checked out of the store's pool, handed
    back afterwards), with psycopg's defaults: tuple rows, a transaction opened by the first
    statement. `complete()` writes the job's success, the attempt's end and its batch's
    bookkeeping on it and commits once; a process killed before that commit leaves neither the
    job's rows nor its success, and the job runs again.
    """

    def __init__(self, store: PostgresJobs, job_id: str, token: int) -> None:
        self._store = store
        self._job_id = job_id
        self._token = token
        self._conn: Connection | None = store.db.checkout()
        # A transaction-local setting: it vanishes with this transaction, so complete() can
        # tell whether the job committed or rolled back the connection itself.
        self._marker = f"{job_id}:{token}"
        try:
            self._conn.autocommit = False
            self._conn.execute(f"SELECT set_config('{_MARKER}', %s, true)", (self._marker,))
            cast("psycopg.Connection[Any]", self._conn).row_factory = tuple_row
        except BaseException:
            self._release()
            raise
        self.connection: psycopg.Connection[Any] = self._conn

    def complete(self, result: str | None = None) -> EndResult:
        conn = self._conn
        if conn is None:
            raise psycopg.InterfaceError("this job transaction has already ended")
        try:
            with conn.cursor(row_factory=dict_row) as cur:
                still = cur.execute(
                    f"SELECT current_setting('{_MARKER}', true) AS marker"
                ).fetchone()
                if still is None or still["marker"] != self._marker:
                    conn.rollback()  # whatever the job wrote after ending it is not ours
                    raise transaction_ended(self._job_id)
                ended = self._store.complete_on(cur, self._job_id, self._token, result)
            if ended is None:
                # Fenced: the job's own writes must not land either. Roll them back, then
                # record the refusal in a transaction of its own, as a plain success does.
                conn.rollback()
                return self._store.end_attempt(Ending(job_id=self._job_id, token=self._token))[0]
            conn.commit()
            return ended
        finally:
            self._release()

    def rollback(self) -> None:
        self._release()  # rolled back unless the job ended it itself, and handed back

    def _release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
                try:
                    conn.rollback()
                except psycopg.Error:
                    conn.close()
            self._store.db.checkin(conn)
