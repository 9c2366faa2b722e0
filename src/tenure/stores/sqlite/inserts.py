"""The one insert every SQLite enqueue path shares (a dispatch, a batch, a chain's next link, a
callback): all the jobs of a call in one executemany, inside the caller's transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from tenure.core.records import NewJob


def insert_jobs(
    conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float, *, skip_existing: bool = False
) -> int:
    verb = "INSERT OR IGNORE" if skip_existing else "INSERT"
    before = conn.total_changes
    conn.executemany(
        f"{verb} INTO tenure_jobs (id, name, queue, payload, state, policy, created_at, run_at,"
        " batch_id, overlap_key, overlap_delay, rate_key, rate_limit, rate_window, keep_succeeded,"
        " keep_failed, priority, chain, concurrency_key, concurrency_limit, debounce_key,"
        " guard_state)"
        " VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                guard_state(j),
            )
            for j in jobs
        ],
    )
    return conn.total_changes - before


def guard_state(job: NewJob) -> str | None:
    """The column the guard indexes read (migration 0018): the job's state for a job with an
    overlap, concurrency or debounce key, NULL for the others (their indexes never see them)."""
    g = job.guards
    guarded = g.overlap_key is not None or g.concurrency_key is not None
    return "queued" if guarded or g.debounce_key is not None else None
