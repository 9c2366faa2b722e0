"""What SQLite's one ready index answers besides the claim (migration 0017): the head of a
queue's queued jobs (the fair-share head, the oldest queued job) and its scheduled and parked
counts, read per priority in use from tenure_jobs_ready_by_priority, the index the claim
reads (jobs.READY)."""

from __future__ import annotations

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
