-- Job results: a succeeded job's JSON return value (sealed when the job is encrypted), written
-- in the same statement as its success. NULL when it returned None. It lives in the job's own
-- row, so deleting the job (forget, retention) deletes its result with it.
ALTER TABLE {s}.tenure_jobs ADD COLUMN result text;
