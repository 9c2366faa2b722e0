"""Guards on the SQL stores, what SQLite and PostgreSQL decide alike, written once: who holds
a unique key, and the words of a deferral (why a job waits, and for how long).

How each engine *takes* a guard differs for a reason, so that stays in stores/sqlite/guards.py
and stores/postgres/guards.py. SQLite holds its one write lock for the whole transaction, so
plain statements in order decide safely. PostgreSQL has many writers at once: a unique key is
taken with INSERT ... ON CONFLICT and a row lock, an overlap or rate key behind a *tried*
advisory lock (a busy key is left for the next pass, never waited on), and a rate start is
recorded in the statement that counts the window (a data-modifying CTE, which SQLite lacks).
"""

from __future__ import annotations

from typing import Any

from tenure.states import FINAL_STATES


def unique_holder(row: Any, now: float) -> str | None:
    """The job still holding a unique key, from the key's tenure_unique row joined to its
    holder's state (job_id, until, expires_at, state); None when the key is free: its holder
    was forgotten, `unique_for` has passed, or the holder is past what `unique_until` covers
    (started, for "processing"; finished, for "completed")."""
    if row["state"] is None:  # the holder was forgotten
        return None
    if row["expires_at"] is not None and row["expires_at"] <= now:
        return None
    if row["until"] == "processing":
        return str(row["job_id"]) if row["state"] == "queued" else None
    return None if row["state"] in FINAL_STATES else str(row["job_id"])


def overlap_deferral(row: Any, holder: str, now: float) -> tuple[float, str]:
    """(run_at, reason) for a ready job (its overlap_key, overlap_delay) whose overlap key
    the running job `holder` holds."""
    return (
        now + (row["overlap_delay"] or 0.0),
        f"overlap key {row['overlap_key']!r} is held by running job {holder}",
    )


def rate_deferral(row: Any, free_at: float) -> tuple[float, str]:
    """(run_at, reason) for a ready job (its rate_key, rate_limit, rate_window) whose rate
    window is full until `free_at`."""
    return (
        free_at,
        f"rate limit {row['rate_limit']} per {row['rate_window']:g} s reached for "
        f"{row['rate_key']!r}",
    )


def deferral_note(reason: str, run_at: float, now: float) -> str:
    """The error of a `deferred` attempt: why, and how long the job waits."""
    return f"{reason}; deferred {max(run_at - now, 0):.1f} s"
