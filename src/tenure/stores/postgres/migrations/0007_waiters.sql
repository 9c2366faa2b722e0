-- Who waits for a job's end (JobHandle.wait): a waiter writes its job's id here, and the
-- statement that records the job's success or failure deletes the row and sends a NOTIFY
-- 'ended:ID', so a job nobody waits for costs its end one index probe and no NOTIFY. A
-- waiter's row lapses at `until` (a waiter that died); UNLOGGED: waits do not outlive a crash.
CREATE UNLOGGED TABLE {s}.tenure_waiters (
    job_id text PRIMARY KEY,
    until double precision NOT NULL       -- epoch seconds; a later wait writes it again
);
