"""The statements of a PostgreSQL worker's hot path: claiming ready jobs, and recording a
success while claiming the next job in the same statement. `{s}` is the schema (Database.q).

A claim is one statement: SKIP LOCKED passes over rows another worker is claiming, and a row
claimed and committed meanwhile fails the re-checked `priority_queue` (NULL once a job is not
queued), so no job is handed out twice. `priority_queue = X`, not `queue = X AND state =
'queued'`: only the priority index answers it, in (priority, run_at, seq) order, so the plan
cannot change with the statistics (migrations 0010, 0011). The clock is read once per
statement (`clock_timestamp()`, an InitPlan parameter usable as an index bound), not `now()`:
inside a transaction now() is when it began.
"""

from __future__ import annotations

from tenure.core.states import PARKED_AT
from tenure.stores.postgres.database import CLOCK
from tenure.stores.sql.control import not_paused

# Every write of an attempt row on the hot path is an upsert on its primary key (job_id,
# number). An INSERT's conflict check is the executor's probe of that unique index, never a
# planned scan; an UPDATE or a max() subquery over tenure_attempts is planned, and once a
# prepared statement's generic plan was made while the table was (or was analyzed) empty, it
# scanned the whole table for every job after, a drain slowing as the table grew (5x slower,
# measured with an ANALYZE right after a burst). The attempt number is the job's own count
# plus one; an attempt row already at that number (a restore, a hand edit) is taken over by
# the new attempt instead of failing every reservation of the queue.
OPEN_ATTEMPT = (
    " ON CONFLICT (job_id, number) DO UPDATE SET worker_id = EXCLUDED.worker_id,"
    " host = EXCLUDED.host, pid = EXCLUDED.pid, started_at = EXCLUDED.started_at,"
    " last_heartbeat_at = EXCLUDED.last_heartbeat_at, ended_at = EXCLUDED.ended_at,"
    " outcome = EXCLUDED.outcome, error = EXCLUDED.error, traceback = NULL"
)
NEXT_ATTEMPT = "j.attempt + 1"


def close_succeeded(token: str) -> str:
    """`closed`: the attempt `token` of the job in `done` ends succeeded (recreated if its row
    is missing), by an upsert for the reason above."""
    return (
        " closed AS (INSERT INTO {s}.tenure_attempts (job_id, number, worker_id, host, pid,"
        f" started_at, ended_at, outcome) SELECT done.id, {token}, done.worker_id, '', 0,"
        " done.now, done.now, 'succeeded' FROM done ON CONFLICT (job_id, number) DO UPDATE"
        " SET ended_at = EXCLUDED.ended_at, outcome = 'succeeded', error = NULL,"
        " traceback = NULL)"
    )


RETURNING = (
    " RETURNING j.id, j.name, j.queue, j.payload, j.policy, j.attempt, j.lease_expires_at,"
    " j.batch_id, j.run_at, j.seq, j.priority, j.concurrency_key, j.chain"
)
_NOW = "(SELECT now FROM clock)"


def _claim_ctes(gate: str, *, one: bool = False) -> str:
    """picked/claimed/opened: the oldest ready jobs of %(queue)s, up to %(limit)s (`one`: a
    single job, the busy worker's case), skipping %(seen)s, none of a paused queue; guarded
    ones are picked (to report them) but not claimed, except those guarded by a concurrency
    limit alone (`_slots`). `gate` adds a condition to the pick.

    `claimed` finds its rows by primary key: joined to `picked` instead, a prepared (generic)
    plan, not knowing %(limit)s, hash-joined the whole jobs table on every claim. For several
    rows that is `id = ANY(ARRAY(...))`, which a generic plan made while the table was small
    (a worker's first jobs on a new install) answers by a Seq Scan, kept as the table grows;
    for one row it is `id = (SELECT ...)`, an equality the pkey answers at any size."""
    go_ids = "SELECT id FROM picked WHERE free UNION ALL SELECT id FROM ranked WHERE go"
    limit, rows = ("1", f"= ({go_ids})") if one else ("%(limit)s", f"= ANY(ARRAY({go_ids}))")
    return (
        " picked AS MATERIALIZED (SELECT id, priority, run_at, seq,"
        " concurrency_key AS ckey, coalesce(concurrency_limit, 1) AS clim,"
        " overlap_key IS NULL AND rate_key IS NULL AND concurrency_key IS NULL AS free,"
        " overlap_key IS NULL AND rate_key IS NULL AND concurrency_key IS NOT NULL AS limited"
        " FROM {s}.tenure_jobs"
        f" WHERE priority_queue = %(queue)s AND run_at <= {_NOW}"
        f" AND id <> ALL(%(seen)s::text[]){not_paused('%(queue)s')}{gate}"
        f" ORDER BY priority, run_at, seq LIMIT {limit}"
        " FOR UPDATE SKIP LOCKED)," + _slots(one) + "," + claim_and_open(_NOW, rows)
    )


def _slots(one: bool) -> str:
    """wanted/slots/granted/ranked/parked: the picked jobs guarded by a concurrency limit
    alone take their key's free slots (migration 0017) in this statement, oldest first, and
    the rest of them are parked, all under the key's row lock. The lock is *tried* (SKIP
    LOCKED): a key another transaction holds, or one without a row yet, is left to `reserve`'s
    slow path (reported among the guarded), so a claim never waits and cannot deadlock. Each
    step is gated on there being such a job (a one-time filter), so a plain claim pays
    nothing for it."""
    keys = "key = (SELECT ckey FROM wanted)" if one else "key = ANY(ARRAY(SELECT ckey FROM wanted))"
    over = "SELECT id FROM ranked WHERE NOT go"
    parks = f"id = ({over})" if one else f"id = ANY(ARRAY({over}))"  # as `claimed` finds rows
    share = f"least(w.n, greatest(w.clim - {held_slots('c', 'w.clim')}, 0))"
    return (
        " wanted AS MATERIALIZED (SELECT ckey, max(clim) AS clim, count(*) AS n FROM picked"
        " WHERE limited GROUP BY ckey),"
        " slots AS MATERIALIZED (SELECT key FROM {s}.tenure_concurrency"
        f" WHERE EXISTS (SELECT 1 FROM wanted) AND {keys} FOR UPDATE SKIP LOCKED),"
        f" granted AS (UPDATE {{s}}.tenure_concurrency c SET running = c.running + {share},"
        f" granted = {share} FROM wanted w WHERE EXISTS (SELECT 1 FROM slots)"
        " AND c.key = w.ckey AND c.key IN (SELECT key FROM slots) RETURNING c.key, c.granted),"
        " ranked AS MATERIALIZED (SELECT p.id, row_number() OVER (PARTITION BY p.ckey"
        " ORDER BY p.priority, p.run_at, p.seq) <= g.granted AS go"
        " FROM picked p JOIN granted g ON g.key = p.ckey WHERE p.limited),"
        " parked AS (UPDATE {s}.tenure_jobs SET run_at = "
        f"{PARKED_AT!r} WHERE EXISTS ({over}) AND {parks})"
    )


def held_slots(row: str, limit: str) -> str:
    """The slots of the key whose tenure_concurrency row is `row` that are held: its count,
    less, once that reaches `limit`, the holders whose lease has lapsed (crashed, and not
    rescued yet). A slot follows its holder's lease, so a crashed holder frees it within one
    lease, not at the rescue that follows (at the sweep's pace); the rescue then gives the
    count back. The key's running jobs are the range (key, 'running') of its index, written
    as row comparisons: as `state = 'running'` the listing index (state, ...) could answer
    it, and did under a drained table's statistics, through every running job of every key."""
    at = f"({row}.key, 'running')"
    return (
        f"CASE WHEN {row}.running < {limit} THEN {row}.running ELSE {row}.running -"
        " (SELECT count(*) FROM {s}.tenure_jobs x WHERE x.concurrency_key = "
        f"{row}.key AND (x.concurrency_key, x.state) >= {at} AND (x.concurrency_key, x.state)"
        f" <= {at} AND x.lease_expires_at < {_NOW}) END"
    )


def claim_and_open(now: str, rows: str, by: str = "j.id") -> str:
    """claimed/opened: the jobs whose `by` (id, or ctid) is `rows` (`= ...`) running from `now`
    under a lease of %(lease)s for %(worker)s, each with its attempt row opened (an upsert, as
    above)."""
    return (
        " claimed AS (UPDATE {s}.tenure_jobs j SET state = 'running',"
        f" attempt = {NEXT_ATTEMPT}, lease_expires_at = {now} + %(lease)s,"
        f" worker_id = %(worker)s WHERE {by} {rows}"
        f"{RETURNING}),"
        " opened AS (INSERT INTO {s}.tenure_attempts (job_id, number, worker_id,"
        " host, pid, started_at, last_heartbeat_at)"
        f" SELECT id, attempt, %(worker)s, %(host)s, %(pid)s, {now}, {now} FROM claimed"
        f"{OPEN_ATTEMPT})"
    )


# A waiter of the ended job (JobHandle.wait, see the tenure_waiters migration) is woken with
# the commit that records its end: `woken` must be read by the statement's result to run.
ENDED_PREFIX = "ended:"
WAKE_WAITERS = (
    " woken AS (DELETE FROM {s}.tenure_waiters w USING done WHERE w.job_id = done.id"
    " RETURNING w.job_id)"
)
WOKEN = f"(SELECT count(pg_notify(%(channel)s, '{ENDED_PREFIX}' || job_id)) FROM woken)"

# One row per claimed job (or one row of NULLs), each with how many rows were picked, the ids
# of the guarded ones among them, for `reserve` to judge apart, and how many were parked.
_CLAIM_RESULT = (
    " SELECT c.*, p.picked, p.guarded, p.parked{extra} FROM (SELECT count(*) AS picked,"
    " coalesce(array_agg(id ORDER BY priority, run_at, seq) FILTER (WHERE NOT free"
    " AND id NOT IN (SELECT id FROM ranked)), '{{}}') AS guarded,"
    " (SELECT count(*) FROM ranked WHERE NOT go) AS parked FROM picked) p"
    " LEFT JOIN claimed c ON true"
    " ORDER BY c.priority, c.run_at, c.seq"
)

_WITH_CLOCK = f"WITH clock AS MATERIALIZED (SELECT {CLOCK} AS now),"
CLAIM, CLAIM_ONE = (
    _WITH_CLOCK + _claim_ctes("", one=one) + _CLAIM_RESULT.format(extra="") for one in (False, True)
)

# A success and the next claim in one statement, so one round trip and one commit. Only for a
# job outside any batch and any chain (a chain link's success dispatches the next link, in
# Python over the spec: tenure.core.chains, which the transaction path runs). A member's end is
# counted in its batch before anything else is locked (the order cancel_batch takes its locks
# in), which needs the transaction path. So `done` matches no batch member and no chain link,
# and nothing is claimed unless the success was recorded; `completed` = 0 sends the caller to
# that path (a batch member, a chain link, or a stale token).
# `(state = 'running') IS TRUE`: the same test, but not one an index can answer, so `done`
# finds its row by primary key. As `state = 'running'`, the listing index (state, ...) could
# answer it, and did once statistics said few jobs run: through every dead index entry that
# each earlier job's running state left behind, a drain slowing as it went.
COMPLETE_AND_CLAIM = (
    _WITH_CLOCK
    + " done AS (UPDATE {s}.tenure_jobs SET state = 'succeeded', finished_at = clock.now,"
    " lease_expires_at = NULL, tries_used = tries_used + 1, result = %(result)s FROM clock"
    " WHERE id = %(id)s AND attempt = %(token)s AND (state = 'running') IS TRUE"
    " AND batch_id IS NULL AND chain IS NULL AND concurrency_key IS NULL"
    " RETURNING id, worker_id, clock.now),"
    + close_succeeded("%(token)s")
    + ","
    + WAKE_WAITERS
    + ","
    + _claim_ctes(" AND EXISTS (SELECT 1 FROM done)", one=True)
    + _CLAIM_RESULT.format(extra=f", (SELECT count(*) FROM done) AS completed, {WOKEN} AS woken")
)
