-- tenure on PostgreSQL, schema version 1. `{s}` is the schema, quoted by the migration runner.
-- Times are epoch seconds (double precision) on the server's clock, as the Store interface
-- speaks them; the lease arithmetic then reads the same on every backend.

CREATE TABLE {s}.tenure_jobs (
    id text PRIMARY KEY,
    -- enqueue order: the tie-break between jobs due at the same instant, so a batch enqueued
    -- in one call is reserved in the order it was given
    seq bigint GENERATED ALWAYS AS IDENTITY,
    name text NOT NULL,
    queue text NOT NULL,
    -- text, not jsonb: the payload comes back byte for byte (it may be encrypted or damaged,
    -- and a damaged one must fail its job with a reason, not the read)
    payload text NOT NULL,
    -- stored states only; "scheduled" is derived from run_at at read time
    state text NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    policy text NOT NULL,
    created_at double precision NOT NULL,
    run_at double precision NOT NULL,
    finished_at double precision,
    -- attempts opened so far; the current attempt's number is the fencing token
    attempt integer NOT NULL DEFAULT 0,
    tries_used integer NOT NULL DEFAULT 0,
    exceptions integer NOT NULL DEFAULT 0,
    lease_expires_at double precision,
    worker_id text,
    last_error text,
    batch_id text
);
-- reserve: the oldest due job of one queue; partial so finished jobs cost the index nothing
CREATE INDEX tenure_jobs_ready ON {s}.tenure_jobs (queue, run_at, seq) WHERE state = 'queued';
-- rescue_expired: running jobs by lease end
CREATE INDEX tenure_jobs_lease ON {s}.tenure_jobs (lease_expires_at) WHERE state = 'running';
-- list_jobs and `tenure failed list`: newest first within a state
CREATE INDEX tenure_jobs_listing ON {s}.tenure_jobs (state, created_at, seq);

CREATE TABLE {s}.tenure_attempts (
    job_id text NOT NULL REFERENCES {s}.tenure_jobs (id) ON DELETE CASCADE,
    number integer NOT NULL,
    worker_id text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    started_at double precision NOT NULL,
    ended_at double precision,
    outcome text,
    error text,
    traceback text,
    last_heartbeat_at double precision,
    PRIMARY KEY (job_id, number)
);

CREATE TABLE {s}.tenure_workers (
    id text PRIMARY KEY,
    host text NOT NULL,
    pid integer NOT NULL,
    queues text[] NOT NULL,
    concurrency integer NOT NULL,
    started_at double precision NOT NULL,
    last_seen_at double precision NOT NULL,
    stopped_at double precision
);

CREATE TABLE {s}.tenure_control (
    key text PRIMARY KEY,
    value text NOT NULL
);
