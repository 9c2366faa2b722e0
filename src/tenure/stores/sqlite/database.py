"""The SQLite database under the store: one connection per thread (and per process), WAL, the
store's clock, the write transaction that takes the lock up front, migrations on first use and
the URL's path. The statements of a job's walk that run on it are jobs.py."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tenure.core.errors import ConfigError, StoreMisconfigured, StoreUnavailable
from tenure.stores.sqlite import file_watch, schema

CLOCK_SQL = "(julianday('now') - 2440587.5) * 86400.0"  # epoch seconds, SQLite's own clock
# what a damaged row raises (see sql/endings.isolated)
ROW_ERRORS = (sqlite3.Error, ValueError, TypeError, KeyError, OverflowError)
UNIX_EPOCH_MS = 210_866_760_000_000  # 1970-01-01 in Julian milliseconds, as SQLite's unix VFS


class _Pid:
    """This process's id, read once and again after a fork (os.register_at_fork): the store
    asks on every call whether it runs in the process that opened its connection, and a
    system call per question is most of the answer's cost on the worker's hot path."""

    now = os.getpid()

    @classmethod
    def forked(cls) -> None:
        cls.now = os.getpid()


os.register_at_fork(after_in_child=_Pid.forked)


def sqlite_now() -> float:
    """CLOCK_SQL's value without a statement: SQLite's 'now' is the host's real-time clock
    (the unix VFS's xCurrentTimeInt64: gettimeofday, cut to the millisecond) in this very
    process, so the same clock read here, cut and converted by the same arithmetic, is the
    same number; a write transaction saves a statement (one per job on the hot path)."""
    ms = time.time_ns() // 1_000_000 + UNIX_EPOCH_MS
    return (ms / 86_400_000.0 - 2440587.5) * 86400.0


class SQLiteDatabase:
    """One store's file, its connections and clock: SQLiteStore holds it as `db` (as
    PostgresStore holds its Database) and its parts reach the file only through it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = sqlite_path(url)
        self.local = threading.local()
        self.migrated = False
        self.frozen: Callable[[], float] | None = None
        self._watch: file_watch.FileWatch | None = None
        self._watch_pid = 0  # the process the watch was built in (0: none built yet)
        self._watch_lock = threading.Lock()

    # -- connections -------------------------------------------------------------------
    def conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self.local, "conn", None)
        if conn is None or getattr(self.local, "pid", None) != _Pid.now:
            conn = self._open()
            self.local.file = _file_identity(self.path)
            self.local.seen = None  # no stat has proved this connection's file yet
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=30000")
            self.local.conn = conn
            self.local.pid = _Pid.now
            if not self.migrated:
                self.migrate()
        return conn

    def _open(self) -> sqlite3.Connection:
        """A connection to the file; a path that cannot be opened (no such directory, no
        permission) is StoreMisconfigured naming the file, not sqlite3's bare
        "unable to open database file"."""
        try:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            try:
                _use_wal(conn)
            except sqlite3.DatabaseError as exc:
                conn.close()
                if isinstance(exc, sqlite3.OperationalError):
                    raise
                raise _not_a_database(self.path, exc) from exc
        except sqlite3.OperationalError as exc:
            if "unable to open" not in str(exc):
                raise
            where = os.path.abspath(self.path)
            folder = os.path.dirname(where)
            why = (
                f"the directory {folder} does not exist"
                if not os.path.isdir(folder)
                else f"it cannot be created or opened there ({exc})"
            )
            raise StoreMisconfigured(
                f"SQLite store {self.url}: cannot open {where}: {why}; create the directory "
                "or point the URL at a writable path"
            ) from None
        return conn

    @contextmanager
    def caller_transaction(self, conn: Any) -> Iterator[tuple[sqlite3.Connection, float]]:
        """The application's own connection to this store's file, inside its transaction (one
        is opened if none is): nothing here commits, the caller's commit or rollback decides,
        so a rollback leaves no job and workers see them only once the application commits."""
        if not isinstance(conn, sqlite3.Connection):
            raise ConfigError(
                f"conn=: the SQLite store takes a sqlite3.Connection, got {type(conn).__name__}"
            )
        files = {row[2] for row in conn.execute("PRAGMA database_list") if row[2]}
        if os.path.realpath(self.path) not in {os.path.realpath(f) for f in files}:
            raise ConfigError(
                f"conn=: that connection is not to this store's file {self.path!r}; enqueueing "
                "in a transaction needs the same database"
            )
        if not self.migrated:
            self.conn()  # a new connection migrates the file first
        saved = conn.row_factory
        conn.row_factory = sqlite3.Row
        try:
            if not conn.in_transaction:
                conn.execute("BEGIN")  # the caller's commit or rollback decides, not us
            yield conn, self.clock(conn)
        finally:
            conn.row_factory = saved

    def write(self) -> _Write:
        """A write transaction holding the lock from its start, with the store's now: `with
        db.write() as (conn, now)`, committed at the end of the block, rolled back when it
        raises."""
        return _Write(self)

    def checked_conn(self) -> sqlite3.Connection:
        """The file at the path must still be the one this connection opened: a connection to
        a deleted file keeps writing into its orphaned inode, so a dispatch would return the id
        of a job that exists nowhere another process can see. A stat of the path, unless the
        watch of its directories (file_watch.py) heard nothing since the last one did."""
        local, pid = self.local, _Pid.now
        conn: sqlite3.Connection | None = getattr(local, "conn", None)
        if conn is None or getattr(local, "pid", None) != pid:  # conn()'s test, without its call
            conn = self.conn()
        watch = self._watch
        if self._watch_pid != pid or (watch is not None and watch.broken):
            watch = self._watched()
        seen = (watch, watch.generation()) if watch is not None else None
        if seen is not None and seen == local.seen:
            return conn
        if _file_identity(self.path) == local.file:
            local.seen = seen
            return conn
        self.local.conn = None  # the next call opens (and migrates) what is at the path then
        self.migrated = False
        conn.close()
        raise StoreUnavailable(
            f"the SQLite store file {os.path.abspath(self.path)} was deleted or replaced since "
            "this process opened it; nothing was written. Put the file back (or let the next "
            "call create a new one there) and restart the workers that use it"
        )

    def _watched(self) -> file_watch.FileWatch | None:
        """This process's watch (a forked child builds its own: reading its parent's events
        would take them from the parent), built again once a directory on the path moved;
        None where a stat per check must do (decided once per process)."""
        watch, pid = self._watch, _Pid.now
        if self._watch_pid == pid and (watch is None or not watch.broken):
            return watch
        with self._watch_lock:
            self._forget_inherited(pid)
            # a broken one closes once no thread is still asking it (its finalizer)
            self._watch, self._watch_pid = file_watch.watch(self.path), pid
            return self._watch

    def _forget_inherited(self, pid: int) -> None:
        """A watch inherited through a fork is never closed here: its numbers may have been
        closed and reused since (a descriptor of the database, whose close would drop
        SQLite's locks on the file)."""
        if self._watch is not None and self._watch_pid != pid:
            self._watch.close.detach()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: one consistent snapshot for a multi-query read."""
        conn = self.conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def now(self) -> float:
        return self.clock(self.conn())

    def clock(self, conn: sqlite3.Connection) -> float:
        if self.frozen is not None:  # tenure.testing's frozen clock, in tests only
            return self.frozen()
        return sqlite_now()

    def migrate(self) -> None:
        self.migrated = True
        schema.migrate(self.conn())

    def close(self) -> None:
        self._forget_inherited(os.getpid())
        if self._watch is not None:
            self._watch.close()
        self._watch, self._watch_pid = None, 0
        conn = getattr(self.local, "conn", None)
        if conn is not None:
            conn.close()
            self.local.conn = None


class _Write:
    """SQLiteDatabase.write's transaction: a class rather than a generator (contextmanager),
    whose machinery costs more than the BEGIN and COMMIT it wraps on the worker's hot path."""

    __slots__ = ("conn", "db")

    def __init__(self, db: SQLiteDatabase) -> None:
        self.db = db

    def __enter__(self) -> tuple[sqlite3.Connection, float]:
        conn = self.conn = self.db.checked_conn()
        conn.execute("BEGIN IMMEDIATE")
        return conn, self.db.clock(conn)

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")  # an error propagates


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


def _not_a_database(path: str, exc: sqlite3.DatabaseError) -> Exception:
    """A file SQLite cannot read as a database is not an outage: retrying never fixes it, so
    the worker exits 2 naming the file, as for a missing one."""
    if isinstance(exc, sqlite3.OperationalError):  # locked, busy, I/O: may pass
        return exc
    return StoreMisconfigured(
        f"the SQLite store file {os.path.abspath(path)} is not a database SQLite can read "
        f"({exc}): it is corrupt or another kind of file. Restore it from a backup or point "
        "tenure at the right file"
    )


def _file_identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def sqlite_path(url: str) -> str:
    """sqlite:///relative.db, sqlite:////abs/path.db, sqlite:///:memory: is refused."""
    path = url.removeprefix("sqlite://")
    path = path.removeprefix("/") if not path.startswith("//") else path[1:]
    if not path or path == ":memory:":
        raise ValueError(
            "sqlite needs a file that every worker process can open, e.g. sqlite:///tenure.db"
        )
    return path
