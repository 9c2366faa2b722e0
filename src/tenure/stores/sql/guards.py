"""What both SQL stores decide alike about guards: who holds a unique key, and the words of a
deferral. How each engine *takes* a guard stays in its own guards.py, for a reason: SQLite's one
writer decides with plain statements in order; PostgreSQL's many writers need ON CONFLICT, row
locks, tried advisory locks and data-modifying CTEs (which SQLite lacks)."""

from __future__ import annotations

from typing import Any

from tenure.core.records import KeyCounts, NewJob, QueueCounts
from tenure.core.states import FAIR_BEFORE, FINAL_STATES, PARKED_AT
from tenure.stores.sql.dialect import Cursor, Dialect, Row

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


# -- concurrency: a parked job waits for a running attempt of its key to end ---------------
def park(d: Dialect, cur: Cursor, job_id: str) -> None:
    """The job is over its key's limit: not reserved, no attempt, no try; it waits (run_at =
    PARKED_AT) until an attempt of its key ends and hands it back (`release`)."""
    cur.execute(d.q("UPDATE {s}.tenure_jobs SET run_at = %s WHERE id = %s"), (PARKED_AT, job_id))


# A lease still live, as a test no index answers (unary +): a key's running attempts are
# counted in its concurrency index; SQLite's planner, left to itself, took the lease index,
# which holds every running job of every key.
_LIVE_LEASE = "+lease_expires_at >= %s"
# A parked job, in the words of SQLite's index of parked jobs (its migration 0016): a partial
# index is used only by a statement that states its condition, the literal included.
PARKED = f"state = 'queued' AND run_at >= {PARKED_AT!r}"


def running_under(d: Dialect, cur: Cursor, key: str, now: float) -> int:
    """The attempts running under a concurrency key with a live lease: a slot follows its
    holder's lease, so a crashed holder keeps it one lease at most."""
    row = cur.execute(
        d.q(
            "SELECT count(*) AS n FROM {s}.tenure_jobs WHERE concurrency_key = %s"
            f" AND state = 'running' AND {_LIVE_LEASE}"
        ),
        (key, now),
    ).fetchone()
    return int(row["n"])


def release(d: Dialect, cur: Cursor, job: Row, now: float, *, held: bool = True) -> int:
    """An attempt of `job` (concurrency_key, concurrency_limit, queue) ended (finished,
    retried, cancelled, rescued; `held`), or a queued job that may have been its key's next
    was cancelled (not `held`): hand back its key's oldest parked jobs, as many as the key
    has free slots, in the transaction of that end. On PostgreSQL the key's slot row is
    locked first (waited for; Dialect.end_slot), so a reservation parking a job of the key
    right now has committed before the parked jobs are read; the count and the hand-back
    are then one statement. How many were handed back."""
    key, limit = job["concurrency_key"], job["concurrency_limit"]
    if key is None or limit is None:
        return 0
    d.end_slot(cur, key, held=held)
    woke = cur.execute(
        d.q(
            "UPDATE {s}.tenure_jobs SET run_at = %s WHERE id IN (SELECT id FROM {s}.tenure_jobs"
            f" WHERE concurrency_key = %s AND {PARKED}"
            f" ORDER BY run_at, {d.creation_order} LIMIT (SELECT {d.greatest}(%s - count(*), 0)"
            " FROM {s}.tenure_jobs WHERE concurrency_key = %s AND state = 'running'"
            f" AND {_LIVE_LEASE})) AND {PARKED}"
        ),
        (now, key, int(limit), key, now),
    ).rowcount
    if woke:
        d.wake(cur, job["queue"])
    return int(woke)


def hand_back_past(d: Dialect, cur: Cursor, cancelled: list[Row], now: float) -> None:
    """Queued jobs were cancelled together (a batch's; rows: queue, run_at, concurrency_key,
    concurrency_limit): for each key one of them had been handed back (or not parked yet)
    and so may have been its next to run, the parked ones behind are handed back (`release`,
    not held), keys in sorted order (the lock order of their slot rows)."""
    first: dict[str, Row] = {}
    for row in cancelled:
        key = row["concurrency_key"]
        if key is not None and row["run_at"] < PARKED_AT and key not in first:
            first[key] = row
    for key in sorted(first):
        release(d, cur, first[key], now, held=False)


def add_key_counts(d: Dialect, cur: Cursor, out: dict[str, QueueCounts]) -> None:
    """queue_counts(keys=True): each queue's concurrency keys in use, read from their live
    jobs: a key's running ones and its parked ones, each set in its own index range."""
    rows = cur.execute(
        d.q(
            "SELECT queue, key, max(lim) AS lim, sum(running) AS running,"
            " sum(waiting) AS waiting FROM (SELECT queue, concurrency_key AS key,"
            " concurrency_limit AS lim, 1 AS running, 0 AS waiting FROM {s}.tenure_jobs"
            " WHERE concurrency_key IS NOT NULL AND state = 'running' UNION ALL"
            " SELECT queue, concurrency_key, concurrency_limit, 0, 1 FROM {s}.tenure_jobs"
            f" WHERE concurrency_key IS NOT NULL AND {PARKED}) live GROUP BY queue, key"
        )
    ).fetchall()
    for counts in out.values():
        counts.by_key = {}
    for row in rows:
        if row["running"] or row["waiting"]:
            counts = out.setdefault(row["queue"], QueueCounts())
            if counts.by_key is None:
                counts.by_key = {}
            counts.by_key[row["key"]] = KeyCounts(
                int(row["running"]), int(row["waiting"]), int(row["lim"] or 1)
            )


# -- debounce: one pending job per key, replaced by a later dispatch -------------------------
def debounced(d: Dialect, cur: Cursor, job: NewJob, now: float) -> str | None:
    """The id of the key's pending job, now carrying `job`'s arguments and run time, when the
    key has one still waiting for its time (its window is open); None: `job` is stored as a
    new job. A job already started, or due and waiting for a worker, is not replaced."""
    key = job.guards.debounce_key
    if key is None:
        return None
    d.lock_key(cur, "debounce:" + key)  # two dispatches of one key: one after the other
    row = cur.execute(
        d.q(
            "SELECT id FROM {s}.tenure_jobs WHERE debounce_key = %s AND state = 'queued'"
            f" AND run_at > %s ORDER BY {d.creation_order} DESC LIMIT 1"
        ),
        (key, now),
    ).fetchone()
    if row is None:
        return None
    cur.execute(
        d.q("UPDATE {s}.tenure_jobs SET payload = %s, run_at = %s WHERE id = %s"),
        (job.payload, now + max(job.delay, 0.0), row["id"]),
    )
    return str(row["id"])


# -- fair share: ready jobs round robin across fair keys ------------------------------------
def place_fairly(d: Dialect, cur: Cursor, job: NewJob) -> None:
    """Give the just stored `job` (due now, with a fair_key) its virtual start for a run_at:
    its key's next turn, but not before the queue's virtual now (the head of its fair jobs,
    or the largest start handed out when none is queued), so a new or idle tenant starts now
    and a busy one queues behind its own backlog. The next turn of its key is 1/weight
    later. Reservation is unchanged: the ready index orders run_at, so an O(log n) lookup
    finds the next job whatever the number of keys. The head is read from the engine's
    ready index (Dialect.fair_head). Fair enqueues of one queue take turns
    (its lock, on PostgreSQL)."""
    key = job.guards.fair_key
    if key is None or job.delay > 0:
        return  # a delayed job keeps its time: fairness orders what is due at dispatch
    d.lock_key(cur, "fair:" + job.queue)
    head = cur.execute(d.q(d.fair_head), (job.queue, FAIR_BEFORE)).fetchone()["head"]
    turns = {
        row["key"]: float(row["next_vt"])
        for row in cur.execute(
            d.q("SELECT key, next_vt FROM {s}.tenure_fair WHERE queue = %s AND key IN (%s, %s)"),
            (job.queue, "", "k:" + key),
        ).fetchall()
    }
    largest = turns.get("", 0.0)
    start = max(turns.get("k:" + key, 0.0), largest if head is None else float(head))
    following = start + 1.0 / job.guards.fair_weight
    for stored_key, value in (("k:" + key, following), ("", max(largest, following))):
        cur.execute(
            d.q(
                "INSERT INTO {s}.tenure_fair (queue, key, next_vt) VALUES (%s, %s, %s)"
                " ON CONFLICT (queue, key) DO UPDATE SET next_vt = excluded.next_vt"
            ),
            (job.queue, stored_key, value),
        )
    cur.execute(d.q("UPDATE {s}.tenure_jobs SET run_at = %s WHERE id = %s"), (start, job.id))
