"""The embedded default: one SQLite file in WAL mode, safe for several worker processes on one
host. Writes take the database lock up front (BEGIN IMMEDIATE) so two workers can never reserve
the same job, and every timestamp comes from SQLite's own clock inside the transaction.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ClassVar

from tenure.core import causes
from tenure.core.records import (
    HeartbeatReply,
    JobRecord,
    NewJob,
    PeriodicClaim,
    QueueCounts,
    Rescued,
    Swept,
    WorkerRecord,
    WorkerRef,
    ready_age,
)
from tenure.core.states import FINAL_STATES, PARKED_AT
from tenure.core.words import describe_crash
from tenure.stores.base import Capabilities
from tenure.stores.sql import batches, control, endings, operations, periodic, retention, workers
from tenure.stores.sql import guards as sql_guards
from tenure.stores.sql.rows import attempt_record, effect_record, job_record
from tenure.stores.sql.store import Clock, SQLStore
from tenure.stores.sqlite.database import SQLiteDatabase, sqlite_path
from tenure.stores.sqlite.dialect import SQLITE
from tenure.stores.sqlite.jobs import SQLiteJobs
from tenure.stores.sqlite.ready import FAIR_HEAD, SCHEDULED
from tenure.stores.sqlite.transaction import SQLiteJobTransaction
from tenure.stores.sqlite.wake import FileWatch

log = logging.getLogger("tenure.store")

WAKE_POLL_S = 0.02  # without inotify
WAKE_WATCH_S = 0.25  # with it: a look now and then all the same, in case an event was missed


class SQLiteStore(SQLiteJobs, SQLStore):
    """The embedded default store: the job's hot path is SQLiteJobs (jobs.py), the
    operators' verbs both SQL stores share are SQLStore (stores/sql/store.py); its rescue,
    heartbeats, waiting, reading and periodic claims live here."""

    dialect = SQLITE

    capabilities: ClassVar[Capabilities] = Capabilities(
        name="SQLite",
        job_transactions=True,
        enqueue_in_caller_transaction=True,
        concurrent_job_transactions=False,  # one writer: a job transaction holds the lock
        listen_notify=False,
        many_hosts=False,
    )

    def __init__(self, url: str) -> None:
        self.url = url
        self.db = SQLiteDatabase(url)
        self.path = self.db.path
        self._under = {}

    def now(self) -> float:
        return self.db.now()

    def migrate(self) -> None:
        self.db.migrate()

    def close(self) -> None:
        self.db.close()

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.db.read()

    @contextmanager
    def _change(self) -> Iterator[tuple[sqlite3.Connection, Clock]]:
        with self.db.write() as (conn, now):
            yield conn, lambda: now

    def heartbeat(
        self,
        *,
        worker: WorkerRef | WorkerRecord,
        leases: Sequence[tuple[str, int]] = (),
        lease: float = 0.0,
        memory: Mapping[str, float] | None = None,
    ) -> HeartbeatReply:
        lost: list[str] = []
        cancel: list[str] = []
        with self.db.write() as (conn, now):
            if isinstance(worker, WorkerRecord):
                workers.register(SQLITE, conn, worker, now)
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
                    "UPDATE tenure_attempts SET last_heartbeat_at = ?,"
                    " memory_mb = coalesce(?, memory_mb) WHERE job_id = ? AND number = ?",
                    (now, (memory or {}).get(job_id), job_id, token),
                )
                if renewed["cancel_requested_at"] is not None:
                    cancel.append(job_id)
            restart = conn.execute(
                "SELECT value FROM tenure_control WHERE key = 'restart_at'"
            ).fetchone()
        return HeartbeatReply(lost, cancel, float(restart["value"]) if restart else None)

    def job_transaction(self, *, job_id: str, token: int) -> SQLiteJobTransaction:
        return SQLiteJobTransaction(self, job_id, token)

    def claim_once(self, *, job_id: str, token: int, key: str) -> bool:
        # The check then the insert, inside the one write lock; PostgreSQL needs FOR SHARE on
        # the job row in one statement to hold off a concurrent rescue (postgres/guards.py).
        with self.db.write() as (conn, now):
            if endings.held_job(SQLITE, conn, job_id, token) is None:
                return False  # fenced: the attempt must not perform the effect
            return bool(
                conn.execute(
                    "INSERT OR IGNORE INTO tenure_once (job_id, key, attempt, at)"
                    " VALUES (?, ?, ?, ?)",
                    (job_id, key, token, now),
                ).rowcount
            )

    def sweep(
        self, *, rescue: bool = True, prune: bool = True, limit: int = 500, dry_run: bool = False
    ) -> Swept:
        if dry_run:
            with self.db.read() as conn:
                return Swept(pruned=retention.count_due(SQLITE, conn, self.db.clock(conn)))
        rescued, lapse = self._rescue_expired() if rescue else ([], None)
        if not prune:
            return Swept(rescued=rescued, next_lapse_in=lapse)
        # its own short transaction: reservations get the lock between a rescue and a chunk
        with self.db.write() as (conn, now):
            pruned = retention.prune(SQLITE, conn, now, limit)
        return Swept(rescued=rescued, pruned=pruned, next_lapse_in=lapse)

    def _rescue_expired(self) -> tuple[list[Rescued], float | None]:
        """The rescued attempts, and in how many seconds the earliest lease left ends."""
        rescued: list[Rescued] = []
        with self.db.write() as (conn, now):
            rows = conn.execute(
                f"SELECT {endings.DECISION_COLUMNS}, lease_expires_at FROM tenure_jobs"
                " WHERE state = 'running' AND lease_expires_at < ?",
                (now,),
            ).fetchall()
            for row in rows:
                with endings.isolated(SQLITE, conn, row["id"], now, "rescue"):
                    rescued.append(self._rescue_one(conn, row, now))
            return rescued, endings.next_lapse_in(SQLITE, conn, now)

    def _rescue_one(self, conn: sqlite3.Connection, row: Any, now: float) -> Rescued:
        found = conn.execute(
            "SELECT * FROM tenure_attempts WHERE job_id = ? AND number = ?",
            (row["id"], row["attempt"]),
        ).fetchone()
        stopping_at = None
        if found is None:
            error = "its lease expired with no result, and its attempt record is missing"
        else:
            worker = conn.execute(
                "SELECT stopping_at FROM tenure_workers WHERE id = ? AND stopped_at IS NULL",
                (found["worker_id"],),
            ).fetchone()
            stopping_at = worker["stopping_at"] if worker is not None else None
            error = describe_crash(attempt_record(found), row["lease_expires_at"], stopping_at)
        return endings.rescue(SQLITE, conn, row, error, now, causes.of_rescue(stopping_at))

    def wait_for_work(
        self, *, queues: Sequence[str], timeout: float, ended: Sequence[str] = ()
    ) -> None:
        # PRAGMA data_version changes when another connection commits: a cheap local check,
        # made when the -wal file is written (inotify), else every 20 ms. Every commit wakes,
        # a job's end included.
        conn = self.db.conn()
        start = conn.execute("PRAGMA data_version").fetchone()[0]
        if ended:
            # A waiter of a job's end measures from this thread's previous return, not from
            # now: an end committed between the caller's read of the job and this call has
            # changed the version since, and the caller looks again at once.
            seen = getattr(self.db.local, "ended_seen", None)
            self.db.local.ended_seen = start
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
                    self.db.local.ended_seen = version
                return

    def _wal_watch(self) -> FileWatch | None:
        """This thread's watch on the -wal file (None: poll). Made again when the file is
        a new one (SQLite deletes it when its last connection closes)."""
        local = self.db.local
        try:
            inode = os.stat(self.db.path + "-wal").st_ino
        except OSError:
            inode = None
        if getattr(local, "watch_key", None) != (os.getpid(), inode):
            old: FileWatch | None = getattr(local, "watch", None)
            if old is not None and getattr(local, "watch_key", (None,))[0] == os.getpid():
                old.close()
            local.watch = FileWatch.open(self.db.path + "-wal") if inode is not None else None
            local.watch_key = (os.getpid(), inode)
        watch: FileWatch | None = local.watch
        return watch

    # -- batches, reading and operating -------------------------------------------------
    def report_progress(self, *, job_id: str, token: int, fraction: float) -> None:
        with self.db.write() as (conn, _now):
            batches.report_progress(SQLITE, conn, job_id, token, fraction)

    def list_jobs(
        self,
        *,
        ids: Sequence[str] | None = None,
        state: str | None = None,
        queue: str | None = None,
        limit: int = 100,
        batch_id: str | None = None,
    ) -> list[JobRecord]:
        if ids is None:
            conn = self.db.conn()
            now = self.db.clock(conn)
            return operations.list_jobs(
                SQLITE, conn, state=state, queue=queue, limit=limit, now=now, batch_id=batch_id
            )
        with self.db.read() as conn:  # one snapshot: the attempts and effects agree with the jobs
            now = self.db.clock(conn)
            found = (_read_job(conn, now, job_id) for job_id in dict.fromkeys(ids))
            return [record for record in found if record is not None]

    def queue_counts(self, *, keys: bool = False) -> dict[str, QueueCounts]:
        out: dict[str, QueueCounts] = {}
        with self.db.read() as conn:  # one snapshot for every read
            now = self.db.clock(conn)
            # Each state from the index that holds it (migrations 0013, 0015), scanned, never
            # the table: queued jobs from tenure_jobs_ready, running ones from
            # tenure_jobs_lease, succeeded ones from tenure_jobs_succeeded (retention's), failed
            # and cancelled ones from tenure_jobs_state. Counters kept by triggers would make it
            # O(1) but cost every state change a write; SQLite is not where a store holds
            # millions of jobs.
            for row in conn.execute(COUNTS_BY_STATE):
                counts = out.setdefault(row["queue"], QueueCounts())
                counts[row["state"]] = row["n"]
            for queue in control.paused_queues(SQLITE, conn):
                out.setdefault(queue, QueueCounts()).paused = True
            # Scheduled = queued with run_at in the future: a range of the ready index per
            # queue and priority; the oldest ready job is the first of the queue's priorities'
            # heads (ready.py: migration 0017 left one ready index).
            for queue, counts in out.items():
                if counts["queued"]:
                    scheduled, waiting = conn.execute(SCHEDULED, (queue, now, PARKED_AT)).fetchone()
                    counts["queued"] -= scheduled
                    counts["scheduled"] = scheduled
                    counts.waiting = waiting  # parked: queued, waiting on their key
                    oldest = conn.execute(FAIR_HEAD, (queue, ANY_TIME)).fetchone()[0]
                    counts.oldest_ready_age = ready_age(now, oldest)
            if keys:
                sql_guards.add_key_counts(SQLITE, conn, out)
        return out

    def forget_job(self, job_id: str) -> bool:
        with self.db.write() as (conn, _now):
            deleted = conn.execute(
                "DELETE FROM tenure_jobs WHERE id = ? AND state IN (?, ?, ?)",
                (job_id, *sorted(FINAL_STATES)),
            ).rowcount
            if deleted:  # the SQLite schema has no foreign keys to cascade (PostgreSQL does)
                conn.execute("DELETE FROM tenure_attempts WHERE job_id = ?", (job_id,))
                conn.execute("DELETE FROM tenure_once WHERE job_id = ?", (job_id,))
            return bool(deleted)

    # -- periodic jobs -----------------------------------------------------------------
    def claim_periodic(
        self, *, name: str, queue: str, due: float, job: NewJob | None
    ) -> PeriodicClaim:
        with self.db.write() as (conn, now):
            return periodic.claim(
                SQLITE, conn, name, due, job, lambda jobs: self._enqueue(conn, jobs, now)
            )


ANY_TIME = 1e300  # later than any run_at: the bound of the oldest queued job's search

# Every part names its index's condition: SQLite reads a partial index only for a query that
# states it (tests/backends/sqlite/test_plans.py checks that none scans the table).
COUNTS_BY_STATE = (
    "SELECT queue, 'queued' AS state, count(*) AS n FROM tenure_jobs WHERE state = 'queued'"
    " GROUP BY queue"
    " UNION ALL SELECT queue, 'running', count(*) FROM tenure_jobs WHERE state = 'running'"
    " GROUP BY queue"
    " UNION ALL SELECT queue, 'succeeded', count(*) FROM tenure_jobs"
    f" WHERE {operations.SUCCEEDED_SQL} GROUP BY queue"
    " UNION ALL SELECT queue, state, count(*) FROM tenure_jobs"
    f" WHERE {operations.UNSUCCESSFUL_SQL} GROUP BY state, queue"
)


def _read_job(conn: sqlite3.Connection, now: float, job_id: str) -> JobRecord | None:
    row = conn.execute("SELECT * FROM tenure_jobs WHERE id = ?", (job_id,)).fetchone()
    if row is None:
        return None
    attempts = conn.execute(
        "SELECT * FROM tenure_attempts WHERE job_id = ? ORDER BY number", (job_id,)
    )
    effects = conn.execute("SELECT * FROM tenure_once WHERE job_id = ? ORDER BY at", (job_id,))
    return job_record(row, now, [*map(attempt_record, attempts)], [*map(effect_record, effects)])


__all__ = ["SQLiteJobTransaction", "SQLiteStore", "sqlite_path"]
