"""Uniqueness, overlap and rate limits on SQLite, checked inside the caller's transaction:
atomically with the enqueue or the reservation they guard. One writer holds the file, so plain
statements in order decide; what both SQL stores decide alike is in stores/sql/guards.py."""

from __future__ import annotations

import sqlite3
from typing import Any

from tenure.core.guards import Guards
from tenure.core.records import WorkerRef
from tenure.stores.sql import guards as sql_guards
from tenure.stores.sql.guards import unique_holder

# Past every attempt row the job has: a stray row (a restore, a hand edit) must not make the
# next attempt's number collide, which would fail the whole reservation for the queue.
NEXT_ATTEMPT = (
    "max(attempt, (SELECT coalesce(max(number), 0) FROM tenure_attempts"
    " WHERE job_id = tenure_jobs.id)) + 1"
)


def held_unique(conn: sqlite3.Connection, guards: Guards, now: float) -> str | None:
    """The id of the job holding this unique key, or None if the key is free."""
    row = conn.execute(
        "SELECT u.job_id, u.until, u.expires_at, j.state FROM tenure_unique u"
        " LEFT JOIN tenure_jobs j ON j.id = u.job_id WHERE u.key = ?",
        (guards.unique_key,),
    ).fetchone()
    return None if row is None else unique_holder(row, now)


def take_unique(conn: sqlite3.Connection, guards: Guards, job_id: str, now: float) -> None:
    expires_at = None if guards.unique_for is None else now + guards.unique_for
    conn.execute(
        "INSERT OR REPLACE INTO tenure_unique (key, job_id, until, expires_at) VALUES (?, ?, ?, ?)",
        (guards.unique_key, job_id, guards.unique_until, expires_at),
    )


def overlap_holder(
    conn: sqlite3.Connection, overlap_key: str, job_id: str, now: float
) -> str | None:
    """A running job with this key and a live lease: the lock follows the holder's lease, so
    a crashed holder blocks the key for one lease at most."""
    row = conn.execute(
        "SELECT id FROM tenure_jobs WHERE overlap_key = ? AND guard_state = 'running'"
        " AND lease_expires_at >= ? AND id != ? LIMIT 1",
        (overlap_key, now, job_id),
    ).fetchone()
    return None if row is None else str(row["id"])


def rate_free_at(
    conn: sqlite3.Connection, rate_key: str, limit: int, window: float, now: float
) -> float | None:
    """None if a start is allowed now (and records it), else when the window frees."""
    conn.execute(
        "DELETE FROM tenure_rate_starts WHERE key = ? AND at <= ?", (rate_key, now - window)
    )
    count, oldest = conn.execute(
        "SELECT count(*), min(at) FROM tenure_rate_starts WHERE key = ?", (rate_key,)
    ).fetchone()
    if count >= limit:
        return float(oldest) + window
    conn.execute(
        "INSERT INTO tenure_rate_starts (key, at, expires_at) VALUES (?, ?, ?)",
        (rate_key, now, now + window),
    )
    return None


def deferral(conn: sqlite3.Connection, row: Any, now: float) -> tuple[float, str] | None:
    """(run_at, reason) if the job's overlap or rate guard says not now."""
    if row["overlap_key"] is not None:
        holder = overlap_holder(conn, row["overlap_key"], row["id"], now)
        if holder is not None:
            return sql_guards.overlap_deferral(row, holder, now)
    if row["rate_key"] is not None:
        free_at = rate_free_at(conn, row["rate_key"], row["rate_limit"], row["rate_window"], now)
        if free_at is not None:
            return sql_guards.rate_deferral(row, free_at)
    return None


def defer(
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
