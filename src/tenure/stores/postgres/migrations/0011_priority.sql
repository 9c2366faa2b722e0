-- Priorities: lower runs first within a queue, FIFO within a priority (run_at, then seq).
-- The pick asks `priority_queue = X ... ORDER BY priority, run_at, seq`. priority_queue is
-- ready_queue's twin (the queue of a queued job, else NULL: see 0010), so that only this
-- index answers the pick, in order, stopping at the first row: asked by ready_queue, the
-- planner took tenure_jobs_ready and sorted every ready job once statistics said the queue
-- was nearly empty (tests/backends/postgres/test_plans.py). tenure_jobs_ready stays for the
-- scheduled counts and the oldest ready job, which range over run_at.
ALTER TABLE {s}.tenure_jobs ADD COLUMN priority integer NOT NULL DEFAULT 0;
ALTER TABLE {s}.tenure_jobs ADD COLUMN priority_queue text
    GENERATED ALWAYS AS (CASE WHEN state = 'queued' THEN queue END) STORED;
CREATE INDEX tenure_jobs_ready_by_priority
    ON {s}.tenure_jobs (priority_queue, priority, run_at, seq)
    WHERE priority_queue IS NOT NULL;
