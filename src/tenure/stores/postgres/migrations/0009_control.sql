-- Cancelling one job and pausing a queue (issue 18).
-- When someone cancelled the job: a running job keeps running until its worker, told by its
-- heartbeat's reply, stops it; however that attempt ends, the job ends `cancelled`.
ALTER TABLE {s}.tenure_jobs ADD COLUMN cancel_requested_at double precision;
-- Paused queues: every claim statement reads this table, so a pause cannot race a claim.
CREATE TABLE {s}.tenure_paused_queues (
    queue text PRIMARY KEY,
    paused_at double precision NOT NULL
);
