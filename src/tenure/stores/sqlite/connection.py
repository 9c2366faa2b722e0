"""The SQLite connection layer: one connection per thread (and per process), WAL, the
store's clock, and the write transaction that takes the lock up front."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tenure.retry import Policy
from tenure.states import visible_state
from tenure.stores.base import AttemptRecord, JobRecord
from tenure.stores.sqlite import schema

NOW_SQL = "SELECT (julianday('now') - 2440587.5) * 86400.0"


class SQLiteConnections:
    def __init__(self, url: str) -> None:
        self.url = url
        self.path = sqlite_path(url)
        self._local = threading.local()
        self._migrated = False
        self.clock: Callable[[], float] | None = None

    # -- connections -------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.row_factory = sqlite3.Row
            _use_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
            self._local.pid = os.getpid()
            if not self._migrated:
                self.migrate()
        return conn

    def migrate_once(self) -> None:
        if not self._migrated:
            self._conn()

    @contextmanager
    def _write(self) -> Iterator[tuple[sqlite3.Connection, float]]:
        """A write transaction holding the lock from its start, with the store's now."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn, self._now(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: one consistent snapshot for a multi-query read."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def now(self) -> float:
        return self._now(self._conn())

    def _now(self, conn: sqlite3.Connection) -> float:
        if self.clock is not None:  # tenure.testing's frozen clock, in tests only
            return self.clock()
        return float(conn.execute(NOW_SQL).fetchone()[0])

    def migrate(self) -> None:
        self._migrated = True
        schema.migrate(self._conn())

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- jobs through their life -------------------------------------------------------


WAL_SWITCH_TIMEOUT_S = 30.0


def _use_wal(conn: sqlite3.Connection) -> None:
    """Put the file in WAL mode (it stays so). Processes opening a new file at once all try to
    switch it, and SQLite answers 'database is locked' at once, without its busy handler, to
    all but one: wait for that one instead of failing."""
    deadline = time.monotonic() + WAL_SWITCH_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)  # a back-off between tries, while another process switches it


def sqlite_path(url: str) -> str:
    """sqlite:///relative.db, sqlite:////abs/path.db, sqlite:///:memory: is refused."""
    path = url.removeprefix("sqlite://")
    path = path.removeprefix("/") if not path.startswith("//") else path[1:]
    if not path or path == ":memory:":
        raise ValueError(
            "sqlite needs a file that every worker process can open, e.g. sqlite:///tenure.db"
        )
    return path


def _attempt(row: Any) -> AttemptRecord:
    return AttemptRecord(
        job_id=row["job_id"],
        number=row["number"],
        worker_id=row["worker_id"],
        host=row["host"],
        pid=row["pid"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        outcome=row["outcome"],
        error=row["error"],
        traceback=row["traceback"],
        last_heartbeat_at=row["last_heartbeat_at"],
    )


def _job(row: Any, now: float, attempts: list[AttemptRecord]) -> JobRecord:
    return JobRecord(
        id=row["id"],
        name=row["name"],
        queue=row["queue"],
        payload=row["payload"],
        state=visible_state(row["state"], row["run_at"], now),
        policy=Policy.from_json(row["policy"]),
        created_at=row["created_at"],
        run_at=row["run_at"],
        finished_at=row["finished_at"],
        tries_used=row["tries_used"],
        exceptions=row["exceptions"],
        last_error=row["last_error"],
        lease_expires_at=row["lease_expires_at"],
        worker_id=row["worker_id"],
        batch_id=row["batch_id"],
        attempts=attempts,
    )
