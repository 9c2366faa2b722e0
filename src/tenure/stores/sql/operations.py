"""The job listing and a failed job's retry, written once for both SQL stores. Reading jobs by
id (`list_jobs(ids=)`) and forget_job stay per engine for a reason: PostgreSQL reads jobs with
their attempts in one statement (json_agg: one round trip) and cascades deletes; SQLite reads
three row sets in one local read transaction, and its schema has no foreign keys."""

from __future__ import annotations

from tenure.core.records import JobRecord
from tenure.core.states import FINAL_STATES
from tenure.stores.sql import batches
from tenure.stores.sql.dialect import Cursor, Dialect
from tenure.stores.sql.rows import job_record

# The finished states by the SQLite index that holds them (migration 0015): succeeded jobs in
# tenure_jobs_succeeded (retention's index), the others in tenure_jobs_state. A statement must
# name the index's condition, as written, for SQLite to read that index.
SUCCEEDED_SQL = "state = 'succeeded'"
UNSUCCESSFUL_SQL = "state IN ('failed', 'cancelled')"


def list_jobs(
    d: Dialect,
    cur: Cursor,
    *,
    state: str | None,
    queue: str | None,
    limit: int,
    now: float | None = None,
    batch_id: str | None = None,
) -> list[JobRecord]:
    """Newest first, without attempts; "queued" and "scheduled" split by run_at against one
    clock reading. `now` None reads the server's clock in the statement itself."""
    clock, at = (d.statement_clock_sql, ()) if now is None else ("%s", (now,))
    where = ["1 = 1"]
    params: list[object] = [*at]  # the clock in the SELECT list comes first
    if state == "scheduled":
        where.append(f"state = 'queued' AND run_at > {clock}")
        params += at
    elif state == "queued":
        where.append(f"state = 'queued' AND run_at <= {clock}")
        params += at
    elif state == "succeeded":
        where.append(SUCCEEDED_SQL)
    elif state in FINAL_STATES:
        # the index's own condition too (SQLite's partial tenure_jobs_state, migration 0015)
        where.append(f"state = %s AND {UNSUCCESSFUL_SQL}")
        params.append(state)
    elif state is not None:  # 'running': tenure_jobs_lease's condition is the state itself
        where.append("state = %s")
        params.append(state)
    if queue is not None:
        where.append("queue = %s")
        params.append(queue)
    if batch_id is not None:  # index tenure_jobs_batch (batch_id, state)
        where.append("batch_id = %s")
        params.append(batch_id)
    rows = cur.execute(
        d.q(
            f"SELECT *, {clock} AS now FROM {{s}}.tenure_jobs WHERE {' AND '.join(where)}"
            f" ORDER BY created_at DESC, {d.creation_order} DESC LIMIT %s"
        ),
        (*params, limit),
    ).fetchall()
    return [job_record(r, r["now"], []) for r in rows]


def retry_job(d: Dialect, cur: Cursor, job_id: str, now: float) -> bool:
    """Put a failed job back in its queue with fresh tries (Store.retry_job)."""
    # The job's row first, then its batch's: the lock order of every batch change.
    row = cur.execute(
        d.q(
            "SELECT batch_id, queue FROM {s}.tenure_jobs WHERE id = %s AND state = 'failed'"
            + d.lock_rows
        ),
        (job_id,),
    ).fetchone()
    if row is None:
        return False
    # A member leaves its batch's failed count, so its next end is counted once; a batch that
    # no longer runs refuses (see Store.retry_job).
    if row["batch_id"] is not None and not batches.member_retried(d, cur, row["batch_id"]):
        return False
    retried = cur.execute(
        d.q(
            "UPDATE {s}.tenure_jobs SET state = 'queued', run_at = %s, finished_at = NULL,"
            " tries_used = 0, exceptions = 0 WHERE id = %s AND state = 'failed'"
        ),
        (now, job_id),
    ).rowcount
    if retried:
        d.wake(cur, row["queue"])
    return bool(retried)
