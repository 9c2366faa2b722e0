-- A limited job is in a concurrency index only while it runs or waits parked (issue 31): the
-- one index (concurrency_key, state, run_at) held every job of a key in every state, so each
-- claim and each end of a limited job moved its entry from one state's range to another's,
-- about three more leaf pages in the WAL per job than a plain job writes. Now the running
-- attempts of a key (with their lease, counted at reserve: a slot follows its lease) and its
-- parked jobs (oldest first, handed back by an end) are two partial indexes; a limited job
-- that is queued and not parked, or finished, is in neither, and a saturated key whose
-- backlog passes from one attempt to the next (its slot handed to the ender's next claim)
-- writes one small page per job. SQLite uses a partial index only when the statement names
-- its condition: readers say `state = 'running'`, and `state = 'queued' AND run_at >=
-- 253402214400.0` (states.PARKED_AT, written as this literal) word for word.
DROP INDEX tenure_jobs_concurrency;
CREATE INDEX tenure_jobs_slots ON tenure_jobs (concurrency_key, state, lease_expires_at)
    WHERE concurrency_key IS NOT NULL AND state = 'running';
CREATE INDEX tenure_jobs_parked ON tenure_jobs (concurrency_key, run_at)
    WHERE concurrency_key IS NOT NULL AND state = 'queued' AND run_at >= 253402214400.0;
