"""What SQLite's one ready index answers (migration 0017): a queue's ready head for the claim
(READY, with a parked probe READY_AFTER; ANY_READY, the poll), and besides the claim the head
of a queue's queued jobs (the fair-share head, the oldest queued job) and its scheduled and
parked counts, read per priority in use from tenure_jobs_ready_by_priority, the index the
claim reads."""

from __future__ import annotations

from tenure.stores.sql import control
from tenure.stores.sql.guards import PARKED
from tenure.stores.sqlite.guards import NEXT_ATTEMPT

# A parked job in the words of the parked index since migration 0018 (guard_state: a job
# with a concurrency key has its state there)
PARKED_GUARDED = PARKED.replace("state", "guard_state", 1)

# the shared clause in SQLite's words (what SQLiteDialect.q does): no schema, `?` parameters
NOT_PAUSED = control.not_paused("?").replace("{s}.", "")

# A queue's ready head with what its guards need, then what its claim hands out (name, queue,
# payload, policy, batch_id) and the number its next attempt takes: read with the row the
# head reads anyway, so that the claim needs no RETURNING (see COMPLETE_PLAIN). The write
# lock is held from this read to the claim: the row cannot change between them. INDEXED BY:
# left to itself the planner takes tenure_jobs_ready for the run_at range and sorts the
# queue's ready jobs by priority (a temp B-tree: 20 ms a call at 50,000 queued); the head of
# (queue, state, priority, run_at, rowid).
READY = (
    "SELECT id, overlap_key, overlap_delay, rate_key, rate_limit, rate_window,"
    " concurrency_key, concurrency_limit, name, queue, payload, policy, batch_id,"
    f" {NEXT_ATTEMPT} AS next_attempt"
    " FROM tenure_jobs INDEXED BY tenure_jobs_ready_by_priority"
    " WHERE queue = ? AND state = 'queued' AND run_at <= ?"
    + NOT_PAUSED
    + " ORDER BY priority, run_at, rowid LIMIT ?"
)
# READY after a success under a concurrency key: with it, whether that key has a parked job
# (one probe of the parked index, stated in its partial index's words), read last. None
# parked, and none parked since in this transaction: the end's hand-back would hand back
# nothing, and is not run (SQLiteJobs.end_attempt).
READY_AFTER = READY.replace(
    " FROM tenure_jobs INDEXED BY",
    ", (SELECT 1 FROM tenure_jobs INDEXED BY tenure_jobs_parked WHERE concurrency_key = ?"
    f" AND {PARKED_GUARDED}) AS parked FROM tenure_jobs INDEXED BY",
    1,
)
# Whether a queue has a ready job, from the ready index alone (it covers the condition): the
# poll before a reservation reads no row, no payload and no next attempt number.
ANY_READY = (
    "SELECT 1 FROM tenure_jobs INDEXED BY tenure_jobs_ready_by_priority"
    " WHERE queue = ? AND state = 'queued' AND run_at <= ?" + NOT_PAUSED + " LIMIT 1"
)

# A queue's priorities that have queued jobs (`?1`: the queue), one seek each in the ready
# index the claim reads (a loose index scan): what a second ready index on (queue, state,
# run_at) answered until migration 0017 is read per priority from this one, so its cost is
# the number of priorities in use times a seek, whatever the number of jobs.
PRIORITIES = (
    "WITH RECURSIVE p(pr) AS (SELECT (SELECT min(priority) FROM tenure_jobs"
    " WHERE queue = ?1 AND state = 'queued') UNION ALL SELECT (SELECT min(priority)"
    " FROM tenure_jobs WHERE queue = ?1 AND state = 'queued' AND priority > p.pr)"
    " FROM p WHERE p.pr IS NOT NULL) "
)
# the earliest run_at before `?2` of the queue's queued jobs (the fair-share head, the oldest)
FAIR_HEAD = PRIORITIES + (
    "SELECT min((SELECT min(run_at) FROM tenure_jobs WHERE queue = ?1 AND state = 'queued'"
    " AND priority = p.pr AND run_at < ?2)) AS head FROM p WHERE p.pr IS NOT NULL"
)
# the queue's scheduled jobs (run_at after `?2`, the clock, before `?3`, states.PARKED_AT)
# and its parked ones (from `?3` on), counted per priority
SCHEDULED = PRIORITIES + (
    "SELECT coalesce(sum((SELECT count(*) FROM tenure_jobs WHERE queue = ?1"
    " AND state = 'queued' AND priority = p.pr AND run_at > ?2 AND run_at < ?3)), 0),"
    " coalesce(sum((SELECT count(*) FROM tenure_jobs WHERE queue = ?1 AND state = 'queued'"
    " AND priority = p.pr AND run_at >= ?3)), 0) FROM p WHERE p.pr IS NOT NULL"
)
