"""Cancelling one job, pausing a queue and asking for a restart on the SQL stores, written once
for SQLite and PostgreSQL, inside the caller's transaction.

A queued job is cancelled at once; a running one only gets `cancel_requested_at`, which the
heartbeat of the worker holding it returns (Store.heartbeat), and which makes however its
attempt ends a cancellation (endings.apply_decision). A paused queue is a row of
`tenure_paused_queues`, which every claim statement reads (`not_paused`), so a pause needs no
message to the workers and cannot race a reservation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tenure.core.records import CancelResult
from tenure.core.states import PARKED_AT
from tenure.stores.sql import batches, endings, guards
from tenure.stores.sql.dialect import Cursor, Dialect


def not_paused(queue_param: str) -> str:
    """Appended to the WHERE of a claim of one queue's jobs, the queue given as the parameter
    `queue_param`: the claim takes nothing from a paused queue (an index lookup)."""
    return f" AND NOT EXISTS (SELECT 1 FROM {{s}}.tenure_paused_queues WHERE queue = {queue_param})"


def cancel(d: Dialect, cur: Cursor, job_id: str, clock: Callable[[], float]) -> CancelResult:
    """`clock` is read after the job's row is locked (lock order: job row, then batch row)."""
    row = cur.execute(
        d.q(
            "SELECT id, state, batch_id, chain, queue, run_at, concurrency_key,"
            f" concurrency_limit FROM {{s}}.tenure_jobs WHERE id = %s{d.lock_rows}"
        ),
        (job_id,),
    ).fetchone()
    if row is None:
        return CancelResult(accepted=False, state="missing")
    state = str(row["state"])
    now = clock()
    if state == "queued":  # or scheduled: it never runs
        cur.execute(
            d.q(
                "UPDATE {s}.tenure_jobs SET state = 'cancelled', finished_at = %s,"
                " cancel_requested_at = %s WHERE id = %s"
            ),
            (now, now, job_id),
        )
        endings.finished(d, cur, row, "cancelled", now)  # JobHandle.wait raises JobCancelled
        if row["concurrency_key"] is not None and row["run_at"] < PARKED_AT:
            # a job handed back (or not parked yet) may have been its key's next to run: the
            # parked ones behind it must not wait for an end that will not come
            guards.release(d, cur, row, now, held=False)
        return CancelResult(accepted=True, state="cancelled")
    if state == "running":  # its worker hears of it at its next heartbeat
        cur.execute(
            d.q(
                "UPDATE {s}.tenure_jobs SET cancel_requested_at = coalesce(cancel_requested_at,"
                " %s) WHERE id = %s"
            ),
            (now, job_id),
        )
        return CancelResult(accepted=True, state="running")
    return CancelResult(accepted=False, state=state)


def cancel_batch(d: Dialect, cur: Cursor, batch_id: str, now: float) -> CancelResult:
    if batches.cancel(d, cur, batch_id, now):
        return CancelResult(accepted=True, state="cancelled")
    found = batches.list_batches(d, cur, [batch_id], 1)
    return CancelResult(accepted=False, state=found[0].state if found else "missing")


def set_control(
    d: Dialect, cur: Cursor, paused: Mapping[str, bool], restart: bool, now: float
) -> float:
    """Store.set_control inside the caller's transaction; returns `now`."""
    for queue, pause in paused.items():
        if pause:
            cur.execute(
                d.q(
                    "INSERT INTO {s}.tenure_paused_queues (queue, paused_at) VALUES (%s, %s)"
                    " ON CONFLICT (queue) DO NOTHING"
                ),
                (queue, now),
            )
        elif cur.execute(
            d.q("DELETE FROM {s}.tenure_paused_queues WHERE queue = %s"), (queue,)
        ).rowcount:
            d.wake(cur, queue)  # its ready jobs start now, not at the idle workers' next look
    if restart:
        cur.execute(
            d.q(
                "INSERT INTO {s}.tenure_control (key, value) VALUES ('restart_at', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ),
            (repr(now),),
        )
    return now


def paused_queues(d: Dialect, cur: Cursor) -> set[str]:
    rows = cur.execute(d.q("SELECT queue FROM {s}.tenure_paused_queues")).fetchall()
    return {str(r["queue"]) for r in rows}
