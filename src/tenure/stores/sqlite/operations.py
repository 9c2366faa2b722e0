"""Reading and operating on SQLite: what the CLI, the dashboard and the doctor ask, and the
worker registry. No job changes state here except through retry and forget."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from tenure.states import FINAL_STATES
from tenure.stores.base import JobRecord, QueueCounts, WorkerRecord, ready_age
from tenure.stores.sql import control, operations, workers
from tenure.stores.sql.rows import attempt_record, effect_record, job_record
from tenure.stores.sqlite.connection import SQLiteConnections
from tenure.stores.sqlite.dialect import SQLITE


class SQLiteOperations(SQLiteConnections):
    # -- reading and operating ---------------------------------------------------------
    def list_jobs(
        self,
        *,
        ids: Sequence[str] | None = None,
        state: str | None = None,
        queue: str | None = None,
        limit: int = 100,
    ) -> list[JobRecord]:
        if ids is None:
            conn = self._conn()
            now = self._now(conn)
            return operations.list_jobs(
                SQLITE, conn, state=state, queue=queue, limit=limit, now=now
            )
        with self._read() as conn:  # one snapshot: the attempts and effects agree with the jobs
            now = self._now(conn)
            found = (_read_job(conn, now, job_id) for job_id in dict.fromkeys(ids))
            return [record for record in found if record is not None]

    def queue_counts(self) -> dict[str, QueueCounts]:
        out: dict[str, QueueCounts] = {}
        with self._read() as conn:  # one snapshot for every read
            now = self._now(conn)
            # A scan of the covering index tenure_jobs_state (state, queue), never of the
            # table: 75 ms at 1,000,000 jobs (through the wider index every job was in before
            # migration 0008) where the table scan took 340 ms. Counters kept
            # by triggers would make it O(1) but cost every state change a write; SQLite is not
            # where a store holds millions of jobs.
            for row in conn.execute(
                "SELECT queue, state, count(*) AS n FROM tenure_jobs GROUP BY queue, state"
            ):
                counts = out.setdefault(row["queue"], QueueCounts())
                counts[row["state"]] = row["n"]
            for queue in control.paused_queues(SQLITE, conn):
                out.setdefault(queue, QueueCounts()).paused = True
            # Scheduled = queued with run_at in the future: a range of the same index per queue;
            # the oldest ready job is that index's first entry for the queue.
            for queue, counts in out.items():
                if counts["queued"]:
                    scheduled = conn.execute(
                        "SELECT count(*) FROM tenure_jobs"
                        " WHERE queue = ? AND state = 'queued' AND run_at > ?",
                        (queue, now),
                    ).fetchone()[0]
                    counts["queued"] -= scheduled
                    counts["scheduled"] = scheduled
                    oldest = conn.execute(
                        "SELECT run_at FROM tenure_jobs WHERE queue = ? AND state = 'queued'"
                        " ORDER BY run_at LIMIT 1",
                        (queue,),
                    ).fetchone()
                    counts.oldest_ready_age = ready_age(now, oldest[0] if oldest else None)
        return out

    def retry_job(self, job_id: str) -> bool:
        with self._write() as (conn, now):
            return operations.retry_job(SQLITE, conn, job_id, now)

    def forget_job(self, job_id: str) -> bool:
        with self._write() as (conn, _now):
            deleted = conn.execute(
                "DELETE FROM tenure_jobs WHERE id = ? AND state IN (?, ?, ?)",
                (job_id, *sorted(FINAL_STATES)),
            ).rowcount
            if deleted:  # the SQLite schema has no foreign keys to cascade (PostgreSQL does)
                conn.execute("DELETE FROM tenure_attempts WHERE job_id = ?", (job_id,))
                conn.execute("DELETE FROM tenure_once WHERE job_id = ?", (job_id,))
            return bool(deleted)

    # -- workers -----------------------------------------------------------------------
    def list_workers(self) -> list[WorkerRecord]:
        return workers.list_all(SQLITE, self._conn())

    def set_control(
        self, *, paused: Mapping[str, bool] | None = None, restart: bool = False
    ) -> float:
        with self._write() as (conn, now):
            return control.set_control(SQLITE, conn, paused or {}, restart, now)


def _read_job(conn: sqlite3.Connection, now: float, job_id: str) -> JobRecord | None:
    row = conn.execute("SELECT * FROM tenure_jobs WHERE id = ?", (job_id,)).fetchone()
    if row is None:
        return None
    attempts = conn.execute(
        "SELECT * FROM tenure_attempts WHERE job_id = ? ORDER BY number", (job_id,)
    )
    effects = conn.execute("SELECT * FROM tenure_once WHERE job_id = ? ORDER BY at", (job_id,))
    return job_record(row, now, [*map(attempt_record, attempts)], [*map(effect_record, effects)])
