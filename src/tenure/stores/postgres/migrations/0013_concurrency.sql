-- Flow control held in the store: at most concurrency_limit attempts running per
-- concurrency_key (a job over its limit is parked: run_at = states.PARKED_AT, until a running
-- attempt of its key ends and hands it back), and debounce (one pending job per debounce_key).
ALTER TABLE {s}.tenure_jobs
    ADD COLUMN concurrency_key text,
    ADD COLUMN concurrency_limit integer,
    ADD COLUMN debounce_key text;
-- the running attempts of a key (counted at reserve) and its parked jobs, oldest first
CREATE INDEX tenure_jobs_concurrency ON {s}.tenure_jobs (concurrency_key, state, run_at, seq)
    WHERE concurrency_key IS NOT NULL;
-- the pending job of a debounce key
CREATE INDEX tenure_jobs_debounce ON {s}.tenure_jobs (debounce_key)
    WHERE debounce_key IS NOT NULL AND state = 'queued';
