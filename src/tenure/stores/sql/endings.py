"""How an attempt ends on the SQL stores, written once for SQLite and PostgreSQL: the fencing
check, a late result refused, the attempt row closed, and the retry decision (pure Python,
tenure.core.retry.decide) applied to the job and its batch, all inside the caller's transaction."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tenure.core.causes import WORKER_VANISHED
from tenure.core.chains import goes_on
from tenure.core.records import Ending, EndResult, Rescued
from tenure.core.retry import Counters, Policy, cancelled_ending, decide
from tenure.core.states import visible_state
from tenure.stores import texts
from tenure.stores.sql import batches, chains, guards
from tenure.stores.sql.dialect import Cursor, Dialect, Row

log = logging.getLogger("tenure.store")

STALE = "stale token: lease taken over"
# What apply_decision reads of the job.
DECISION_COLUMNS = (
    "id, queue, policy, tries_used, exceptions, batch_id, attempt, cancel_requested_at, chain,"
    " concurrency_key, concurrency_limit"
)


def held_job(d: Dialect, cur: Cursor, job_id: str, token: int) -> Row | None:
    """The job (DECISION_COLUMNS), locked where rows lock, if `token` still holds it; None
    when fenced. A lease that expired but was not yet rescued is still honoured: nobody else
    has the job, and taking the result avoids a needless re-run."""
    return cur.execute(
        d.q(
            f"SELECT {DECISION_COLUMNS} FROM {{s}}.tenure_jobs"
            f" WHERE id = %s AND attempt = %s AND state = 'running'{d.lock_rows}"
        ),
        (job_id, token),
    ).fetchone()


def refuse(
    d: Dialect, cur: Cursor, job_id: str, token: int, outcome: str, now: float | None = None
) -> EndResult:
    """Record a late result that was refused (fencing), on the attempt that produced it.
    `now` None reads the server's clock in the same statement."""
    note = (
        f"its worker reported '{outcome}' after the lease had been taken over; "
        "the late result was refused (fencing)"
    )
    cur.execute(
        d.q(
            "UPDATE {s}.tenure_attempts SET outcome = 'lost_lease',"
            " error = coalesce(error || '; ', '') || %s WHERE job_id = %s AND number = %s"
            " AND (outcome IS NULL OR outcome = 'crashed')"
        ),
        (note, job_id, token),
    )
    clock, params = (d.clock_sql, (job_id,)) if now is None else ("%s", (now, job_id))
    row = cur.execute(
        d.q(f"SELECT state, run_at, {clock} AS now FROM {{s}}.tenure_jobs WHERE id = %s"), params
    ).fetchone()
    state = visible_state(row["state"], row["run_at"], row["now"]) if row else "missing"
    return EndResult(accepted=False, state=state, reason=STALE)


def close_attempt(
    d: Dialect,
    cur: Cursor,
    job_id: str,
    number: int,
    now: float,
    outcome: str,
    error: str | None,
    traceback: str | None,
    cause: str | None = None,
) -> None:
    # coalesce: closing it again (cancelled while it ran) keeps the cause already written
    cur.execute(
        d.q(
            "UPDATE {s}.tenure_attempts SET ended_at = %s, outcome = %s, error = %s,"
            " traceback = %s, cause = coalesce(%s, cause) WHERE job_id = %s AND number = %s"
        ),
        (now, outcome, error, traceback, cause, job_id, number),
    )


def after_success(
    d: Dialect,
    cur: Cursor,
    job_id: str,
    batch_id: str | None,
    chain: str | None,
    now: float,
    result: str | None = None,
) -> None:
    """The success path's batch and chain bookkeeping, inside its transaction, one rule for
    both SQL stores: a batch member counted (a chain in a batch: once, at its last link),
    then the chain followed (its next link queued with this success)."""
    if batch_id is not None and not goes_on(chain):
        batches.member_ended(d, cur, batch_id, "succeeded", now)
    elif batch_id is not None and batches.stops_new_work(d, cur, batch_id):
        # its batch was cancelled or has failed: the chain stops here, counted as cancelled
        batches.member_ended(d, cur, batch_id, "cancelled", now)
        chains.link_ended(d, cur, chain, chains.BATCH_STOPPED, now)
        return
    chains.link_ended(
        d, cur, chain, "succeeded", now, job_id=job_id, batch_id=batch_id, result=result
    )


def end_attempt(d: Dialect, cur: Cursor, now: Callable[[], float], ending: Ending) -> EndResult:
    """Store.end_attempt inside the caller's transaction: refused when fenced, else the
    attempt closed (with `record` False and no cancel asked: its row deleted) and the retry
    decision applied. `now()` reads the store's clock, once the
    job's row is held (PostgreSQL: after its lock, so the end is later than anything the
    previous holder of that lock wrote)."""
    job_id, token, outcome = ending.job_id, ending.token, ending.outcome
    job = held_job(d, cur, job_id, token)
    if job is None:
        return refuse(d, cur, job_id, token, outcome, now())
    at = now()
    # a job's text never fails its end
    error, traceback = texts.recorded(ending.error_text, ending.traceback)
    if ending.record or job["cancel_requested_at"] is not None:
        close_attempt(d, cur, job_id, token, at, outcome, error, traceback, ending.cause)
    else:  # already recorded once by its worker: the history does not grow
        cur.execute(
            d.q("DELETE FROM {s}.tenure_attempts WHERE job_id = %s AND number = %s"),
            (job_id, token),
        )
    return apply_decision(d, cur, job, outcome, error, at, ending.permanent, ending.snooze)


def rescue(
    d: Dialect, cur: Cursor, job: Row, error: str, now: float, cause: str = WORKER_VANISHED
) -> Rescued:
    """The sweep's rescue of a (locked) job whose lease expired with no end: its attempt
    closed as crashed with `error` (describe_crash's words) and `cause`, then the retry
    decision."""
    close_attempt(d, cur, job["id"], job["attempt"], now, "crashed", error, None, cause)
    ended = apply_decision(d, cur, job, "crashed", error, now, False)
    # The attempt crashed when its worker was last known alive: its last heartbeat (else its
    # start), not the rescue; the job's own timing (retry, finished_at) stays at `now`.
    cur.execute(
        d.q(
            "UPDATE {s}.tenure_attempts SET ended_at = coalesce(last_heartbeat_at,"
            " nullif(started_at, 0), ended_at) WHERE job_id = %s AND number = %s"
            " AND coalesce(last_heartbeat_at, nullif(started_at, 0), ended_at) <= %s"
        ),
        (job["id"], job["attempt"], now),
    )
    return Rescued(job["id"], job["attempt"], ended)


def next_lapse_in(d: Dialect, cur: Cursor, now: float) -> float | None:
    """Seconds from `now` until the earliest lease of a running job ends (None: nothing runs),
    read from the end of the lease index: when the sweep is next due (Swept.next_lapse_in)."""
    row = cur.execute(
        d.q("SELECT min(lease_expires_at) AS at FROM {s}.tenure_jobs WHERE state = 'running'")
    ).fetchone()
    return None if row is None or row["at"] is None else float(row["at"]) - now


def apply_decision(
    d: Dialect,
    cur: Cursor,
    job: Row,
    outcome: str,
    error: str,
    now: float,
    permanent: bool,
    snooze: float = 0.0,
) -> EndResult:
    """Retry or fail the (locked) job by its own Policy: the one rule every store shares.
    `job` holds DECISION_COLUMNS. The attempt's concurrency slot is free after it: the key's
    next parked job is handed back in the same transaction."""
    ended = _decide(d, cur, job, outcome, error, now, permanent, snooze)
    guards.release(d, cur, job, now)
    return ended


def _decide(
    d: Dialect,
    cur: Cursor,
    job: Row,
    outcome: str,
    error: str,
    now: float,
    permanent: bool,
    snooze: float,
) -> EndResult:
    counters = Counters(job["tries_used"], job["exceptions"])
    decision = decide(
        Policy.from_json(job["policy"]),
        counters,
        outcome,
        now,
        permanent=permanent,
        cancel_requested=job["cancel_requested_at"] is not None,
        snooze=snooze,
    )
    c = decision.counters
    batch_id = job["batch_id"]
    if decision.cancel:
        # Someone cancelled it while it ran: however the attempt ended, no try is used, it is
        # not retried, and its attempt says `cancelled` (with what happened).
        ended, note = cancelled_ending(outcome, error)
        close_attempt(d, cur, job["id"], job["attempt"], now, ended, note, None)
        _end(d, cur, job, "cancelled", c, note, now)  # c: the counters as they were
        return EndResult(True, "cancelled", decision.reason)
    if decision.retry and batch_id is not None and batches.stops_new_work(d, cur, batch_id):
        # Its batch was cancelled or has failed: the retry would be wasted work.
        _end(d, cur, job, "cancelled", c, error, now)
        return EndResult(True, "cancelled", "its batch no longer runs new work")
    if decision.retry:
        cur.execute(
            d.q(
                "UPDATE {s}.tenure_jobs SET state = 'queued', run_at = %s,"
                " lease_expires_at = NULL, worker_id = NULL, tries_used = %s,"
                " exceptions = %s, last_error = %s WHERE id = %s"
            ),
            (now + decision.delay, c.tries_used, c.exceptions, error, job["id"]),
        )
        if decision.delay <= 0:
            # handed back at once (interrupted, lost lease): wake an idle worker for it
            d.wake(cur, job["queue"])
            return EndResult(True, "queued", decision.reason, decision.delay)
        return EndResult(True, "scheduled", decision.reason, decision.delay)
    _end(d, cur, job, "failed", c, f"{error}; failed because {decision.reason}", now)
    return EndResult(True, "failed", decision.reason)


def _end(
    d: Dialect, cur: Cursor, job: Row, state: str, c: Counters, last_error: str, now: float
) -> None:
    """The job's row ends `state` (cancelled or failed) with its counters and error, and
    what follows a job's end for good follows."""
    cur.execute(
        d.q(
            "UPDATE {s}.tenure_jobs SET state = %s, finished_at = %s, lease_expires_at = NULL,"
            " tries_used = %s, exceptions = %s, last_error = %s WHERE id = %s"
        ),
        (state, now, c.tries_used, c.exceptions, last_error, job["id"]),
    )
    finished(d, cur, job, state, now)


def finished(d: Dialect, cur: Cursor, job: Row, state: str, now: float) -> None:
    """After a job (id, batch_id, chain) ended for good other than by success: its batch
    counts it, its chain's later links follow, and whoever waits for its end wakes."""
    if job["batch_id"] is not None:
        batches.member_ended(d, cur, job["batch_id"], state, now)
    chains.link_ended(d, cur, job["chain"], state, now)
    d.job_ended(cur, job["id"])


@contextmanager
def isolated(d: Dialect, cur: Cursor, job_id: str, now: float, what: str) -> Iterator[None]:
    """One damaged job must not stop the queue or the recovery sweep: on an error its row
    causes (a counter at its type's limit, a field a bad migration left), undo that job's part
    of the transaction, fail it with the reason, and go on with the others. An error of the
    connection itself (d.row_errors holds none) still ends the whole call."""
    cur.execute("SAVEPOINT one_job")
    try:
        yield
    except d.row_errors as exc:
        cur.execute("ROLLBACK TO SAVEPOINT one_job")
        reason = (
            f"tenure could not {what} this job, its row is damaged: {type(exc).__name__}: {exc}"
        )
        log.error("job %s: %s", job_id, reason)
        held = cur.execute(
            d.q(
                "SELECT state, queue, run_at, concurrency_key, concurrency_limit"
                " FROM {s}.tenure_jobs WHERE id = %s"
            ),
            (job_id,),
        ).fetchone()
        cur.execute(
            d.q(
                "UPDATE {s}.tenure_jobs SET state = 'failed', finished_at = %s,"
                " lease_expires_at = NULL, last_error = %s WHERE id = %s"
            ),
            (now, texts.storable(reason), job_id),
        )
        d.job_ended(cur, job_id)
        _free_slot(d, cur, held, now)
    cur.execute("RELEASE SAVEPOINT one_job")


def _free_slot(d: Dialect, cur: Cursor, row: Row | None, now: float) -> None:
    """A damaged job failed by `isolated`: the rolled-back part gave back no concurrency slot,
    so it is given back here (a running one's), and its key's parked jobs handed back; unless
    the damage is in the key's own columns, which then keeps its slot (left for an operator)."""
    if row is None or not isinstance(row["concurrency_key"], str):
        return
    if not isinstance(row["concurrency_limit"], int) or not isinstance(row["run_at"], (int, float)):
        return
    guards.release(d, cur, row, now, held=row["state"] == "running")
