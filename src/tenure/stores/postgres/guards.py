"""Uniqueness, overlap, rate limits and once() on PostgreSQL, decided inside the caller's
transaction: atomically with the enqueue or the reservation they guard. What both SQL stores
decide alike (who holds a unique key, the words of a deferral) is in stores/sql/guards.py.

Where SQLite serialises every writer, here two hosts decide at the same moment, so each guard
names the lock its deciders meet on:

- a unique key: its row in `tenure_unique`. `INSERT ... ON CONFLICT DO NOTHING` makes a second
  dispatch wait for the first one's commit and then see its row; a row already there is locked
  (`FOR UPDATE`) before it is judged and taken over. Keys are taken in sorted order, so two
  dispatches of several keys cannot deadlock.
- an overlap or rate key: a transaction-scoped advisory lock on the key, *tried*, never waited
  for (a reservation that finds the key busy leaves the job for the next pass, so reserving
  cannot deadlock and never queues behind another worker). The check that follows is a new
  statement, so under READ COMMITTED it sees everything the previous holder committed.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg.rows import DictRow

from tenure.core.records import NewJob
from tenure.stores.postgres.database import CLOCK, Cursor, Database
from tenure.stores.sql.guards import overlap_deferral, rate_deferral, unique_holder

# pg_advisory_xact_lock's first key per kind (the migration lock is 0x7E4E)
OVERLAP_LOCK = 0x7E4F
RATE_LOCK = 0x7E50
CONCURRENCY_LOCK = 0x7E51  # debounce and fair keys (Dialect.lock_key)


class KeyBusy(Exception):
    """Another worker is deciding about this overlap or rate key right now: not now, no verdict."""


# -- uniqueness, at enqueue --------------------------------------------------------------
def take_unique_keys(db: Database, cur: Cursor, jobs: Sequence[NewJob]) -> dict[str, str]:
    """Each unique key among `jobs` -> the id that stands for it: the job now holding it (from an
    earlier dispatch), else the first job of this call with that key, which takes it."""
    first: dict[str, NewJob] = {}
    for job in jobs:
        key = job.guards.unique_key
        if key is not None and key not in first:
            first[key] = job
    return {key: _take(db, cur, first[key]) for key in sorted(first)}


def _take(db: Database, cur: Cursor, job: NewJob) -> str:
    guards = job.guards
    params = {
        "key": guards.unique_key,
        "id": job.id,
        "until": guards.unique_until,
        "for": guards.unique_for,
    }
    while True:
        # A concurrent dispatch of the key waits here for our commit, then finds our row.
        taken = cur.execute(
            db.q(
                "INSERT INTO {s}.tenure_unique (key, job_id, until, expires_at)"
                f" VALUES (%(key)s, %(id)s, %(until)s, {CLOCK} + %(for)s::float8)"
                " ON CONFLICT (key) DO NOTHING RETURNING job_id"
            ),
            params,
        ).fetchone()
        if taken is not None:
            return job.id
        row = cur.execute(
            db.q(
                f"SELECT u.job_id, u.until, u.expires_at, j.state, {CLOCK} AS now"
                " FROM {s}.tenure_unique u LEFT JOIN {s}.tenure_jobs j ON j.id = u.job_id"
                " WHERE u.key = %(key)s FOR UPDATE OF u"
            ),
            params,
        ).fetchone()
        if row is None:
            continue  # deleted meanwhile: take it afresh
        holder = unique_holder(row, row["now"])
        if holder is not None:
            return holder
        cur.execute(
            db.q(
                "UPDATE {s}.tenure_unique SET job_id = %(id)s, until = %(until)s,"
                f" expires_at = {CLOCK} + %(for)s::float8 WHERE key = %(key)s"
            ),
            params,
        )
        return job.id


# -- overlap and rate limits, at reserve --------------------------------------------------
def judge(db: Database, cur: Cursor, row: DictRow) -> tuple[float, tuple[float, str] | None]:
    """(now, deferral): deferral is (run_at, reason) if the job's overlap or rate guard says not
    now, None when it may start now (a rate-limited start is then recorded). Raises KeyBusy
    when a key's lock is taken.

    `now` is read by the overlap check itself, after the locks: a holder the check no longer
    sees running had ended (and recorded its end) before that instant, so the attempts' own
    start and end times show the one-at-a-time order that really happened."""
    overlap_key, rate_key = row["overlap_key"], row["rate_key"]
    locks = cur.execute(
        "SELECT (%(o)s::text IS NULL OR pg_try_advisory_xact_lock(%(oc)s, hashtext(%(o)s)))"
        " AS overlap, (%(r)s::text IS NULL OR pg_try_advisory_xact_lock(%(rc)s,"
        " hashtext(%(r)s))) AS rate",
        {
            "o": None if overlap_key is None else f"{db.schema}:{overlap_key}",
            "r": None if rate_key is None else f"{db.schema}:{rate_key}",
            "oc": OVERLAP_LOCK,
            "rc": RATE_LOCK,
        },
    ).fetchone()
    if locks is None or not (locks["overlap"] and locks["rate"]):
        raise KeyBusy
    # The lock follows the holder's lease: a running job with this key and a live lease holds
    # it, so a crashed holder blocks the key for one lease at most.
    check = cur.execute(
        db.q(
            f"WITH clock AS MATERIALIZED (SELECT {CLOCK} AS now) SELECT clock.now,"
            " (SELECT id FROM {s}.tenure_jobs WHERE overlap_key = %(key)s AND state = 'running'"
            " AND lease_expires_at >= clock.now AND id <> %(id)s LIMIT 1) AS holder FROM clock"
        ),
        {"key": overlap_key, "id": row["id"]},
    ).fetchone()
    assert check is not None
    now = float(check["now"])
    if check["holder"] is not None:
        return now, overlap_deferral(row, check["holder"], now)
    if rate_key is not None:
        free_at = rate_free_at(db, cur, rate_key, row["rate_limit"], row["rate_window"], now)
        if free_at is not None:
            return now, rate_deferral(row, free_at)
    return now, None


def take_slot(db: Database, cur: Cursor, row: DictRow) -> bool:
    """Take a slot of the row's concurrency key (True), or find none free (False: the key's
    row stays locked until the transaction ends, so the job can be parked before any ending
    attempt of the key hands back). Raises KeyBusy when another transaction holds the key's
    row (a claim of it, or an ending attempt handing back: sql.guards.release). Makes the
    key's row (migration 0017) on its first use."""
    params = {"k": row["concurrency_key"], "lim": row["concurrency_limit"] or 1}
    held = cur.execute(
        db.q(
            "WITH made AS (INSERT INTO {s}.tenure_concurrency (key, running)"
            " VALUES (%(k)s, 0) ON CONFLICT (key) DO NOTHING RETURNING running),"
            " locked AS (SELECT running FROM {s}.tenure_concurrency WHERE key = %(k)s"
            " FOR UPDATE SKIP LOCKED)"
            " SELECT coalesce((SELECT running FROM made), (SELECT running FROM locked)) AS n,"
            # holders whose lease lapsed (crashed, not rescued yet) hold no slot: claims.held_slots
            " (SELECT count(*) FROM {s}.tenure_jobs WHERE concurrency_key = %(k)s"
            " AND (concurrency_key, state) >= (%(k)s, 'running')"
            " AND (concurrency_key, state) <= (%(k)s, 'running')"
            f" AND lease_expires_at < {CLOCK}) AS lapsed"
        ),
        params,
    ).fetchone()
    if held is None or held["n"] is None:
        raise KeyBusy
    # A full key's row is written too (unchanged): the caller parks a job of the key, and
    # every parking writes its key's row, which is how an ending in one statement knows its
    # snapshot holds every parked job of the key (postgres/limited.py).
    taken: bool = int(held["n"]) - int(held["lapsed"]) < int(params["lim"])
    cur.execute(
        db.q("UPDATE {s}.tenure_concurrency SET running = running + %(take)s WHERE key = %(k)s"),
        {**params, "take": int(taken)},
    )
    return taken


def give_slot_back(db: Database, cur: Cursor, key: str) -> None:
    """Undo take_slot in the same transaction: the job was deferred by another guard."""
    cur.execute(
        db.q("UPDATE {s}.tenure_concurrency SET running = running - 1 WHERE key = %s"), (key,)
    )


def rate_free_at(
    db: Database, cur: Cursor, key: str, limit: int, window: float, now: float
) -> float | None:
    """None if a start is allowed now (and records it, in the same statement), else when the
    sliding window frees."""
    row = cur.execute(
        db.q(
            "WITH gone AS (DELETE FROM {s}.tenure_rate_starts WHERE key = %(key)s"
            " AND at <= %(now)s - %(window)s),"
            " live AS MATERIALIZED (SELECT count(*) AS n, min(at) AS oldest"
            " FROM {s}.tenure_rate_starts WHERE key = %(key)s AND at > %(now)s - %(window)s),"
            " started AS (INSERT INTO {s}.tenure_rate_starts (key, at, expires_at)"
            " SELECT %(key)s, %(now)s, %(now)s + %(window)s FROM live WHERE live.n < %(limit)s)"
            " SELECT n, oldest FROM live"
        ),
        {"key": key, "now": now, "window": window, "limit": limit},
    ).fetchone()
    if row is None or row["n"] < limit:
        return None
    return float(row["oldest"]) + window


# -- once(), while the attempt runs -------------------------------------------------------
def claim_once(db: Database, cur: Cursor, job_id: str, token: int, key: str) -> bool:
    """True for the first claim of a job and key, and only while `token` is the job's current
    running attempt. FOR SHARE holds off a rescue or takeover until the claim is written, and a
    claim that waited re-reads the row, so a fenced attempt never records an effect."""
    row = cur.execute(
        db.q(
            "WITH holder AS (SELECT id FROM {s}.tenure_jobs WHERE id = %(id)s"
            " AND attempt = %(token)s AND state = 'running' FOR SHARE),"
            " claimed AS (INSERT INTO {s}.tenure_once (job_id, key, attempt, at)"
            f" SELECT id, %(key)s, %(token)s, {CLOCK} FROM holder"
            " ON CONFLICT (job_id, key) DO NOTHING RETURNING 1)"
            " SELECT count(*) AS n FROM claimed"
        ),
        {"id": job_id, "token": token, "key": key},
    ).fetchone()
    return bool(row and row["n"])
