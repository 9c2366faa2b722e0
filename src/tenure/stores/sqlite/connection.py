"""The SQLite connection layer and the job's hot path that runs on it: one connection per
thread (and per process), WAL, the store's clock, the write transaction that takes the lock up
front, and the statements of a job's walk (enqueue, reserve, end_attempt) with the
transaction they run in, in one module, so that the walk does not hop from layer to layer.
The rest of the store (rescue, heartbeats, batches, reading) is store.py and operations.py."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tenure.core.errors import ConfigError, StoreMisconfigured, StoreUnavailable
from tenure.core.records import (
    EndResult,
    NewBatch,
    NewJob,
    Reservation,
    WorkerRef,
    batch_target,
    reservation,
)
from tenure.stores.sql import batches, control, endings
from tenure.stores.sql import guards as sql_guards
from tenure.stores.sql.dialect import Dialect
from tenure.stores.sqlite import guards, schema

log = logging.getLogger("tenure.store")

CLOCK_SQL = "(julianday('now') - 2440587.5) * 86400.0"  # epoch seconds, SQLite's own clock
# what a damaged row raises (see sql/endings.isolated)
ROW_ERRORS = (sqlite3.Error, ValueError, TypeError, KeyError, OverflowError)
UNIX_EPOCH_MS = 210_866_760_000_000  # 1970-01-01 in Julian milliseconds, as SQLite's unix VFS


def sqlite_now() -> float:
    """CLOCK_SQL's value without a statement: SQLite's 'now' is the host's real-time clock
    (the unix VFS's xCurrentTimeInt64: gettimeofday, cut to the millisecond) in this very
    process, so the same clock read here, cut and converted by the same arithmetic, is the
    same number; a write transaction saves a statement (one per job on the hot path)."""
    ms = time.time_ns() // 1_000_000 + UNIX_EPOCH_MS
    return (ms / 86_400_000.0 - 2440587.5) * 86400.0


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
            conn = self._open()
            self._local.file = _file_identity(self.path)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
            self._local.pid = os.getpid()
            if not self._migrated:
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
    def _write(self) -> Iterator[tuple[sqlite3.Connection, float]]:
        """A write transaction holding the lock from its start, with the store's now."""
        conn = self._checked_conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn, self._now(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _checked_conn(self) -> sqlite3.Connection:
        """The file at the path must still be the one this connection opened: a connection to
        a deleted file keeps writing into its orphaned inode, so a dispatch would return the id
        of a job that exists nowhere another process can see. One stat per write transaction."""
        conn = self._conn()
        if _file_identity(self.path) == self._local.file:
            return conn
        self._local.conn = None  # the next call opens (and migrates) what is at the path then
        self._migrated = False
        conn.close()
        raise StoreUnavailable(
            f"the SQLite store file {os.path.abspath(self.path)} was deleted or replaced since "
            "this process opened it; nothing was written. Put the file back (or let the next "
            "call create a new one there) and restart the workers that use it"
        )

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
        return sqlite_now()

    def migrate(self) -> None:
        self._migrated = True
        schema.migrate(self._conn())

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


# Past every attempt row the job has: a stray row (a restore, a hand edit) must not make the
# next attempt's number collide, which would fail the whole reservation for the queue.
NEXT_ATTEMPT = (
    "max(attempt, (SELECT coalesce(max(number), 0) FROM tenure_attempts"
    " WHERE job_id = tenure_jobs.id)) + 1"
)

# a queue's queued jobs, in the ready index (sql.guards.place_fairly)
FAIR_READY = "queue = %s AND state = 'queued'"

# the shared clause in SQLite's words (what SQLiteDialect.q does): no schema, `?` parameters
NOT_PAUSED = control.not_paused("?").replace("{s}.", "")


# A success, fenced by its token in the same statement. A result of None leaves the column
# alone (it is NULL until a success writes one): the worker's hot path pays nothing for it.
_COMPLETE, _COMPLETE_WITH_RESULT = (
    "UPDATE tenure_jobs SET state = 'succeeded', finished_at = ?, lease_expires_at = NULL,"
    f" tries_used = tries_used + 1{result} WHERE id = ? AND attempt = ? AND state = 'running'"
    " RETURNING batch_id, chain, queue, concurrency_key, concurrency_limit"
    for result in ("", ", result = ?")
)
# endings.close_attempt for a success, as SQLite runs it
_CLOSE_SUCCEEDED = (
    "UPDATE tenure_attempts SET ended_at = ?, outcome = 'succeeded', error = NULL,"
    " traceback = NULL WHERE job_id = ? AND number = ?"
)


# What a damaged job row raises while it is claimed: it fails alone (sql/endings.isolated).
DAMAGE = ROW_ERRORS


class _Damaged(Exception):
    """A row failed to claim on the savepoint-free path: roll back, claim carefully."""


class SQLiteJobs(SQLiteConnections):
    """A job through its life on the hot path: enqueued, reserved, completed (and the next
    one claimed in the same transaction)."""

    dialect: Dialect  # the store's SQLITE (dialect.py builds on this module)

    def enqueue_many(
        self,
        jobs: Sequence[NewJob],
        *,
        conn: Any = None,
        batch: NewBatch | None = None,
        into_batch: str | None = None,
    ) -> list[str]:
        target = None if batch is None and into_batch is None else batch_target(batch, into_batch)
        with self._write() if conn is None else self._caller_transaction(conn) as (cur, now):
            if target is not None:
                return batches.enqueue(self.dialect, cur, target, jobs, now)
            return self._enqueue(cur, jobs, now)

    def _enqueue(self, conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float) -> list[str]:
        ids: list[str] = []
        fresh: list[NewJob] = []
        for job in jobs:
            if job.guards.debounce_key is not None:
                pending = sql_guards.debounced(self.dialect, conn, job, now)
                if pending is not None:
                    ids.append(pending)  # the key's one pending job, with these arguments
                    continue
                insert_jobs(conn, [job], now, skip_existing=True)  # seen by the next one
            elif job.guards.unique_key is not None:
                holder = guards.held_unique(conn, job.guards, now)
                if holder is not None:
                    ids.append(holder)  # deduplicated: the holder stands for it
                    continue
                guards.take_unique(conn, job.guards, job.id, now)
                # the next job of this call with the same key must see this one
                insert_jobs(conn, [job], now, skip_existing=True)
            else:
                fresh.append(job)
            ids.append(job.id)
        # an id already present is skipped: a dispatch retried after a lost reply must not
        # create the job twice
        insert_jobs(conn, fresh, now, skip_existing=True)
        for job, stored in zip(jobs, ids, strict=True):
            if job.guards.fair_key is not None and stored == job.id:
                sql_guards.place_fairly(self.dialect, conn, job, self.dialect.fair_ready)
        return ids

    @contextmanager
    def _caller_transaction(self, conn: Any) -> Iterator[tuple[sqlite3.Connection, float]]:
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
        if not self._migrated:
            self._conn()  # a new connection migrates the file first
        saved = conn.row_factory
        conn.row_factory = sqlite3.Row
        try:
            if not conn.in_transaction:
                conn.execute("BEGIN")  # the caller's commit or rollback decides, not us
            yield conn, self._now(conn)
        finally:
            conn.row_factory = saved

    def reserve(
        self, *, queues: Sequence[str], worker: WorkerRef, lease: float, limit: int = 1
    ) -> list[Reservation]:
        if limit < 1:
            return []
        # A poll that finds nothing ready takes no write lock: one read of each queue's head,
        # no transaction (a worker with free slots, e.g. waiting on a concurrency limit, polls
        # often, and each BEGIN IMMEDIATE would queue behind the one writer).
        conn = self._checked_conn()
        now = self._now(conn)
        if not any(self._ready(conn, queue, now, 1) for queue in queues):
            return []
        with self._write() as (conn, now):
            return self._reserve_on(conn, now, queues, worker, lease, limit)

    def end_attempt(
        self,
        *,
        job_id: str,
        token: int,
        outcome: str = "succeeded",
        result: str | None = None,
        error: str | None = None,
        traceback: str | None = None,
        permanent: bool = False,
        queues: Sequence[str] = (),
        worker: WorkerRef | None = None,
        lease: float = 0.0,
        cause: str | None = None,
        snooze: float = 0.0,
        record: bool = True,
    ) -> tuple[EndResult, Reservation | None]:
        # One write transaction for the end and the next claim: the hot path of a busy worker.
        # The claim runs without a savepoint; a row that fails to claim (damaged) rolls the
        # whole transaction back, and it runs again with each claim in its own savepoint.
        for careful in (False, True):
            try:
                with self._write() as (conn, now):
                    if outcome == "succeeded":
                        ended = self._complete_on(conn, job_id, token, now, result)
                    else:
                        ending = (
                            job_id,
                            token,
                            outcome,
                            error or outcome,
                            traceback,
                            permanent,
                            cause,
                            snooze,
                            record,
                        )
                        ended = endings.end_attempt(self.dialect, conn, lambda: now, *ending)
                    if worker is None or not queues:
                        return ended, None
                    claimed = self._reserve_on(conn, now, queues, worker, lease, 1, careful)
                return ended, claimed[0] if claimed else None
            except _Damaged:
                continue
        raise AssertionError("unreachable: the careful claim isolates every row")

    def _reserve_on(
        self,
        conn: sqlite3.Connection,
        now: float,
        queues: Sequence[str],
        worker: WorkerRef,
        lease: float,
        limit: int,
        careful: bool = True,
    ) -> list[Reservation]:
        """Claim up to `limit` jobs. `careful`: each in a savepoint, a damaged one failed alone;
        else no savepoint, and a damaged row raises _Damaged (the caller starts again)."""
        out: list[Reservation] = []
        full: set[str] = set()  # concurrency keys found without a free slot
        for queue in queues:  # priority order: drain earlier queues first
            want = limit - len(out)
            rows = self._ready(conn, queue, now, want)
            if len(rows) == want and any(
                r["overlap_key"] is not None
                or r["rate_key"] is not None
                or r["concurrency_key"] is not None
                for r in rows
            ):
                # guarded jobs may be deferred: look a little further than `limit` (when
                # there is further to look)
                rows = self._ready(conn, queue, now, want + sql_guards.RESERVE_LOOKAHEAD)
            for row in rows:
                if len(out) >= limit:
                    break
                if not careful:
                    try:
                        self._claim(conn, row, worker, now, lease, out, full)
                    except DAMAGE as exc:
                        raise _Damaged() from exc
                    continue
                with endings.isolated(self.dialect, conn, row["id"], now, "start"):
                    self._claim(conn, row, worker, now, lease, out, full)
            if len(out) >= limit:
                break
        return out

    def _claim(
        self,
        conn: sqlite3.Connection,
        row: Any,
        worker: WorkerRef,
        now: float,
        lease: float,
        out: list[Reservation],
        full: set[str],
    ) -> None:
        """Open the ready job's attempt into `out`, park it when its concurrency key is full,
        or defer it if its guard says not now. `full`: the keys found without a free slot in
        this transaction; they stay full, since no attempt ends inside it."""
        key = row["concurrency_key"]
        if key is not None and (
            key in full
            or sql_guards.running_under(self.dialect, conn, key, now)
            >= (row["concurrency_limit"] or 1)
        ):
            full.add(key)
            sql_guards.park(self.dialect, conn, row["id"])
            return
        deferral = self._guard_deferral(conn, row, now)
        if deferral is not None:
            self._defer(conn, row["id"], worker, now, *deferral)
        else:
            out.append(self._open_attempt(conn, row["id"], worker, now, lease))

    @staticmethod
    def _ready(conn: sqlite3.Connection, queue: str, now: float, limit: int) -> list[Any]:
        # INDEXED BY: left to itself the planner takes tenure_jobs_ready for the run_at range
        # and sorts every ready job of the queue by priority (a temp B-tree: 20 ms per call at
        # 50,000 queued); the head of (queue, state, priority, run_at, rowid) is the answer.
        return conn.execute(
            "SELECT id, overlap_key, overlap_delay, rate_key, rate_limit, rate_window,"
            " concurrency_key, concurrency_limit"
            " FROM tenure_jobs INDEXED BY tenure_jobs_ready_by_priority"
            " WHERE queue = ? AND state = 'queued' AND run_at <= ?"
            + NOT_PAUSED
            + " ORDER BY priority, run_at, rowid LIMIT ?",
            (queue, now, queue, limit),
        ).fetchall()

    def _guard_deferral(
        self, conn: sqlite3.Connection, row: Any, now: float
    ) -> tuple[float, str] | None:
        """(run_at, reason) if the job's overlap or rate guard says not now."""
        if row["overlap_key"] is not None:
            holder = guards.overlap_holder(conn, row["overlap_key"], row["id"], now)
            if holder is not None:
                return sql_guards.overlap_deferral(row, holder, now)
        if row["rate_key"] is not None:
            free_at = guards.rate_free_at(
                conn, row["rate_key"], row["rate_limit"], row["rate_window"], now
            )
            if free_at is not None:
                return sql_guards.rate_deferral(row, free_at)
        return None

    def _defer(
        self,
        conn: sqlite3.Connection,
        job_id: str,
        worker: WorkerRef,
        now: float,
        run_at: float,
        reason: str,
    ) -> None:
        """Not now, and not the job's fault: a `deferred` attempt, no try used. Two
        statements where PostgreSQL writes one (a data-modifying CTE, which SQLite lacks; in
        process, a second statement costs no round trip)."""
        number = conn.execute(
            f"UPDATE tenure_jobs SET attempt = {NEXT_ATTEMPT}, run_at = ? WHERE id = ?"
            " RETURNING attempt",
            (run_at, job_id),
        ).fetchone()["attempt"]
        conn.execute(
            "INSERT INTO tenure_attempts (job_id, number, worker_id, host, pid, started_at,"
            " ended_at, outcome, error) VALUES (?, ?, ?, ?, ?, ?, ?, 'deferred', ?)",
            (
                job_id,
                number,
                worker.id,
                worker.host,
                worker.pid,
                now,
                now,
                sql_guards.deferral_note(reason, run_at, now),
            ),
        )

    def _open_attempt(
        self, conn: sqlite3.Connection, job_id: str, worker: WorkerRef, now: float, lease: float
    ) -> Reservation:
        # Two statements, as in _defer; PostgreSQL's hot path claims in one (claims.CLAIM,
        # FOR UPDATE SKIP LOCKED), which SQLite's single writer has no need of.
        row = conn.execute(
            f"UPDATE tenure_jobs SET state = 'running', attempt = {NEXT_ATTEMPT},"
            " lease_expires_at = ?, worker_id = ? WHERE id = ?"
            " RETURNING id, name, queue, payload, policy, attempt, lease_expires_at, batch_id",
            (now + lease, worker.id, job_id),
        ).fetchone()
        conn.execute(
            "INSERT INTO tenure_attempts (job_id, number, worker_id, host, pid, started_at,"
            " last_heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (job_id, row["attempt"], worker.id, worker.host, worker.pid, now, now),
        )
        return reservation(row)

    def _complete_on(
        self,
        conn: sqlite3.Connection,
        job_id: str,
        token: int,
        now: float,
        result: str | None = None,
    ) -> EndResult:
        # The fencing check and the update are one statement: no row means the token is stale,
        # and then its result is not written either.
        row = conn.execute(
            _COMPLETE if result is None else _COMPLETE_WITH_RESULT,
            (now, job_id, token) if result is None else (now, result, job_id, token),
        ).fetchone()
        if row is None:
            return endings.refuse(self.dialect, conn, job_id, token, "succeeded", now)
        batch_id = row["batch_id"]
        conn.execute(_CLOSE_SUCCEEDED, (now, job_id, token))
        if batch_id is not None or row["chain"] is not None:
            # a chain's next link in this same transaction: a kill before the commit loses
            # neither the success nor the link
            endings.after_success(self.dialect, conn, job_id, batch_id, row["chain"], now, result)
        if row["concurrency_key"] is not None:
            sql_guards.release(self.dialect, conn, row, now)
        return EndResult(accepted=True, state="succeeded")


def insert_jobs(
    conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float, *, skip_existing: bool = False
) -> int:
    verb = "INSERT OR IGNORE" if skip_existing else "INSERT"
    before = conn.total_changes
    conn.executemany(
        f"{verb} INTO tenure_jobs (id, name, queue, payload, state, policy, created_at, run_at,"
        " batch_id, overlap_key, overlap_delay, rate_key, rate_limit, rate_window, keep_succeeded,"
        " keep_failed, priority, chain, concurrency_key, concurrency_limit, debounce_key)"
        " VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                j.id,
                j.name,
                j.queue,
                j.payload,
                j.policy.text,
                now,
                now + max(j.delay, 0.0),
                j.batch_id,
                j.guards.overlap_key,
                j.guards.overlap_delay,
                j.guards.rate_key,
                j.guards.rate_limit,
                j.guards.rate_window,
                j.keep.succeeded,
                j.keep.failed,
                j.priority,
                j.chain,
                j.guards.concurrency_key,
                j.guards.concurrency_limit,
                j.guards.debounce_key,
            )
            for j in jobs
        ],
    )
    return conn.total_changes - before


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
