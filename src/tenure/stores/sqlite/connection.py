"""The SQLite connection layer: one connection per thread (and per process), WAL, the
store's clock, and the write transaction that takes the lock up front."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

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
