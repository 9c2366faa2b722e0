-- The worker's pick keeps its plan whatever statistics PostgreSQL holds (issue 17).
-- The pick used to ask for `queue = X AND state = 'queued' ORDER BY run_at, seq`, which the
-- listing index (state, created_at, seq) can also answer, by reading every queued row and
-- sorting them. Statistics taken right after a drain say almost nothing is queued, so the
-- planner took that path for the next burst and re-read thousands of rows per job claimed.
-- `ready_queue` is the queue of a queued job and NULL otherwise; the pick asks for
-- `ready_queue = X`, which only this index answers, in order, stopping at the first row.
-- (Adding a stored generated column rewrites the table once, under its lock.)
ALTER TABLE {s}.tenure_jobs ADD COLUMN ready_queue text
    GENERATED ALWAYS AS (CASE WHEN state = 'queued' THEN queue END) STORED;
DROP INDEX {s}.tenure_jobs_ready;
CREATE INDEX tenure_jobs_ready ON {s}.tenure_jobs (ready_queue, run_at, seq)
    WHERE ready_queue IS NOT NULL;
