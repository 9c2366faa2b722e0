-- Periodic jobs (@app.periodic): the latest due time claimed per job, and the job dispatched
-- for the latest run. Every worker claims due times here, so each is dispatched once.
CREATE TABLE tenure_periodic (
    name TEXT PRIMARY KEY,
    last_due REAL NOT NULL,       -- epoch seconds of the latest due time claimed
    last_job_id TEXT              -- the job dispatched for the latest run; NULL before one
);
