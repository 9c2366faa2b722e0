"""A busy worker's success and its next claim on SQLite, on plain tuples: the statements of
the hot path (jobs.py runs them in its write transaction) and the few lines that read their rows.

The statements are the same five whatever the job: the success fenced by its token, its attempt
closed, the head of the ready index, its claim, its attempt row. What differs is the Python
around them: a cursor without a row factory (a sqlite3.Row and its look-ups by name cost more
than the statement's own step for the narrow rows here), one cursor for the transaction, and
no per-claim sets and loops for the guards a ready job has none of. A success with a batch, a
chain or a concurrency key, and a ready job with a guard, go on to jobs.py's general path with
what these statements returned (nothing is run twice).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from tenure.core.records import Reservation, WorkerRef
from tenure.core.retry import parse_policy
from tenure.stores.sql import control

# Past every attempt row the job has: a stray row (a restore, a hand edit) must not make the
# next attempt's number collide, which would fail the whole reservation for the queue.
NEXT_ATTEMPT = (
    "max(attempt, (SELECT coalesce(max(number), 0) FROM tenure_attempts"
    " WHERE job_id = tenure_jobs.id)) + 1"
)
# the shared clause in SQLite's words (what SQLiteDialect.q does): no schema, `?` parameters
NOT_PAUSED = control.not_paused("?").replace("{s}.", "")

# A success, fenced by its token in the same statement. A result of None leaves the column
# alone (it is NULL until a success writes one): the worker's hot path pays nothing for it.
COMPLETE, COMPLETE_WITH_RESULT = (
    "UPDATE tenure_jobs SET state = 'succeeded', finished_at = ?, lease_expires_at = NULL,"
    f" tries_used = tries_used + 1{result} WHERE id = ? AND attempt = ? AND state = 'running'"
    " RETURNING batch_id, chain, queue, concurrency_key, concurrency_limit"
    for result in ("", ", result = ?")
)
COMPLETED_COLUMNS = ("batch_id", "chain", "queue", "concurrency_key", "concurrency_limit")
# endings.close_attempt for a success, as SQLite runs it
CLOSE_SUCCEEDED = (
    "UPDATE tenure_attempts SET ended_at = ?, outcome = 'succeeded', error = NULL,"
    " traceback = NULL WHERE job_id = ? AND number = ?"
)
# The head of a queue's ready jobs with what its guards need. INDEXED BY: left to itself the
# planner takes tenure_jobs_ready for the run_at range and sorts every ready job of the queue
# by priority (a temp B-tree: 20 ms per call at 50,000 queued); the head of (queue, state,
# priority, run_at, rowid) is the answer.
READY = (
    "SELECT id, overlap_key, overlap_delay, rate_key, rate_limit, rate_window,"
    " concurrency_key, concurrency_limit"
    " FROM tenure_jobs INDEXED BY tenure_jobs_ready_by_priority"
    " WHERE queue = ? AND state = 'queued' AND run_at <= ?"
    + NOT_PAUSED
    + " ORDER BY priority, run_at, rowid LIMIT ?"
)
# a ready job's claim (its attempt row follows); OPEN_UNDER: only while its concurrency key
# has a free slot (counted in the key's index: unary + keeps the planner off the lease index,
# every running job of every key; sql.guards' _LIVE_LEASE)
OPEN, OPEN_UNDER = (
    f"UPDATE tenure_jobs SET state = 'running', attempt = {NEXT_ATTEMPT},"
    f" lease_expires_at = ?, worker_id = ? WHERE id = ?{under}"
    " RETURNING id, name, queue, payload, policy, attempt, lease_expires_at, batch_id"
    for under in (
        "",
        " AND (SELECT count(*) FROM tenure_jobs WHERE concurrency_key = ?"
        " AND state = 'running' AND +lease_expires_at >= ?) < ?",
    )
)
ATTEMPT_ROW = (
    "INSERT INTO tenure_attempts (job_id, number, worker_id, host, pid, started_at,"
    " last_heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def cursor(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """One cursor for a transaction's statements, its rows plain tuples."""
    cur = conn.cursor()
    cur.row_factory = None
    return cur


def complete(
    cur: sqlite3.Cursor, job_id: str, token: int, now: float, result: str | None
) -> tuple[Any, ...] | None:
    """The success of `job_id`/`token` and its attempt closed; its COMPLETED_COLUMNS, or None
    when the token is stale (nothing written: the caller refuses it)."""
    row: tuple[Any, ...] | None = cur.execute(
        COMPLETE if result is None else COMPLETE_WITH_RESULT,
        (now, job_id, token) if result is None else (now, result, job_id, token),
    ).fetchone()
    if row is not None:
        cur.execute(CLOSE_SUCCEEDED, (now, job_id, token))
    return row


def head(cur: sqlite3.Cursor, queue: str, now: float) -> tuple[Any, ...] | None:
    """The ready job `queue` would hand out now (READY's columns), or None."""
    row: tuple[Any, ...] | None = cur.execute(READY, (queue, now, queue, 1)).fetchone()
    return row


def unguarded(row: tuple[Any, ...]) -> bool:
    """Whether READY's `row` has no guard: no overlap, rate or concurrency key (the other
    columns are their settings, some with defaults)."""
    return row[1] is None and row[3] is None and row[6] is None


def open_attempt(
    cur: sqlite3.Cursor, job_id: str, worker: WorkerRef, now: float, lease: float
) -> Reservation:
    """Claim the ready job `job_id` (no guard of its own) and open its attempt. Two statements
    where PostgreSQL's hot path claims in one (claims.CLAIM, FOR UPDATE SKIP LOCKED), which
    SQLite's single writer has no need of."""
    got = cur.execute(OPEN, (now + lease, worker.id, job_id)).fetchone()
    number = got[5]
    cur.execute(ATTEMPT_ROW, (job_id, number, worker.id, worker.host, worker.pid, now, now))
    return Reservation(
        got[0], got[1], got[2], got[3], parse_policy(got[4]), number, number, got[6], got[7]
    )
