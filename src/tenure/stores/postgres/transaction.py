"""The application's transactions on PostgreSQL: enqueueing inside one (`dispatch(conn=...)`)
and a running job's own writes committed together with its completion (`ctx.transaction()`).
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row, tuple_row

from tenure.errors import ConfigError
from tenure.stores.base import EndResult, Reservation, transaction_ended
from tenure.stores.postgres.database import Connection, Cursor, Database


class Completer(Protocol):
    """What a job transaction uses of the PostgreSQL store, which imports this module."""

    db: Database

    def complete_on(
        self, cur: Cursor, job_id: str, token: int, result: str | None = None
    ) -> EndResult | None: ...

    def end_attempt(self, *, job_id: str, token: int) -> tuple[EndResult, Reservation | None]: ...


def caller_cursor(db: Database, conn: Any) -> Cursor:
    """A dict-row cursor on the application's own connection, inside its transaction.

    Takes a psycopg (3) connection, or what SQLAlchemy wraps one in: a Connection (its
    `.connection`) or its DB-API connection proxy (its `.driver_connection`). Nothing here
    commits: the application's commit makes the jobs visible (and sends the NOTIFY, which
    PostgreSQL holds until then), its rollback leaves no job."""
    raw = _unwrap(conn)
    if not isinstance(raw, psycopg.Connection):
        raise ConfigError(
            "conn=: the PostgreSQL store takes a psycopg connection (psycopg 3), or a "
            f"SQLAlchemy connection on the psycopg driver; got {type(conn).__name__}"
        )
    mine = conninfo_to_dict(db.conninfo).get("dbname")
    theirs = raw.info.dbname
    if mine is not None and theirs != mine:
        raise ConfigError(
            f"conn=: that connection is to database {theirs!r}, this store is in {mine!r}; "
            "enqueueing in a transaction needs the same database"
        )
    if raw.autocommit and raw.info.transaction_status == TransactionStatus.IDLE:
        raise ConfigError(
            "conn=: that connection is in autocommit mode with no transaction open, so there "
            "is no transaction to enqueue in; open one first (with conn.transaction(): ...)"
        )
    if not db.migrated:
        db.migrate()  # on the store's own connection: DDL is not the application's business
    return raw.cursor(row_factory=dict_row)


def _unwrap(conn: Any) -> Any:
    for _ in range(3):
        if isinstance(conn, psycopg.Connection):
            return conn
        inner = getattr(conn, "driver_connection", None)  # SQLAlchemy's DB-API proxy
        if inner is None and hasattr(conn, "exec_driver_sql"):  # a SQLAlchemy Connection
            inner = getattr(conn, "connection", None)
        if inner is None:
            return conn
        conn = inner
    return conn


_MARKER = "tenure.job_transaction"


class PostgresJobTransaction:
    """A running job's own writes and its completion in one PostgreSQL transaction.

    The connection is the job's alone until the end (checked out of the store's pool, handed
    back afterwards), with psycopg's defaults: tuple rows, a transaction opened by the first
    statement. `complete()` writes the job's success, the attempt's end and its batch's
    bookkeeping on it and commits once; a process killed before that commit leaves neither the
    job's rows nor its success, and the job runs again.
    """

    def __init__(self, store: Completer, job_id: str, token: int) -> None:
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
                return self._store.end_attempt(job_id=self._job_id, token=self._token)[0]
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
