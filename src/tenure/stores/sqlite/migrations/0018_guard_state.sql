-- The guard indexes out of a plain job's way (issue 35). tenure_jobs_overlap, _debounce,
-- _slots and _parked each named `state`, and SQLite maintains, in an UPDATE, every index
-- whose columns or condition read a column the SET names: both UPDATEs of a plain job's hot
-- path (its claim, its end) opened each of them and tested its condition, though a job
-- without an overlap, concurrency or debounce key is in none (4.6 % of the hot statements'
-- instructions, `python -m bench rowshape --callgrind`). They now read `guard_state`: the
-- job's state for a job with any of those keys, NULL for the others. The plain job's claim
-- and success (jobs.py CLAIM, COMPLETE_PLAIN) never name it; every other statement that sets
-- `state` sets it too (the shared ones through SQLiteDialect.q). The CHECK holds every writer
-- to it: a statement that moved a guarded job's state and not its guard_state fails instead
-- of leaving the job where its guards no longer see it (~180 instructions a job). A trigger
-- would keep it without that care, but SQLite runs a trigger as a sub-program on each row of
-- each UPDATE OF state, plain jobs' too: +6.8 %. SQLite tests a new column's CHECK against
-- the rows already there, before the backfill below could set theirs: hence the pragma
-- (schema.migrate_locked turns it off again if a migration fails). tenure_jobs_batch keeps
-- `state`: its readers are a dozen shared batch statements.
PRAGMA ignore_check_constraints = ON;
ALTER TABLE tenure_jobs ADD COLUMN guard_state TEXT CHECK (guard_state IS state
    OR guard_state IS NULL AND overlap_key IS NULL AND concurrency_key IS NULL
    AND debounce_key IS NULL);
UPDATE tenure_jobs SET guard_state = state
    WHERE overlap_key IS NOT NULL OR concurrency_key IS NOT NULL OR debounce_key IS NOT NULL;
PRAGMA ignore_check_constraints = OFF;
DROP INDEX tenure_jobs_overlap;
DROP INDEX tenure_jobs_debounce;
DROP INDEX tenure_jobs_slots;
DROP INDEX tenure_jobs_parked;
CREATE INDEX tenure_jobs_overlap ON tenure_jobs (overlap_key, guard_state)
    WHERE overlap_key IS NOT NULL;
CREATE INDEX tenure_jobs_debounce ON tenure_jobs (debounce_key)
    WHERE debounce_key IS NOT NULL AND guard_state = 'queued';
CREATE INDEX tenure_jobs_slots ON tenure_jobs (concurrency_key, guard_state, lease_expires_at)
    WHERE concurrency_key IS NOT NULL AND guard_state = 'running';
CREATE INDEX tenure_jobs_parked ON tenure_jobs (concurrency_key, run_at)
    WHERE concurrency_key IS NOT NULL AND guard_state = 'queued' AND run_at >= 253402214400.0;
