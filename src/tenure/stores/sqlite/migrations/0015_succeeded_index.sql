-- A succeeded job is in one index instead of two (issue 35): its end wrote an entry in
-- tenure_jobs_state (the counts and listings by state) and one in tenure_jobs_prune_succeeded
-- (retention), two leaf pages of the WAL per job on the worker's hot path. The index that
-- retention reads now holds every succeeded job, its queue as the key's last column, and it
-- serves the counts and the listing of succeeded jobs too; tenure_jobs_state keeps the failed
-- and cancelled ones.
--
-- Batch members (pruned with their batch, never alone) are in the succeeded index now: the
-- prune's statement still says `batch_id IS NULL` and skips them as it reads its range.
-- The conditions are written as the readers name them (SQLite uses a partial index only when
-- the statement states its condition): `state = 'succeeded'`, `state IN ('failed',
-- 'cancelled')`. Two values in the IN list, not three: SQLite tests a list of three or more
-- by building a temporary table, at every UPDATE of a job's state (see 0013).
DROP INDEX tenure_jobs_prune_succeeded;
CREATE INDEX tenure_jobs_succeeded ON tenure_jobs (state, finished_at + keep_succeeded, queue)
    WHERE state = 'succeeded';
DROP INDEX tenure_jobs_state;
CREATE INDEX tenure_jobs_state ON tenure_jobs (state, queue)
    WHERE state IN ('failed', 'cancelled');
