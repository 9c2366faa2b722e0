-- Batches: a name, members, callbacks enqueued exactly once, a declared total for progress.

-- a member's own progress, 0..1, kept as the highest value reported (across retries too)
ALTER TABLE {s}.tenure_jobs ADD COLUMN progress double precision NOT NULL DEFAULT 0;
CREATE INDEX tenure_jobs_batch ON {s}.tenure_jobs (batch_id, state) WHERE batch_id IS NOT NULL;

CREATE TABLE {s}.tenure_batches (
    id text PRIMARY KEY,
    seq bigint GENERATED ALWAYS AS IDENTITY,  -- creation order, the tie-break for listing
    name text NOT NULL,
    state text NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
    declared_total integer,
    jobs integer NOT NULL DEFAULT 0,
    done integer NOT NULL DEFAULT 0,
    failed integer NOT NULL DEFAULT 0,
    cancelled integer NOT NULL DEFAULT 0,
    allow_failures boolean NOT NULL DEFAULT false,
    catch_sent boolean NOT NULL DEFAULT false,
    finished boolean NOT NULL DEFAULT false,
    -- {"then": job, "catch": job, "finally": job}: written at creation, enqueued once, later
    callbacks text NOT NULL,
    then_job_id text,
    catch_job_id text,
    finally_job_id text,
    created_at double precision NOT NULL,
    finished_at double precision
);
CREATE INDEX tenure_batches_listing ON {s}.tenure_batches (created_at, seq);
