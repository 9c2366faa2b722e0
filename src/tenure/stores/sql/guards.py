"""What both SQL stores decide alike about guards: who holds a unique key, and the words of a
deferral. How each engine *takes* a guard stays in its own guards.py, for a reason: SQLite's one
writer decides with plain statements in order; PostgreSQL's many writers need ON CONFLICT, row
locks, tried advisory locks and data-modifying CTEs (which SQLite lacks)."""

from __future__ import annotations

from typing import Any

from tenure.states import FINAL_STATES

# guarded jobs one reserve call may look at beyond `limit`: they may be deferred instead
RESERVE_LOOKAHEAD = 32


def unique_holder(row: Any, now: float) -> str | None:
    """The job holding a unique key (row: job_id, until, expires_at, and the holder's state),
    or None when the key is free."""
    if row["state"] is None:  # the holder was forgotten
        return None
    if row["expires_at"] is not None and row["expires_at"] <= now:
        return None
    if row["until"] == "processing":
        return str(row["job_id"]) if row["state"] == "queued" else None
    return None if row["state"] in FINAL_STATES else str(row["job_id"])


def overlap_deferral(row: Any, holder: str, now: float) -> tuple[float, str]:
    """(run_at, reason): the running job `holder` holds the row's overlap key."""
    return (
        now + (row["overlap_delay"] or 0.0),
        f"overlap key {row['overlap_key']!r} is held by running job {holder}",
    )


def rate_deferral(row: Any, free_at: float) -> tuple[float, str]:
    """(run_at, reason): the row's rate window is full until `free_at`."""
    return (
        free_at,
        f"rate limit {row['rate_limit']} per {row['rate_window']:g} s reached for "
        f"{row['rate_key']!r}",
    )


def deferral_note(reason: str, run_at: float, now: float) -> str:
    """The error of a `deferred` attempt: why, and how long the job waits."""
    return f"{reason}; deferred {max(run_at - now, 0):.1f} s"
