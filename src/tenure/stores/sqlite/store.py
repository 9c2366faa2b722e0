"""The embedded default: one SQLite file in WAL mode, safe for several worker processes on one
host. Writes take the database lock up front (BEGIN IMMEDIATE) so two workers can never reserve
the same job, and every timestamp comes from SQLite's own clock inside the transaction.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from tenure.errors import ConfigError
from tenure.retry import Policy
from tenure.stores.base import (
    BatchRecord,
    CancelResult,
    Capabilities,
    EndResult,
    HeartbeatReply,
    NewBatch,
    NewJob,
    PeriodicClaim,
    PeriodicRecord,
    Rescued,
    Reservation,
    Swept,
    WorkerRef,
    batch_target,
    cancel_target,
    describe_crash,
)
from tenure.stores.sql import batches, chains, control, endings, periodic, retention
from tenure.stores.sql import guards as sql_guards
from tenure.stores.sql.rows import attempt_record
from tenure.stores.sqlite import guards
from tenure.stores.sqlite.connection import sqlite_path
from tenure.stores.sqlite.dialect import SQLITE, insert_jobs
from tenure.stores.sqlite.operations import SQLiteOperations
from tenure.stores.sqlite.transaction import SQLiteJobTransaction
from tenure.stores.sqlite.wake import FileWatch

log = logging.getLogger("tenure.store")

WAKE_POLL_S = 0.02  # without inotify
WAKE_WATCH_S = 0.25  # with it: a look now and then all the same, in case an event was missed

RESERVE_LOOKAHEAD = 32
# Past every attempt row the job has: a stray row (a restore, a hand edit) must not make the
# next attempt's number collide, which would fail the whole reservation for the queue.
NEXT_ATTEMPT = (
    "max(attempt, (SELECT coalesce(max(number), 0) FROM tenure_attempts"
    " WHERE job_id = tenure_jobs.id)) + 1"
)

NOT_PAUSED = SQLITE.q(control.not_paused("?"))


# A success, fenced by its token in the same statement. A result of None leaves the column
# alone (it is NULL until a success writes one): the worker's hot path pays nothing for it.
_COMPLETE = (
    "UPDATE tenure_jobs SET state = 'succeeded', finished_at = ?, lease_expires_at = NULL,"
    " tries_used = tries_used + 1 WHERE id = ? AND attempt = ? AND state = 'running'"
    " RETURNING batch_id, chain"
)
_COMPLETE_WITH_RESULT = (
    "UPDATE tenure_jobs SET state = 'succeeded', finished_at = ?, lease_expires_at = NULL,"
    " tries_used = tries_used + 1, result = ? WHERE id = ? AND attempt = ? AND state = 'running'"
    " RETURNING batch_id, chain"
)


class SQLiteStore(SQLiteOperations):
    """The embedded default store; the job lifecycle and batches live here."""

    capabilities: ClassVar[Capabilities] = Capabilities(
        name="SQLite",
        job_transactions=True,
        enqueue_in_caller_transaction=True,
        concurrent_job_transactions=False,  # one writer: a job transaction holds the lock
        listen_notify=False,
        many_hosts=False,
    )

    def enqueue_many(
        self,
        jobs: Sequence[NewJob],
        *,
        conn: Any = None,
        batch: NewBatch | None = None,
        into_batch: str | None = None,
    ) -> list[str]:
        target = batch_target(batch, into_batch)
        if conn is not None:
            with self._caller_transaction(conn) as (caller, now):
                if target is not None:
                    return batches.enqueue(SQLITE, caller, target, jobs, now)
                return self._enqueue(caller, jobs, now)
        with self._write() as (own, now):
            if target is not None:
                return batches.enqueue(SQLITE, own, target, jobs, now)
            return self._enqueue(own, jobs, now)

    def _enqueue(self, conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float) -> list[str]:
        ids: list[str] = []
        fresh: list[NewJob] = []
        for job in jobs:
            if job.guards.unique_key is not None:
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
        self.migrate_once()
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
        with self._write() as (conn, now):
            return self._reserve_on(conn, now, queues, worker, lease, limit)

    def complete_and_reserve(
        self,
        *,
        job_id: str,
        token: int,
        queues: Sequence[str] = (),
        worker: WorkerRef | None = None,
        lease: float = 0.0,
        result: str | None = None,
    ) -> tuple[EndResult, Reservation | None]:
        # One write transaction instead of two: the hot path of a busy worker.
        with self._write() as (conn, now):
            ended = self._complete_on(conn, job_id, token, now, result)
            if worker is None or not queues:
                return ended, None
            claimed = self._reserve_on(conn, now, queues, worker, lease, 1)
        return ended, claimed[0] if claimed else None

    def _reserve_on(
        self,
        conn: sqlite3.Connection,
        now: float,
        queues: Sequence[str],
        worker: WorkerRef,
        lease: float,
        limit: int,
    ) -> list[Reservation]:
        out: list[Reservation] = []
        for queue in queues:  # priority order: drain earlier queues first
            want = limit - len(out)
            rows = self._ready(conn, queue, now, want)
            if any(r["overlap_key"] is not None or r["rate_key"] is not None for r in rows):
                # guarded jobs may be deferred: look a little further than `limit`
                rows = self._ready(conn, queue, now, want + RESERVE_LOOKAHEAD)
            for row in rows:
                if len(out) >= limit:
                    break
                with self._isolated(conn, row["id"], now, "start"):
                    deferral = self._guard_deferral(conn, row, now)
                    if deferral is not None:
                        self._defer(conn, row["id"], worker, now, *deferral)
                        continue
                    out.append(self._open_attempt(conn, row["id"], worker, now, lease))
            if len(out) >= limit:
                break
        return out

    @staticmethod
    def _ready(conn: sqlite3.Connection, queue: str, now: float, limit: int) -> list[Any]:
        # INDEXED BY: left to itself the planner takes tenure_jobs_ready for the run_at range
        # and sorts every ready job of the queue by priority (a temp B-tree: 20 ms per call at
        # 50,000 queued); the head of (queue, state, priority, run_at, rowid) is the answer.
        return conn.execute(
            "SELECT id, overlap_key, overlap_delay, rate_key, rate_limit, rate_window"
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
        return Reservation(
            job_id=row["id"],
            name=row["name"],
            queue=row["queue"],
            payload=row["payload"],
            policy=Policy.from_json(row["policy"]),
            attempt=row["attempt"],
            token=row["attempt"],
            lease_expires_at=row["lease_expires_at"],
            batch_id=row["batch_id"],
        )

    def heartbeat(
        self, *, worker: WorkerRef, leases: Sequence[tuple[str, int]], lease: float
    ) -> HeartbeatReply:
        lost: list[str] = []
        cancel: list[str] = []
        with self._write() as (conn, now):
            conn.execute(
                "UPDATE tenure_workers SET last_seen_at = ? WHERE id = ?", (now, worker.id)
            )
            for job_id, token in leases:
                renewed = conn.execute(
                    "UPDATE tenure_jobs SET lease_expires_at = ? WHERE id = ? AND attempt = ?"
                    " AND state = 'running' AND lease_expires_at >= ?"
                    " RETURNING cancel_requested_at",
                    (now + lease, job_id, token, now),
                ).fetchone()
                if renewed is None:
                    lost.append(job_id)
                    continue
                conn.execute(
                    "UPDATE tenure_attempts SET last_heartbeat_at = ? WHERE job_id = ?"
                    " AND number = ?",
                    (now, job_id, token),
                )
                if renewed["cancel_requested_at"] is not None:
                    cancel.append(job_id)
            restart = conn.execute(
                "SELECT value FROM tenure_control WHERE key = 'restart_at'"
            ).fetchone()
        return HeartbeatReply(lost, cancel, float(restart["value"]) if restart else None)

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
            return endings.refuse(SQLITE, conn, job_id, token, "succeeded", now)
        batch_id = row["batch_id"]
        endings.close_attempt(SQLITE, conn, job_id, token, now, "succeeded", None, None)
        if batch_id is not None:
            batches.member_ended(SQLITE, conn, batch_id, "succeeded", now)
        # the next link in this same transaction: a kill before the commit loses neither
        chains.link_ended(SQLITE, conn, row["chain"], "succeeded", now)
        return EndResult(accepted=True, state="succeeded")

    def job_transaction(self, *, job_id: str, token: int) -> SQLiteJobTransaction:
        return SQLiteJobTransaction(self, job_id, token)

    def claim_once(self, *, job_id: str, token: int, key: str) -> bool:
        # The check then the insert, inside the one write lock; PostgreSQL needs FOR SHARE on
        # the job row in one statement to hold off a concurrent rescue (postgres/guards.py).
        with self._write() as (conn, now):
            if not self._holds(conn, job_id, token, now):
                return False  # a fenced attempt must not perform the effect
            return bool(
                conn.execute(
                    "INSERT OR IGNORE INTO tenure_once (job_id, key, attempt, at)"
                    " VALUES (?, ?, ?, ?)",
                    (job_id, key, token, now),
                ).rowcount
            )

    def end_attempt(
        self,
        *,
        job_id: str,
        token: int,
        outcome: str,
        error: str,
        traceback: str | None = None,
        permanent: bool = False,
    ) -> EndResult:
        ending = (job_id, token, outcome, error, traceback, permanent)
        with self._write() as (conn, now):
            return endings.end_attempt(SQLITE, conn, lambda: now, *ending)

    def _holds(self, conn: sqlite3.Connection, job_id: str, token: int, now: float) -> bool:
        # Fencing: a worker paused past its lease must not end an attempt someone else now owns.
        # A lease that has expired but not yet been rescued is still honoured: nobody else has
        # the job, and accepting the result avoids running it again.
        row = conn.execute(
            "SELECT 1 FROM tenure_jobs WHERE id = ? AND attempt = ? AND state = 'running'",
            (job_id, token),
        ).fetchone()
        return row is not None

    def cancel(self, job_id: str | None = None, *, batch_id: str | None = None) -> CancelResult:
        kind, target = cancel_target(job_id, batch_id)
        with self._write() as (conn, now):
            if kind == "batch":
                return control.cancel_batch(SQLITE, conn, target, now)
            return control.cancel(SQLITE, conn, target, lambda: now)

    def sweep(
        self, *, rescue: bool = True, prune: bool = True, limit: int = 500, dry_run: bool = False
    ) -> Swept:
        if dry_run:
            with self._read() as conn:
                return Swept(pruned=retention.count_due(SQLITE, conn, self._now(conn)))
        rescued = self._rescue_expired() if rescue else []
        if not prune:
            return Swept(rescued=rescued)
        # its own short transaction: reservations get the lock between a rescue and a chunk
        with self._write() as (conn, now):
            return Swept(rescued=rescued, pruned=retention.prune(SQLITE, conn, now, limit))

    def _rescue_expired(self) -> list[Rescued]:
        rescued: list[Rescued] = []
        with self._write() as (conn, now):
            rows = conn.execute(
                f"SELECT {endings.DECISION_COLUMNS}, lease_expires_at FROM tenure_jobs"
                " WHERE state = 'running' AND lease_expires_at < ?",
                (now,),
            ).fetchall()
            for row in rows:
                with self._isolated(conn, row["id"], now, "rescue"):
                    rescued.append(self._rescue_one(conn, row, now))
        return rescued

    def _rescue_one(self, conn: sqlite3.Connection, row: Any, now: float) -> Rescued:
        found = conn.execute(
            "SELECT * FROM tenure_attempts WHERE job_id = ? AND number = ?",
            (row["id"], row["attempt"]),
        ).fetchone()
        if found is None:
            error = "its lease expired with no result, and its attempt record is missing"
        else:
            error = describe_crash(attempt_record(found), row["lease_expires_at"])
        endings.close_attempt(SQLITE, conn, row["id"], row["attempt"], now, "crashed", error, None)
        result = endings.apply_decision(SQLITE, conn, row, "crashed", error, now, False)
        return Rescued(row["id"], row["attempt"], result)

    @contextmanager
    def _isolated(
        self, conn: sqlite3.Connection, job_id: str, now: float, what: str
    ) -> Iterator[None]:
        """One damaged job must not stop the queue: on an error, undo that job's part of the
        transaction, fail it with the reason, and go on with the others."""
        conn.execute("SAVEPOINT one_job")
        try:
            yield
        except (sqlite3.Error, ValueError, TypeError, KeyError, OverflowError) as exc:
            conn.execute("ROLLBACK TO one_job")
            reason = (
                f"tenure could not {what} this job, its row is damaged: {type(exc).__name__}: {exc}"
            )
            log.error("job %s: %s", job_id, reason)
            conn.execute(
                "UPDATE tenure_jobs SET state = 'failed', finished_at = ?, lease_expires_at = NULL,"
                " last_error = ? WHERE id = ?",
                (now, reason, job_id),
            )
        conn.execute("RELEASE one_job")

    def wait_for_work(
        self, *, queues: Sequence[str], timeout: float, ended: Sequence[str] = ()
    ) -> None:
        # PRAGMA data_version changes when another connection commits: a cheap local check,
        # made when the -wal file is written (inotify), else every 20 ms. Every commit wakes,
        # a job's end included.
        conn = self._conn()
        start = conn.execute("PRAGMA data_version").fetchone()[0]
        if ended:
            # A waiter of a job's end measures from this thread's previous return, not from
            # now: an end committed between the caller's read of the job and this call has
            # changed the version since, and the caller looks again at once.
            seen = getattr(self._local, "ended_seen", None)
            self._local.ended_seen = start
            if seen != start:
                return
        watch = self._wal_watch()
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            if watch is None:
                time.sleep(min(WAKE_POLL_S, remaining))
            else:
                watch.wait(min(WAKE_WATCH_S, remaining))
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            if version != start:
                if ended:
                    self._local.ended_seen = version
                return

    def _wal_watch(self) -> FileWatch | None:
        """This thread's watch on the -wal file (None: poll). Made again when the file is
        a new one (SQLite deletes it when its last connection closes)."""
        local = self._local
        try:
            inode = os.stat(self.path + "-wal").st_ino
        except OSError:
            inode = None
        if getattr(local, "watch_key", None) != (os.getpid(), inode):
            old: FileWatch | None = getattr(local, "watch", None)
            if old is not None and getattr(local, "watch_key", (None,))[0] == os.getpid():
                old.close()
            local.watch = FileWatch.open(self.path + "-wal") if inode is not None else None
            local.watch_key = (os.getpid(), inode)
        watch: FileWatch | None = local.watch
        return watch

    # -- batches -----------------------------------------------------------------------
    def list_batches(
        self, *, ids: Sequence[str] | None = None, limit: int = 50
    ) -> list[BatchRecord]:
        with self._read() as conn:
            return batches.list_batches(SQLITE, conn, ids, limit)

    def report_progress(self, *, job_id: str, token: int, fraction: float) -> None:
        with self._write() as (conn, _now):
            batches.report_progress(SQLITE, conn, job_id, token, fraction)

    # -- periodic jobs -----------------------------------------------------------------
    def claim_periodic(
        self, *, name: str, queue: str, due: float, job: NewJob | None
    ) -> PeriodicClaim:
        with self._write() as (conn, now):
            return periodic.claim(
                SQLITE, conn, name, due, job, lambda jobs: self._enqueue(conn, jobs, now)
            )

    def list_periodic(self) -> list[PeriodicRecord]:
        with self._read() as conn:
            return periodic.read_all(SQLITE, conn)


__all__ = ["SQLiteJobTransaction", "SQLiteStore", "sqlite_path"]
