"""The embedded default: one SQLite file in WAL mode, safe for several worker processes on one
host. Writes take the database lock up front (BEGIN IMMEDIATE) so two workers can never reserve
the same job, and every timestamp comes from SQLite's own clock inside the transaction.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tenure.retry import Counters, Policy, decide
from tenure.states import FINAL_STATES, JOB_STATES, visible_state
from tenure.stores import sqlite_batches as batches
from tenure.stores.base import (
    AttemptRecord,
    BatchRecord,
    EndResult,
    JobRecord,
    NewBatch,
    NewJob,
    Rescued,
    Reservation,
    WorkerRecord,
    WorkerRef,
    describe_crash,
)

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS tenure_jobs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    queue TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,              -- queued | running | succeeded | failed | cancelled
    policy TEXT NOT NULL,             -- retry.Policy as JSON: the rules the job was sent with
    created_at REAL NOT NULL,
    run_at REAL NOT NULL,
    finished_at REAL,
    attempt INTEGER NOT NULL DEFAULT 0,   -- attempts opened; the current one's number is the token
    tries_used INTEGER NOT NULL DEFAULT 0,
    exceptions INTEGER NOT NULL DEFAULT 0,
    lease_expires_at REAL,
    worker_id TEXT,
    last_error TEXT,
    batch_id TEXT,
    progress REAL NOT NULL DEFAULT 0      -- a batch member's own progress, 0..1
);
CREATE INDEX IF NOT EXISTS tenure_jobs_ready ON tenure_jobs (queue, state, run_at);
CREATE INDEX IF NOT EXISTS tenure_jobs_batch ON tenure_jobs (batch_id, state);
CREATE TABLE IF NOT EXISTS tenure_batches (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    state TEXT NOT NULL,              -- running | succeeded | failed | cancelled
    declared_total INTEGER,
    jobs INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    cancelled INTEGER NOT NULL DEFAULT 0,
    allow_failures INTEGER NOT NULL DEFAULT 0,
    catch_sent INTEGER NOT NULL DEFAULT 0,
    finished INTEGER NOT NULL DEFAULT 0,
    callbacks TEXT NOT NULL,          -- {"then": NewJob as JSON, ...}: enqueued once, later
    then_job_id TEXT,
    catch_job_id TEXT,
    finally_job_id TEXT,
    created_at REAL NOT NULL,
    finished_at REAL
);
CREATE INDEX IF NOT EXISTS tenure_jobs_lease ON tenure_jobs (state, lease_expires_at);
CREATE TABLE IF NOT EXISTS tenure_attempts (
    job_id TEXT NOT NULL,
    number INTEGER NOT NULL,
    worker_id TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL,
    outcome TEXT,
    error TEXT,
    traceback TEXT,
    last_heartbeat_at REAL,
    PRIMARY KEY (job_id, number)
);
CREATE TABLE IF NOT EXISTS tenure_workers (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    queues TEXT NOT NULL,
    concurrency INTEGER NOT NULL,
    started_at REAL NOT NULL,
    last_seen_at REAL NOT NULL,
    stopped_at REAL
);
CREATE TABLE IF NOT EXISTS tenure_control (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

NOW_SQL = "SELECT (julianday('now') - 2440587.5) * 86400.0"


class SQLiteStore:
    def __init__(self, url: str) -> None:
        self.url = url
        self.path = sqlite_path(url)
        self._local = threading.local()
        self._migrated = False

    # -- connections -------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
            self._local.pid = os.getpid()
            if not self._migrated:
                self.migrate()
        return conn

    @contextmanager
    def _write(self) -> Iterator[tuple[sqlite3.Connection, float]]:
        """A write transaction holding the lock from its start, with the store's now."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            now = conn.execute(NOW_SQL).fetchone()[0]
            yield conn, now
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
        return float(self._conn().execute(NOW_SQL).fetchone()[0])

    def migrate(self) -> None:
        self._migrated = True
        # One script in one locked transaction: CREATE ... IF NOT EXISTS is idempotent and the
        # lock makes two processes migrating at once take turns.
        self._conn().executescript(
            "BEGIN IMMEDIATE;"
            + SCHEMA
            + "INSERT OR IGNORE INTO tenure_control (key, value) VALUES ('schema_version', "
            + f"'{SCHEMA_VERSION}'); COMMIT;"
        )

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- jobs through their life -------------------------------------------------------
    def enqueue_many(self, jobs: Sequence[NewJob]) -> None:
        with self._write() as (conn, now):
            # an id already present is skipped: a dispatch retried after a lost reply
            # must not create the job twice
            batches.insert_jobs(conn, jobs, now, skip_existing=True)

    def reserve(
        self, *, queues: Sequence[str], worker: WorkerRef, lease: float, limit: int = 1
    ) -> list[Reservation]:
        if limit < 1:
            return []
        out: list[Reservation] = []
        with self._write() as (conn, now):
            for queue in queues:  # priority order: drain earlier queues first
                rows = conn.execute(
                    "SELECT id FROM tenure_jobs WHERE queue = ? AND state = 'queued'"
                    " AND run_at <= ? ORDER BY run_at, rowid LIMIT ?",
                    (queue, now, limit - len(out)),
                ).fetchall()
                for row in rows:
                    out.append(self._open_attempt(conn, row["id"], worker, now, lease))
                if len(out) >= limit:
                    break
        return out

    def _open_attempt(
        self, conn: sqlite3.Connection, job_id: str, worker: WorkerRef, now: float, lease: float
    ) -> Reservation:
        row = conn.execute(
            "UPDATE tenure_jobs SET state = 'running', attempt = attempt + 1,"
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
    ) -> list[str]:
        lost: list[str] = []
        with self._write() as (conn, now):
            conn.execute(
                "UPDATE tenure_workers SET last_seen_at = ? WHERE id = ?", (now, worker.id)
            )
            for job_id, token in leases:
                renewed = conn.execute(
                    "UPDATE tenure_jobs SET lease_expires_at = ? WHERE id = ? AND attempt = ?"
                    " AND state = 'running' AND lease_expires_at >= ?",
                    (now + lease, job_id, token, now),
                ).rowcount
                if renewed:
                    conn.execute(
                        "UPDATE tenure_attempts SET last_heartbeat_at = ? WHERE job_id = ?"
                        " AND number = ?",
                        (now, job_id, token),
                    )
                else:
                    lost.append(job_id)
        return lost

    def complete(self, *, job_id: str, token: int) -> EndResult:
        with self._write() as (conn, now):
            if not self._holds(conn, job_id, token, now):
                return self._refuse(conn, job_id, token, now, "succeeded")
            batch_id = conn.execute(
                "UPDATE tenure_jobs SET state = 'succeeded', finished_at = ?, lease_expires_at"
                " = NULL, tries_used = tries_used + 1 WHERE id = ? RETURNING batch_id",
                (now, job_id),
            ).fetchone()["batch_id"]
            self._close_attempt(conn, job_id, token, now, "succeeded", None, None)
            if batch_id is not None:
                batches.member_ended(conn, batch_id, "succeeded", now)
        return EndResult(accepted=True, state="succeeded")

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
        with self._write() as (conn, now):
            if not self._holds(conn, job_id, token, now):
                return self._refuse(conn, job_id, token, now, outcome)
            self._close_attempt(conn, job_id, token, now, outcome, error, traceback)
            return self._apply_decision(conn, job_id, outcome, error, now, permanent)

    def _holds(self, conn: sqlite3.Connection, job_id: str, token: int, now: float) -> bool:
        # Fencing: a worker paused past its lease must not end an attempt someone else now owns.
        # A lease that has expired but not yet been rescued is still honoured: nobody else has
        # the job, and accepting the result avoids running it again.
        row = conn.execute(
            "SELECT 1 FROM tenure_jobs WHERE id = ? AND attempt = ? AND state = 'running'",
            (job_id, token),
        ).fetchone()
        return row is not None

    def _refuse(
        self, conn: sqlite3.Connection, job_id: str, token: int, now: float, outcome: str
    ) -> EndResult:
        """Record a late result that was refused, on the attempt that produced it."""
        note = (
            f"its worker reported '{outcome}' after the lease had been taken over; "
            "the late result was refused (fencing)"
        )
        conn.execute(
            "UPDATE tenure_attempts SET outcome = 'lost_lease',"
            " error = COALESCE(error || '; ', '') || ? WHERE job_id = ? AND number = ?"
            " AND (outcome IS NULL OR outcome = 'crashed')",
            (note, job_id, token),
        )
        row = conn.execute(
            "SELECT state, run_at FROM tenure_jobs WHERE id = ?", (job_id,)
        ).fetchone()
        state = visible_state(row["state"], row["run_at"], now) if row else "missing"
        return EndResult(accepted=False, state=state, reason="stale token: lease taken over")

    def _close_attempt(
        self,
        conn: sqlite3.Connection,
        job_id: str,
        number: int,
        now: float,
        outcome: str,
        error: str | None,
        traceback: str | None,
    ) -> None:
        conn.execute(
            "UPDATE tenure_attempts SET ended_at = ?, outcome = ?, error = ?, traceback = ?"
            " WHERE job_id = ? AND number = ?",
            (now, outcome, error, traceback, job_id, number),
        )

    def _apply_decision(
        self,
        conn: sqlite3.Connection,
        job_id: str,
        outcome: str,
        error: str,
        now: float,
        permanent: bool,
    ) -> EndResult:
        row = conn.execute(
            "SELECT policy, tries_used, exceptions, batch_id FROM tenure_jobs WHERE id = ?",
            (job_id,),
        ).fetchone()
        counters = Counters(row["tries_used"], row["exceptions"])
        decision = decide(
            Policy.from_json(row["policy"]), counters, outcome, now, permanent=permanent
        )
        c = decision.counters
        batch_id = row["batch_id"]
        if decision.retry and batch_id is not None and batches.stops_new_work(conn, batch_id):
            # Its batch was cancelled or has failed: the retry would be wasted work.
            conn.execute(
                "UPDATE tenure_jobs SET state = 'cancelled', finished_at = ?, lease_expires_at"
                " = NULL, tries_used = ?, exceptions = ?, last_error = ? WHERE id = ?",
                (now, c.tries_used, c.exceptions, error, job_id),
            )
            batches.member_ended(conn, batch_id, "cancelled", now)
            return EndResult(True, "cancelled", "its batch no longer runs new work")
        if decision.retry:
            conn.execute(
                "UPDATE tenure_jobs SET state = 'queued', run_at = ?, lease_expires_at = NULL,"
                " worker_id = NULL, tries_used = ?, exceptions = ?, last_error = ? WHERE id = ?",
                (now + decision.delay, c.tries_used, c.exceptions, error, job_id),
            )
            state = "queued" if decision.delay <= 0 else "scheduled"
            return EndResult(True, state, decision.reason, decision.delay)
        reason = f"{error}; failed because {decision.reason}"
        conn.execute(
            "UPDATE tenure_jobs SET state = 'failed', finished_at = ?, lease_expires_at = NULL,"
            " tries_used = ?, exceptions = ?, last_error = ? WHERE id = ?",
            (now, c.tries_used, c.exceptions, reason, job_id),
        )
        if batch_id is not None:
            batches.member_ended(conn, batch_id, "failed", now)
        return EndResult(True, "failed", decision.reason)

    def rescue_expired(self) -> list[Rescued]:
        rescued: list[Rescued] = []
        with self._write() as (conn, now):
            rows = conn.execute(
                "SELECT id, attempt, lease_expires_at FROM tenure_jobs WHERE state = 'running'"
                " AND lease_expires_at < ?",
                (now,),
            ).fetchall()
            for row in rows:
                attempt = _attempt(
                    conn.execute(
                        "SELECT * FROM tenure_attempts WHERE job_id = ? AND number = ?",
                        (row["id"], row["attempt"]),
                    ).fetchone()
                )
                error = describe_crash(attempt, row["lease_expires_at"])
                self._close_attempt(conn, row["id"], row["attempt"], now, "crashed", error, None)
                result = self._apply_decision(conn, row["id"], "crashed", error, now, False)
                rescued.append(Rescued(row["id"], row["attempt"], result))
        return rescued

    def wait_for_work(self, *, queues: Sequence[str], timeout: float) -> None:
        # PRAGMA data_version changes when another connection commits: a cheap local check
        # that lets an idle worker start a new job within ~20 ms without hammering the file.
        conn = self._conn()
        start = conn.execute("PRAGMA data_version").fetchone()[0]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(min(0.02, max(0.0, deadline - time.monotonic())))
            if conn.execute("PRAGMA data_version").fetchone()[0] != start:
                return

    # -- batches -----------------------------------------------------------------------
    def create_batch(self, *, batch: NewBatch, jobs: Sequence[NewJob]) -> None:
        with self._write() as (conn, now):
            batches.create(conn, batch, jobs, now)

    def add_to_batch(self, *, batch_id: str, jobs: Sequence[NewJob]) -> int:
        with self._write() as (conn, now):
            return batches.add(conn, batch_id, jobs, now)

    def cancel_batch(self, batch_id: str) -> bool:
        with self._write() as (conn, now):
            return batches.cancel(conn, batch_id, now)

    def get_batch(self, batch_id: str) -> BatchRecord | None:
        with self._read() as conn:
            return batches.read(conn, batch_id)

    def list_batches(self, *, limit: int = 50) -> list[BatchRecord]:
        with self._read() as conn:
            return batches.list_recent(conn, limit)

    def report_progress(self, *, job_id: str, token: int, fraction: float) -> None:
        with self._write() as (conn, _now):
            batches.report_progress(conn, job_id, token, fraction)

    # -- reading and operating ---------------------------------------------------------
    def get_job(self, job_id: str) -> JobRecord | None:
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            now = conn.execute(NOW_SQL).fetchone()[0]
            row = conn.execute("SELECT * FROM tenure_jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                return None
            attempts = [
                _attempt(a)
                for a in conn.execute(
                    "SELECT * FROM tenure_attempts WHERE job_id = ? ORDER BY number", (job_id,)
                )
            ]
        finally:
            conn.execute("COMMIT")
        return _job(row, now, attempts)

    def list_jobs(
        self, *, state: str | None = None, queue: str | None = None, limit: int = 100
    ) -> list[JobRecord]:
        conn = self._conn()
        now = self.now()
        where: list[str] = ["1 = 1"]
        params: list[object] = []
        if state == "scheduled":
            where.append("state = 'queued' AND run_at > ?")
            params.append(now)
        elif state == "queued":
            where.append("state = 'queued' AND run_at <= ?")
            params.append(now)
        elif state is not None:
            where.append("state = ?")
            params.append(state)
        if queue is not None:
            where.append("queue = ?")
            params.append(queue)
        rows = conn.execute(
            f"SELECT * FROM tenure_jobs WHERE {' AND '.join(where)}"
            " ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (*params, limit),
        ).fetchall()
        return [_job(r, now, []) for r in rows]

    def counts(self) -> dict[str, int]:
        conn = self._conn()
        now = self.now()
        out = dict.fromkeys(JOB_STATES, 0)
        for row in conn.execute(
            "SELECT CASE WHEN state = 'queued' AND run_at > ? THEN 'scheduled' ELSE state END"
            " AS s, count(*) AS n FROM tenure_jobs GROUP BY s",
            (now,),
        ):
            out[row["s"]] = row["n"]
        return out

    def retry_job(self, job_id: str) -> bool:
        with self._write() as (conn, now):
            return bool(
                conn.execute(
                    "UPDATE tenure_jobs SET state = 'queued', run_at = ?, finished_at = NULL,"
                    " tries_used = 0, exceptions = 0 WHERE id = ? AND state = 'failed'",
                    (now, job_id),
                ).rowcount
            )

    def forget_job(self, job_id: str) -> bool:
        with self._write() as (conn, _now):
            deleted = conn.execute(
                "DELETE FROM tenure_jobs WHERE id = ? AND state IN (?, ?, ?)",
                (job_id, *sorted(FINAL_STATES)),
            ).rowcount
            if deleted:
                conn.execute("DELETE FROM tenure_attempts WHERE job_id = ?", (job_id,))
            return bool(deleted)

    # -- workers -----------------------------------------------------------------------
    def register_worker(self, record: WorkerRecord) -> None:
        with self._write() as (conn, now):
            conn.execute(
                "INSERT OR REPLACE INTO tenure_workers (id, host, pid, queues, concurrency,"
                " started_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    record.host,
                    record.pid,
                    json.dumps(list(record.queues)),
                    record.concurrency,
                    now,
                    now,
                ),
            )

    def worker_stopped(self, worker_id: str) -> None:
        with self._write() as (conn, now):
            conn.execute("UPDATE tenure_workers SET stopped_at = ? WHERE id = ?", (now, worker_id))

    def list_workers(self) -> list[WorkerRecord]:
        rows = (
            self._conn().execute("SELECT * FROM tenure_workers ORDER BY started_at DESC").fetchall()
        )
        return [
            WorkerRecord(
                id=r["id"],
                host=r["host"],
                pid=r["pid"],
                queues=tuple(json.loads(r["queues"])),
                concurrency=r["concurrency"],
                started_at=r["started_at"],
                last_seen_at=r["last_seen_at"],
                stopped_at=r["stopped_at"],
            )
            for r in rows
        ]

    def request_restart(self) -> float:
        with self._write() as (conn, now):
            conn.execute(
                "INSERT OR REPLACE INTO tenure_control (key, value) VALUES ('restart_at', ?)",
                (repr(now),),
            )
        return now

    def restart_requested_at(self) -> float | None:
        row = (
            self._conn()
            .execute("SELECT value FROM tenure_control WHERE key = 'restart_at'")
            .fetchone()
        )
        return float(row["value"]) if row else None


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
