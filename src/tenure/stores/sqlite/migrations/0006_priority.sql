-- Priorities: lower runs first within a queue, FIFO within a priority. Reservation reads the
-- head of (queue, state, priority, run_at) -- rowid, the index's own tail, keeps FIFO among
-- jobs of one instant -- so it stays an index lookup. tenure_jobs_ready (queue, state, run_at)
-- stays for the scheduled counts and the next due time, which range over run_at.
ALTER TABLE tenure_jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tenure_jobs_ready_by_priority ON tenure_jobs (queue, state, priority, run_at);
