-- Flow control held in the store: at most concurrency_limit attempts running per
-- concurrency_key (a job over its limit is parked: run_at = states.PARKED_AT, until a running
-- attempt of its key ends and hands it back), debounce (one pending job per debounce_key), and
-- fair share (round robin across fair keys, by virtual start times).
ALTER TABLE tenure_jobs ADD COLUMN concurrency_key TEXT;
ALTER TABLE tenure_jobs ADD COLUMN concurrency_limit INTEGER;
ALTER TABLE tenure_jobs ADD COLUMN debounce_key TEXT;
-- the running attempts of a key (counted at reserve) and its parked jobs, oldest first
CREATE INDEX tenure_jobs_concurrency ON tenure_jobs (concurrency_key, state, run_at)
    WHERE concurrency_key IS NOT NULL;
-- the pending job of a debounce key
CREATE INDEX tenure_jobs_debounce ON tenure_jobs (debounce_key)
    WHERE debounce_key IS NOT NULL AND state = 'queued';
-- Fair share: per queue, each fair key's next virtual start ('k:' + key), and under key '' the
-- largest handed out (the queue's virtual now when none of its fair jobs is queued).
CREATE TABLE tenure_fair (
    queue TEXT NOT NULL,
    key TEXT NOT NULL,
    next_vt REAL NOT NULL,
    PRIMARY KEY (queue, key)
);
