-- The job names a worker's code defines (NULL: not reported), for rolling deploys:
-- `tenure queues` counts the ready jobs that no live worker knows.
ALTER TABLE {s}.tenure_workers ADD COLUMN known text[];
