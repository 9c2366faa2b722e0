"""Batches on PostgreSQL: the rules of tenure.batch applied inside the caller's transaction.

As on SQLite, a member's end and its batch's bookkeeping commit together. SQLite serialises
every writer; here two members of one batch can end at the same moment, so every function that
changes a batch first locks its row (`FOR UPDATE`): counts are read and written by one
transaction at a time, and a callback is enqueued once. Lock order is always job row, then
batch row (cancel takes the batch, then only *queued* members, which no lock holder of a
batch row waits for), so the two cannot deadlock.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from psycopg.rows import DictRow

from tenure import batch as rules
from tenure.stores.base import (
    BatchRecord,
    NewBatch,
    NewJob,
    batch_record,
    callback_from_json,
    callback_to_json,
)
from tenure.stores.postgres.database import Cursor, Database
from tenure.stores.postgres.jobs import insert_jobs

CALLBACK_KINDS = ("then", "catch", "finally")


def create(db: Database, cur: Cursor, batch: NewBatch, jobs: Sequence[NewJob], now: float) -> None:
    callbacks = {
        kind: callback_to_json(job)
        for kind, job in zip(CALLBACK_KINDS, (batch.then, batch.catch, batch.finally_), strict=True)
        if job is not None
    }
    cur.execute(
        db.q(
            "INSERT INTO {s}.tenure_batches (id, name, state, declared_total, allow_failures,"
            " callbacks, created_at) VALUES (%s, %s, 'running', %s, %s, %s, %s)"
        ),
        (batch.id, batch.name, batch.total, batch.allow_failures, json.dumps(callbacks), now),
    )
    add(db, cur, batch.id, jobs, now)
    # A batch created empty is finished at once: then and finally still run, once.
    _apply(db, cur, batch.id, rules.settle(_counts(db, cur, batch.id)), now)


def add(db: Database, cur: Cursor, batch_id: str, jobs: Sequence[NewJob], now: float) -> int:
    counts = _counts(db, cur, batch_id)
    if counts.state != rules.RUNNING or counts.finished:
        return 0
    added = insert_jobs(db, cur, [replace(j, batch_id=batch_id) for j in jobs], skip_existing=True)
    cur.execute(
        db.q("UPDATE {s}.tenure_batches SET jobs = jobs + %s WHERE id = %s"), (added, batch_id)
    )
    return added


def lock(db: Database, cur: Cursor, batch_ids: Sequence[str]) -> None:
    """Lock several batch rows in one fixed order, for a caller ending jobs of many batches."""
    cur.execute(
        db.q("SELECT id FROM {s}.tenure_batches WHERE id = ANY(%s) ORDER BY id FOR UPDATE"),
        (sorted(set(batch_ids)),),
    )


def member_ended(db: Database, cur: Cursor, batch_id: str, outcome: str, now: float) -> None:
    _apply(db, cur, batch_id, rules.member_ended(_counts(db, cur, batch_id), outcome), now)


def member_retried(db: Database, cur: Cursor, batch_id: str) -> bool:
    """A failed member is about to be retried: take it out of the failed count, or refuse
    (False, nothing changed) when its batch no longer runs (tenure.batch.member_retried).
    The caller holds the member's row lock: job row, then batch row."""
    counts = _counts(db, cur, batch_id)
    if counts.state == "missing":
        return True  # no batch left to count it in: it retries as a plain job
    retried = rules.member_retried(counts)
    if retried is None:
        return False
    cur.execute(
        db.q("UPDATE {s}.tenure_batches SET failed = %s WHERE id = %s"), (retried.failed, batch_id)
    )
    return True


def stops_new_work(db: Database, cur: Cursor, batch_id: str) -> bool:
    return _counts(db, cur, batch_id).stops_new_work


def cancel(db: Database, cur: Cursor, batch_id: str, now: float) -> bool:
    counts = _counts(db, cur, batch_id)
    if counts.state != rules.RUNNING:
        return False
    _apply(db, cur, batch_id, rules.cancelled_by_user(counts), now)
    return True


def read(db: Database, cur: Cursor, batch_id: str) -> BatchRecord | None:
    row = cur.execute(db.q(f"{_READ} WHERE b.id = %s"), (batch_id,)).fetchone()
    return None if row is None else _record(row)


def list_recent(db: Database, cur: Cursor, limit: int) -> list[BatchRecord]:
    rows = cur.execute(
        db.q(f"{_READ} ORDER BY b.created_at DESC, b.seq DESC LIMIT %s"), (limit,)
    ).fetchall()
    return [_record(r) for r in rows]


def report_progress(db: Database, cur: Cursor, job_id: str, token: int, fraction: float) -> None:
    # greatest(): a member's progress is kept across retries, so the batch's never goes back
    cur.execute(
        db.q(
            "UPDATE {s}.tenure_jobs SET progress = greatest(progress, %s) WHERE id = %s"
            " AND attempt = %s AND state = 'running'"
        ),
        (max(0.0, min(1.0, fraction)), job_id, token),
    )


# -- inside ------------------------------------------------------------------------------
# One statement, one snapshot: the members' partial progress agrees with the counts.
_READ = (
    "SELECT b.*, (SELECT coalesce(sum(j.progress), 0) FROM {s}.tenure_jobs j"
    " WHERE j.batch_id = b.id AND j.state IN ('queued', 'running')) AS partial"
    " FROM {s}.tenure_batches b"
)


def _apply(db: Database, cur: Cursor, batch_id: str, change: rules.BatchChange, now: float) -> None:
    callbacks = list(change.callbacks)
    counts = change.counts
    if change.cancel_queued:
        cur.execute(
            db.q(
                "UPDATE {s}.tenure_jobs SET state = 'cancelled', finished_at = %s"
                " WHERE batch_id = %s AND state = 'queued'"
            ),
            (now, batch_id),
        )
        follow = rules.queued_members_cancelled(counts, cur.rowcount)
        counts = follow.counts
        callbacks += follow.callbacks
    cur.execute(
        db.q(
            "UPDATE {s}.tenure_batches SET state = %s, jobs = %s, done = %s, failed = %s,"
            " cancelled = %s, catch_sent = %s, finished = %s,"
            " finished_at = CASE WHEN %s THEN %s ELSE finished_at END WHERE id = %s"
        ),
        (
            counts.state,
            counts.jobs,
            counts.done,
            counts.failed,
            counts.cancelled,
            counts.catch_sent,
            counts.finished,
            counts.finished,
            now,
            batch_id,
        ),
    )
    for kind in callbacks:
        _enqueue_callback(db, cur, batch_id, kind)


def _enqueue_callback(db: Database, cur: Cursor, batch_id: str, kind: str) -> None:
    row = cur.execute(
        db.q("SELECT callbacks FROM {s}.tenure_batches WHERE id = %s"), (batch_id,)
    ).fetchone()
    try:
        spec = json.loads(row["callbacks"]).get(kind) if row else None
        job = None if spec is None else callback_from_json(spec)
    except (ValueError, TypeError, KeyError, AttributeError):
        # A damaged callbacks column loses that callback (its `*_job_id` stays empty, which
        # `tenure batch` shows); it must not make the member's own end fail and roll back,
        # which would leave the member running until its lease expired, again and again.
        job = None
    if job is None:
        return
    insert_jobs(db, cur, [job], skip_existing=True)
    cur.execute(
        db.q(f"UPDATE {{s}}.tenure_batches SET {kind}_job_id = %s WHERE id = %s"),
        (job.id, batch_id),
    )


def _counts(db: Database, cur: Cursor, batch_id: str) -> rules.BatchCounts:
    """The batch's counts, its row locked until the caller's transaction ends."""
    row = cur.execute(
        db.q("SELECT * FROM {s}.tenure_batches WHERE id = %s FOR UPDATE"), (batch_id,)
    ).fetchone()
    if row is None:
        return rules.BatchCounts(state="missing", finished=True)
    return _batch_counts(row)


def _batch_counts(row: DictRow) -> rules.BatchCounts:
    return rules.BatchCounts(
        state=row["state"],
        jobs=row["jobs"],
        done=row["done"],
        failed=row["failed"],
        cancelled=row["cancelled"],
        allow_failures=row["allow_failures"],
        catch_sent=row["catch_sent"],
        finished=row["finished"],
    )


def _record(row: DictRow) -> BatchRecord:
    counts = _batch_counts(row)
    declared = row["declared_total"]
    return batch_record(row, counts, declared, float(row["partial"]))
