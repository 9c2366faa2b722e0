-- Why an attempt ended (tenure.causes): who ended its process -- the worker's timeout or memory
-- cap, the kernel's OOM killer, a signal from outside, a vanished worker. NULL: not recorded
-- (a success, or an attempt ended before this column existed).
ALTER TABLE tenure_attempts ADD COLUMN cause TEXT;
