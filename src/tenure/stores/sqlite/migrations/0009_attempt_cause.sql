-- Why an attempt ended (tenure.core.causes): who ended its process -- the worker's timeout or memory
-- cap, the kernel's OOM killer, a signal from outside, a vanished worker. NULL: not recorded
-- (a success, or an attempt ended before this column existed).
ALTER TABLE tenure_attempts ADD COLUMN cause TEXT;
-- When a worker began stopping (its first SIGTERM): an attempt of it whose lease later expires
-- with no end was killed at the end of a deploy's grace (tenure.core.causes.DEPLOY).
ALTER TABLE tenure_workers ADD COLUMN stopping_at REAL;
