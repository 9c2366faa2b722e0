"""Batches on the SQL stores: the rules of core.batch applied inside the caller's transaction,
written once for SQLite and PostgreSQL over a small `Dialect`.

Each function takes the open cursor (a sqlite3 connection or a psycopg cursor: both execute and
answer alike) and the store's `now`, so a member's end and its batch's bookkeeping (counts,
callbacks) commit together or not at all. SQLite serialises every writer; on PostgreSQL two
members of one batch can end at the same moment, so every function that changes a batch first
locks its row (`dialect.lock_rows`): counts are read and written by one transaction at a time,
and a callback is enqueued once. Lock order is always job row, then batch row (cancel takes the
batch, then only *queued* members, which no lock holder of a batch row waits for), so the two
cannot deadlock.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tenure.core import batch as rules
from tenure.core.codec import callback_from_json, callback_to_json
from tenure.core.records import BatchRecord, NewBatch, NewJob, batch_record
from tenure.core.words import log_lost_callback
from tenure.stores.sql import chains, guards
from tenure.stores.sql.dialect import Cursor, Dialect, chunks, marks

CALLBACK_KINDS = ("then", "catch", "finally")


def enqueue(
    d: Dialect, cur: Cursor, batch: NewBatch | str, jobs: Sequence[NewJob], now: float
) -> list[str]:
    """`enqueue_many`'s batch forms: create `batch` with `jobs`, or add `jobs` to the batch
    whose id `batch` is; the ids of the members added."""
    if not isinstance(batch, NewBatch):
        return add(d, cur, batch, jobs, now)
    callbacks = {
        kind: callback_to_json(job)
        for kind, job in zip(CALLBACK_KINDS, (batch.then, batch.catch, batch.finally_), strict=True)
        if job is not None
    }
    cur.execute(
        d.q(
            "INSERT INTO {s}.tenure_batches (id, name, state, declared_total, allow_failures,"
            " callbacks, created_at, keep_succeeded, keep_failed)"
            " VALUES (%s, %s, 'running', %s, %s, %s, %s, %s, %s)"
        ),
        (
            batch.id,
            batch.name,
            batch.total,
            batch.allow_failures,
            json.dumps(callbacks),
            now,
            batch.keep.succeeded,
            batch.keep.failed,
        ),
    )
    added = add(d, cur, batch.id, jobs, now)
    # A batch created empty is finished at once: then and finally still run, once.
    _apply(d, cur, batch.id, rules.settle(_counts(d, cur, batch.id)), now)
    return added


def add(d: Dialect, cur: Cursor, batch_id: str, jobs: Sequence[NewJob], now: float) -> list[str]:
    """Members for a running batch (the batch row locked first); the ids added, in order:
    an id already present, or repeated in `jobs`, is skipped."""
    counts = _counts(d, cur, batch_id)
    if counts.state != rules.RUNNING or counts.finished:
        return []
    present: set[str] = set()
    for chunk in chunks([j.id for j in jobs]):
        rows = cur.execute(
            d.q(f"SELECT id FROM {{s}}.tenure_jobs WHERE id IN ({marks(chunk)})"), tuple(chunk)
        ).fetchall()
        present.update(row["id"] for row in rows)
    fresh: list[NewJob] = []
    for job in jobs:
        if job.id not in present:
            present.add(job.id)
            fresh.append(replace(job, batch_id=batch_id))
    # skip_existing still: a job of the same id written meanwhile outside this batch (whose
    # row lock does not cover it) is skipped, not an error
    added = d.insert_jobs(cur, fresh, now, skip_existing=True)
    cur.execute(
        d.q("UPDATE {s}.tenure_batches SET jobs = jobs + %s WHERE id = %s"), (added, batch_id)
    )
    return [j.id for j in fresh]


def member_ended(d: Dialect, cur: Cursor, batch_id: str, outcome: str, now: float) -> None:
    if outcome == rules.SUCCEEDED:
        # The hot path: one statement (its row lock held to the commit). A success that
        # leaves members pending changes nothing but `done` and sends no callback.
        row = cur.execute(
            d.q(
                "UPDATE {s}.tenure_batches SET done = done + 1 WHERE id = %s"
                " AND jobs - done - failed - cancelled > 1 RETURNING id"
            ),
            (batch_id,),
        ).fetchone()
        if row is not None:
            return
    _apply(d, cur, batch_id, rules.member_ended(_counts(d, cur, batch_id), outcome), now)


def member_retried(d: Dialect, cur: Cursor, batch_id: str) -> bool:
    """A failed member is about to be retried: take it out of the failed count, or refuse
    (False, nothing changed) when its batch no longer runs (tenure.core.batch.member_retried).
    The caller holds the member's row lock: job row, then batch row."""
    counts = _counts(d, cur, batch_id)
    if counts.state == "missing":
        return True  # no batch left to count it in: it retries as a plain job
    retried = rules.member_retried(counts)
    if retried is None:
        return False
    cur.execute(
        d.q("UPDATE {s}.tenure_batches SET failed = %s WHERE id = %s"), (retried.failed, batch_id)
    )
    return True


def stops_new_work(d: Dialect, cur: Cursor, batch_id: str) -> bool:
    return _counts(d, cur, batch_id).stops_new_work


def cancel(d: Dialect, cur: Cursor, batch_id: str, now: float) -> bool:
    counts = _counts(d, cur, batch_id)
    if counts.state != rules.RUNNING:
        return False
    _apply(d, cur, batch_id, rules.cancelled_by_user(counts), now)
    return True


def list_batches(
    d: Dialect, cur: Cursor, ids: Sequence[str] | None, limit: int
) -> list[BatchRecord]:
    """Store.list_batches: the newest `limit`, or those of `ids` that exist, in that order."""
    if ids is None:
        order = f"b.created_at DESC, b.{d.creation_order} DESC"
        rows = cur.execute(d.q(f"{_READ} ORDER BY {order} LIMIT %s"), (limit,)).fetchall()
        return [_record(r) for r in rows]
    if not ids:
        return []
    rows = cur.execute(d.q(f"{_READ} WHERE b.id IN ({marks(ids)})"), tuple(ids)).fetchall()
    found = {r.id: r for r in map(_record, rows)}
    return [found[i] for i in dict.fromkeys(ids) if i in found]


def report_progress(d: Dialect, cur: Cursor, job_id: str, token: int, fraction: float) -> None:
    # the larger of the two: a member's progress is kept across retries, so the batch's never
    # goes backwards
    cur.execute(
        d.q(
            f"UPDATE {{s}}.tenure_jobs SET progress = {d.greatest}(progress, %s) WHERE id = %s"
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


def _apply(d: Dialect, cur: Cursor, batch_id: str, change: rules.BatchChange, now: float) -> None:
    callbacks = list(change.callbacks)
    counts = change.counts
    if change.cancel_queued:
        stopped = cur.execute(
            d.q(
                "UPDATE {s}.tenure_jobs SET state = 'cancelled', finished_at = %s"
                " WHERE batch_id = %s AND state = 'queued'"
                " RETURNING chain, queue, run_at, concurrency_key, concurrency_limit"
            ),
            (now, batch_id),
        ).fetchall()
        n = len(stopped)
        for row in stopped:  # a chain member's later links cancelled, its catch and finally
            chains.link_ended(d, cur, row["chain"], "cancelled", now)
        guards.hand_back_past(d, cur, stopped, now)
        follow = rules.queued_members_cancelled(counts, n)
        counts = follow.counts
        callbacks += follow.callbacks
    cur.execute(
        d.q(
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
        row = cur.execute(
            d.q("SELECT callbacks FROM {s}.tenure_batches WHERE id = %s"), (batch_id,)
        ).fetchone()
        try:
            spec = json.loads(row["callbacks"]).get(kind) if row else None
            job = None if spec is None else callback_from_json(spec)
        except (TypeError, ValueError, KeyError, AttributeError):
            log_lost_callback(batch_id, kind)  # and the member's own end still commits
            continue
        if job is None:
            continue
        d.insert_jobs(cur, [job], now, skip_existing=True)
        cur.execute(
            d.q(f"UPDATE {{s}}.tenure_batches SET {kind}_job_id = %s WHERE id = %s"),
            (job.id, batch_id),
        )


def _counts(d: Dialect, cur: Cursor, batch_id: str) -> rules.BatchCounts:
    """The batch's counts, its row locked (where rows lock) until the transaction ends."""
    row = cur.execute(
        d.q(f"SELECT * FROM {{s}}.tenure_batches WHERE id = %s{d.lock_rows}"), (batch_id,)
    ).fetchone()
    if row is None:
        return rules.BatchCounts(state="missing", finished=True)
    return _batch_counts(row)


def _batch_counts(row: Any) -> rules.BatchCounts:
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
    """A counter as stored; a damaged one (SQLite's columns take any value) reads as 0 rather
    than breaking every reader."""
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


def _record(row: Any) -> BatchRecord:
    declared = None if row["declared_total"] is None else _count(row["declared_total"]) or None
    return batch_record(row, _batch_counts(row), declared, float(row["partial"]))
