-- Cancelling one job and pausing a queue (issue 18).
-- When someone cancelled the job: a running job keeps running until its worker, told by its
-- heartbeat's reply, stops it; however that attempt ends, the job ends `cancelled`.
ALTER TABLE tenure_jobs ADD COLUMN cancel_requested_at REAL;
-- Paused queues: every reservation reads this table in the statement that claims jobs.
CREATE TABLE tenure_paused_queues (
    queue TEXT PRIMARY KEY,
    paused_at REAL NOT NULL
);
