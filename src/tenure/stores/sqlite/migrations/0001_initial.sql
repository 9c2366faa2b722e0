-- Schema version 1: jobs, attempts, guards, once() records, batches, workers, control.
-- IF NOT EXISTS because files written before numbered migrations hold this schema already.
CREATE TABLE IF NOT EXISTS tenure_jobs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    queue TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,              -- queued | running | succeeded | failed | cancelled
    policy TEXT NOT NULL,             -- retry.Policy as JSON: the rules the job was sent with
    created_at REAL NOT NULL,
    run_at REAL NOT NULL,
    finished_at REAL,
    attempt INTEGER NOT NULL DEFAULT 0,   -- attempts opened; the current one's number is the token
    tries_used INTEGER NOT NULL DEFAULT 0,
    exceptions INTEGER NOT NULL DEFAULT 0,
    lease_expires_at REAL,
    worker_id TEXT,
    last_error TEXT,
    batch_id TEXT,
    progress REAL NOT NULL DEFAULT 0,     -- a batch member's own progress, 0..1
    overlap_key TEXT,                     -- at most one running attempt per key
    overlap_delay REAL,
    rate_key TEXT,                        -- at most rate_limit starts per rate_window s
    rate_limit INTEGER,
    rate_window REAL
);
CREATE INDEX IF NOT EXISTS tenure_jobs_overlap ON tenure_jobs (overlap_key, state)
    WHERE overlap_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS tenure_unique (
    key TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    until TEXT NOT NULL,                  -- completed | processing
    expires_at REAL                       -- unique_for: the key is free after this time
);
CREATE TABLE IF NOT EXISTS tenure_rate_starts (
    key TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tenure_rate_starts_key ON tenure_rate_starts (key, at);
CREATE TABLE IF NOT EXISTS tenure_once (
    job_id TEXT NOT NULL,
    key TEXT NOT NULL,
    attempt INTEGER NOT NULL,             -- the attempt that claimed the effect
    at REAL NOT NULL,
    PRIMARY KEY (job_id, key)
);
CREATE INDEX IF NOT EXISTS tenure_jobs_ready ON tenure_jobs (queue, state, run_at);
CREATE INDEX IF NOT EXISTS tenure_jobs_batch ON tenure_jobs (batch_id, state);
CREATE TABLE IF NOT EXISTS tenure_batches (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    state TEXT NOT NULL,              -- running | succeeded | failed | cancelled
    declared_total INTEGER,
    jobs INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    cancelled INTEGER NOT NULL DEFAULT 0,
    allow_failures INTEGER NOT NULL DEFAULT 0,
    catch_sent INTEGER NOT NULL DEFAULT 0,
    finished INTEGER NOT NULL DEFAULT 0,
    callbacks TEXT NOT NULL,          -- {"then": NewJob as JSON, ...}: enqueued once, later
    then_job_id TEXT,
    catch_job_id TEXT,
    finally_job_id TEXT,
    created_at REAL NOT NULL,
    finished_at REAL
);
CREATE INDEX IF NOT EXISTS tenure_jobs_lease ON tenure_jobs (state, lease_expires_at);
CREATE TABLE IF NOT EXISTS tenure_attempts (
    job_id TEXT NOT NULL,
    number INTEGER NOT NULL,
    worker_id TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL,
    outcome TEXT,
    error TEXT,
    traceback TEXT,
    last_heartbeat_at REAL,
    PRIMARY KEY (job_id, number)
);
CREATE TABLE IF NOT EXISTS tenure_workers (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    queues TEXT NOT NULL,
    concurrency INTEGER NOT NULL,
    started_at REAL NOT NULL,
    last_seen_at REAL NOT NULL,
    stopped_at REAL
);
CREATE TABLE IF NOT EXISTS tenure_control (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
