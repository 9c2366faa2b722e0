-- Retention (tenure.core.retention): each job and batch carries how long it is kept once finished,
-- in seconds (NULL: forever, as for every row written before this version), and pruning reads
-- the due ones as a range of an index on `finished_at + keep`, never a scan. Batch members
-- are not in the jobs' indexes: they are pruned with their batch. `state` leads the
-- jobs' indexes so that SQLite's planner, which has no statistics, prefers them to
-- tenure_jobs_lease (state, lease_expires_at) for `state = ? AND finished_at + keep < ?`.
ALTER TABLE tenure_jobs ADD COLUMN keep_succeeded REAL;
ALTER TABLE tenure_jobs ADD COLUMN keep_failed REAL;     -- failed and cancelled
ALTER TABLE tenure_batches ADD COLUMN keep_succeeded REAL;
ALTER TABLE tenure_batches ADD COLUMN keep_failed REAL;
ALTER TABLE tenure_rate_starts ADD COLUMN expires_at REAL; -- at + the rate's window
CREATE INDEX tenure_jobs_prune_succeeded ON tenure_jobs (state, finished_at + keep_succeeded)
    WHERE state = 'succeeded' AND batch_id IS NULL;
CREATE INDEX tenure_jobs_prune_failed ON tenure_jobs (state, finished_at + keep_failed)
    WHERE state IN ('failed', 'cancelled') AND batch_id IS NULL;
CREATE INDEX tenure_batches_prune_succeeded ON tenure_batches (finished_at + keep_succeeded)
    WHERE finished AND state = 'succeeded';
CREATE INDEX tenure_batches_prune_failed ON tenure_batches (finished_at + keep_failed)
    WHERE finished AND state <> 'succeeded';
CREATE INDEX tenure_unique_job ON tenure_unique (job_id);
CREATE INDEX tenure_unique_expires ON tenure_unique (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX tenure_rate_starts_expires ON tenure_rate_starts (expires_at)
    WHERE expires_at IS NOT NULL;
