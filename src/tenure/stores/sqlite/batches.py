"""Batches on SQLite: the batch rules of tenure.batch applied inside the caller's transaction.

Each function takes the open connection and the store's `now`, so that a member's end and its
batch's bookkeeping (counts, callbacks) commit together or not at all.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tenure import batch as rules
from tenure.stores.base import (
    BatchRecord,
    NewBatch,
    NewJob,
    batch_record,
    callback_from_json,
    callback_to_json,
)

log = logging.getLogger("tenure.store")

CALLBACK_KINDS = ("then", "catch", "finally")


def insert_jobs(
    conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float, *, skip_existing: bool = False
) -> int:
    verb = "INSERT OR IGNORE" if skip_existing else "INSERT"
    before = conn.total_changes
    conn.executemany(
        f"{verb} INTO tenure_jobs (id, name, queue, payload, state, policy, created_at, run_at,"
        " batch_id, overlap_key, overlap_delay, rate_key, rate_limit, rate_window)"
        " VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                j.id,
                j.name,
                j.queue,
                j.payload,
                j.policy.to_json(),
                now,
                now + max(j.delay, 0.0),
                j.batch_id,
                j.guards.overlap_key,
                j.guards.overlap_delay,
                j.guards.rate_key,
                j.guards.rate_limit,
                j.guards.rate_window,
            )
            for j in jobs
        ],
    )
    return conn.total_changes - before


def create(conn: sqlite3.Connection, batch: NewBatch, jobs: Sequence[NewJob], now: float) -> None:
    callbacks = {
        kind: callback_to_json(job)
        for kind, job in zip(CALLBACK_KINDS, (batch.then, batch.catch, batch.finally_), strict=True)
        if job is not None
    }
    conn.execute(
        "INSERT INTO tenure_batches (id, name, state, declared_total, allow_failures, callbacks,"
        " created_at) VALUES (?, ?, 'running', ?, ?, ?, ?)",
        (batch.id, batch.name, batch.total, int(batch.allow_failures), json.dumps(callbacks), now),
    )
    add(conn, batch.id, jobs, now)
    # A batch created empty is finished at once: then and finally still run, once.
    _apply(conn, batch.id, rules.settle(_counts(conn, batch.id)), now)


def add(conn: sqlite3.Connection, batch_id: str, jobs: Sequence[NewJob], now: float) -> int:
    counts = _counts(conn, batch_id)
    if counts.state != rules.RUNNING or counts.finished:
        return 0
    added = insert_jobs(
        conn, [replace(j, batch_id=batch_id) for j in jobs], now, skip_existing=True
    )
    conn.execute("UPDATE tenure_batches SET jobs = jobs + ? WHERE id = ?", (added, batch_id))
    return added


def member_ended(conn: sqlite3.Connection, batch_id: str, outcome: str, now: float) -> None:
    if outcome == rules.SUCCEEDED:
        # The hot path: one statement. A success sends no callback until the last member.
        row = conn.execute(
            "UPDATE tenure_batches SET done = done + 1 WHERE id = ?"
            " AND jobs - done - failed - cancelled > 1 RETURNING id",
            (batch_id,),
        ).fetchone()
        if row is not None:
            return
    _apply(conn, batch_id, rules.member_ended(_counts(conn, batch_id), outcome), now)


def member_retried(conn: sqlite3.Connection, batch_id: str) -> bool:
    """A failed member is about to be retried: take it out of the failed count, or refuse
    (False, nothing changed) when its batch no longer runs (tenure.batch.member_retried)."""
    counts = _counts(conn, batch_id)
    if counts.state == "missing":
        return True  # no batch left to count it in: it retries as a plain job
    retried = rules.member_retried(counts)
    if retried is None:
        return False
    conn.execute("UPDATE tenure_batches SET failed = ? WHERE id = ?", (retried.failed, batch_id))
    return True


def stops_new_work(conn: sqlite3.Connection, batch_id: str) -> bool:
    return _counts(conn, batch_id).stops_new_work


def cancel(conn: sqlite3.Connection, batch_id: str, now: float) -> bool:
    row = conn.execute("SELECT state FROM tenure_batches WHERE id = ?", (batch_id,)).fetchone()
    if row is None or row["state"] != rules.RUNNING:
        return False
    _apply(conn, batch_id, rules.cancelled_by_user(_counts(conn, batch_id)), now)
    return True


def read(conn: sqlite3.Connection, batch_id: str) -> BatchRecord | None:
    row = conn.execute("SELECT * FROM tenure_batches WHERE id = ?", (batch_id,)).fetchone()
    return None if row is None else _record(conn, row)


def list_recent(conn: sqlite3.Connection, limit: int) -> list[BatchRecord]:
    rows = conn.execute(
        "SELECT * FROM tenure_batches ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
    ).fetchall()
    return [_record(conn, r) for r in rows]


def report_progress(conn: sqlite3.Connection, job_id: str, token: int, fraction: float) -> None:
    # max(): a member's progress is kept across retries, so the batch's never goes backwards
    conn.execute(
        "UPDATE tenure_jobs SET progress = max(progress, ?) WHERE id = ? AND attempt = ?"
        " AND state = 'running'",
        (max(0.0, min(1.0, fraction)), job_id, token),
    )


# -- inside ------------------------------------------------------------------------------
def _apply(conn: sqlite3.Connection, batch_id: str, change: rules.BatchChange, now: float) -> None:
    callbacks = list(change.callbacks)
    counts = change.counts
    if change.cancel_queued:
        n = conn.execute(
            "UPDATE tenure_jobs SET state = 'cancelled', finished_at = ? WHERE batch_id = ?"
            " AND state = 'queued'",
            (now, batch_id),
        ).rowcount
        follow = rules.queued_members_cancelled(counts, n)
        counts = follow.counts
        callbacks += follow.callbacks
    conn.execute(
        "UPDATE tenure_batches SET state = ?, jobs = ?, done = ?, failed = ?, cancelled = ?,"
        " catch_sent = ?, finished = ?, finished_at = CASE WHEN ? THEN ? ELSE finished_at END"
        " WHERE id = ?",
        (
            counts.state,
            counts.jobs,
            counts.done,
            counts.failed,
            counts.cancelled,
            int(counts.catch_sent),
            int(counts.finished),
            int(counts.finished),
            now,
            batch_id,
        ),
    )
    for kind in callbacks:
        _enqueue_callback(conn, batch_id, kind, now)


def _enqueue_callback(conn: sqlite3.Connection, batch_id: str, kind: str, now: float) -> None:
    row = conn.execute("SELECT callbacks FROM tenure_batches WHERE id = ?", (batch_id,)).fetchone()
    try:
        spec = json.loads(row["callbacks"]).get(kind)
        job = None if spec is None else callback_from_json(spec)
    except (TypeError, ValueError, KeyError, AttributeError):
        # A damaged callbacks column must not keep the member that ended from ending.
        log.error("batch %s: its %s callback is unreadable and was not enqueued", batch_id, kind)
        return
    if job is None:
        return
    insert_jobs(conn, [job], now, skip_existing=True)
    conn.execute(f"UPDATE tenure_batches SET {kind}_job_id = ? WHERE id = ?", (job.id, batch_id))


def _counts(conn: sqlite3.Connection, batch_id: str) -> rules.BatchCounts:
    row = conn.execute("SELECT * FROM tenure_batches WHERE id = ?", (batch_id,)).fetchone()
    if row is None:
        return rules.BatchCounts(state="missing", finished=True)
    return rules.BatchCounts(
        state=str(row["state"]),
        jobs=_count(row["jobs"]),
        done=_count(row["done"]),
        failed=_count(row["failed"]),
        cancelled=_count(row["cancelled"]),
        allow_failures=bool(row["allow_failures"]),
        catch_sent=bool(row["catch_sent"]),
        finished=bool(row["finished"]),
    )


def _count(value: Any) -> int:
    """A counter as stored; a damaged one reads as 0 rather than breaking every reader."""
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


def _record(conn: sqlite3.Connection, row: Any) -> BatchRecord:
    counts = _counts(conn, row["id"])
    partial = conn.execute(
        "SELECT coalesce(sum(progress), 0) FROM tenure_jobs WHERE batch_id = ?"
        " AND state IN ('queued', 'running')",
        (row["id"],),
    ).fetchone()[0]
    declared = None if row["declared_total"] is None else _count(row["declared_total"]) or None
    return batch_record(row, counts, declared, float(partial))
