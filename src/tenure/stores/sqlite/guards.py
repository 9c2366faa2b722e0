"""Uniqueness, overlap and rate limits on SQLite, checked inside the caller's transaction:
atomically with the enqueue or the reservation they guard. One writer holds the file, so plain
statements in order decide; what both SQL stores decide alike is in stores/sql/guards.py."""

from __future__ import annotations

import sqlite3

from tenure.core.guards import Guards
from tenure.stores.sql.guards import unique_holder


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
        "SELECT id FROM tenure_jobs WHERE overlap_key = ? AND state = 'running'"
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
