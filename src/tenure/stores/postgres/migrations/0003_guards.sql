-- Guards against duplicate work (uniqueness, overlap, rate limits) and once() effects, held in
-- the store so every host sees the same locks. Applied once, under the migration lock.

-- written at enqueue from the job's own arguments; checked by reserve
ALTER TABLE {s}.tenure_jobs
    ADD COLUMN overlap_key text,            -- at most one running attempt per key
    ADD COLUMN overlap_delay double precision,
    ADD COLUMN rate_key text,               -- at most rate_limit starts per rate_window s
    ADD COLUMN rate_limit integer,
    ADD COLUMN rate_window double precision;
-- reserve: is a job with this overlap key running? Partial, so only running jobs cost it
CREATE INDEX tenure_jobs_overlap ON {s}.tenure_jobs (overlap_key)
    WHERE overlap_key IS NOT NULL AND state = 'running';

-- one row per unique key: the job holding it. The primary key is the lock two dispatches of one
-- key meet on (INSERT ... ON CONFLICT), so exactly one of them stores a job.
CREATE TABLE {s}.tenure_unique (
    key text PRIMARY KEY,
    job_id text NOT NULL,
    until text NOT NULL CHECK (until IN ('completed', 'processing')),
    expires_at double precision             -- unique_for: the key is free after this time
);

-- recent starts per rate key: the sliding window
CREATE TABLE {s}.tenure_rate_starts (
    key text NOT NULL,
    at double precision NOT NULL
);
CREATE INDEX tenure_rate_starts_key ON {s}.tenure_rate_starts (key, at);

-- once(key): the effect recorded before it runs, and the attempt that claimed it
CREATE TABLE {s}.tenure_once (
    job_id text NOT NULL REFERENCES {s}.tenure_jobs (id) ON DELETE CASCADE,
    key text NOT NULL,
    attempt integer NOT NULL,
    at double precision NOT NULL,
    PRIMARY KEY (job_id, key)
);
