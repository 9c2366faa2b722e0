-- The job names a worker's code defines (JSON text; NULL: not reported), for rolling deploys:
-- `tenure queues` counts the ready jobs that no live worker knows.
ALTER TABLE tenure_workers ADD COLUMN known TEXT;
