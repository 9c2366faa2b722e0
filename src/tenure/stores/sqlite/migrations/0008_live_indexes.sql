-- The jobs' indexes that only live jobs are read through now hold only live jobs, so that a
-- finished job sits in four B-trees (the table, its key, tenure_jobs_state, and a prune
-- index or tenure_jobs_batch) instead of seven: pruning it deletes fewer entries, and its
-- reservation and its end move fewer. Every statement that reads a partial index below
-- names the index's own condition (`state = 'queued'`, `state = 'running'`, `batch_id =`),
-- which is what SQLite needs to use it. The columns stay as they were, `state` included:
-- SQLite has no statistics, and an index matching more of the WHERE wins over
-- tenure_jobs_state (state, queue), and a covering one needs no row.
DROP INDEX tenure_jobs_ready;
DROP INDEX tenure_jobs_ready_by_priority;
DROP INDEX tenure_jobs_lease;
DROP INDEX tenure_jobs_batch;
-- Reservation (INDEXED BY: the head of the queue), then the scheduled count and the oldest
-- ready job (a range of run_at per queue).
CREATE INDEX tenure_jobs_ready_by_priority ON tenure_jobs (queue, state, priority, run_at)
    WHERE state = 'queued';
CREATE INDEX tenure_jobs_ready ON tenure_jobs (queue, state, run_at) WHERE state = 'queued';
-- The rescue of expired leases.
CREATE INDEX tenure_jobs_lease ON tenure_jobs (state, lease_expires_at) WHERE state = 'running';
-- A batch's members and their states; plain jobs never enter it.
CREATE INDEX tenure_jobs_batch ON tenure_jobs (batch_id, state) WHERE batch_id IS NOT NULL;
-- The one index every job is in: the counts per queue and state (a scan of this narrow
-- index, not of the table) and the listing by state. A listing by queue alone scans it too.
CREATE INDEX tenure_jobs_state ON tenure_jobs (state, queue);
-- The prune chunk keeps the latest run of each periodic job: a lookup, not a scan per job.
CREATE INDEX tenure_periodic_last_job ON tenure_periodic (last_job_id);
