-- The attempt's last memory reading (MB), reported by its worker with each heartbeat: the
-- evidence a vanished worker's attempt is recorded with (out of memory, or not). NULL: none.
ALTER TABLE tenure_attempts ADD COLUMN memory_mb REAL;
