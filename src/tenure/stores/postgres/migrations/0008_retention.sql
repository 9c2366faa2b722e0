-- Retention (tenure.core.retention): each job and batch carries how long it is kept once finished,
-- in seconds (NULL: forever, as for every row written before this version), and pruning reads
-- the due ones as a range of an index on `finished_at + keep`, never a scan. Batch members
-- are not in the jobs' indexes: they are pruned with their batch.
ALTER TABLE {s}.tenure_jobs ADD COLUMN keep_succeeded double precision;
ALTER TABLE {s}.tenure_jobs ADD COLUMN keep_failed double precision;     -- failed and cancelled
ALTER TABLE {s}.tenure_batches ADD COLUMN keep_succeeded double precision;
ALTER TABLE {s}.tenure_batches ADD COLUMN keep_failed double precision;
ALTER TABLE {s}.tenure_rate_starts ADD COLUMN expires_at double precision; -- at + window
CREATE INDEX tenure_jobs_prune_succeeded ON {s}.tenure_jobs ((finished_at + keep_succeeded))
    WHERE state = 'succeeded' AND batch_id IS NULL;
CREATE INDEX tenure_jobs_prune_failed ON {s}.tenure_jobs ((finished_at + keep_failed))
    WHERE state IN ('failed', 'cancelled') AND batch_id IS NULL;
CREATE INDEX tenure_batches_prune_succeeded ON {s}.tenure_batches ((finished_at + keep_succeeded))
    WHERE finished AND state = 'succeeded';
CREATE INDEX tenure_batches_prune_failed ON {s}.tenure_batches ((finished_at + keep_failed))
    WHERE finished AND state <> 'succeeded';
CREATE INDEX tenure_unique_job ON {s}.tenure_unique (job_id);
CREATE INDEX tenure_unique_expires ON {s}.tenure_unique (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX tenure_rate_starts_expires ON {s}.tenure_rate_starts (expires_at)
    WHERE expires_at IS NOT NULL;
