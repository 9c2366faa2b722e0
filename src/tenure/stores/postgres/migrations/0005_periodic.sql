-- Periodic jobs (@app.periodic): the latest due time claimed per job, and the job dispatched
-- for the latest run. Every worker on every host claims due times here: the row is what two
-- claims of one due time meet on, so each due time is dispatched once.
CREATE TABLE {s}.tenure_periodic (
    name text PRIMARY KEY,
    last_due double precision NOT NULL,   -- epoch seconds of the latest due time claimed
    last_job_id text                      -- the job dispatched for the latest run
);
