-- Flow control held in the store: at most concurrency_limit attempts running per
-- concurrency_key (a job over its limit is parked: run_at = states.PARKED_AT, until a running
-- attempt of its key ends and hands it back), debounce (one pending job per debounce_key), and
-- fair share (round robin across fair keys, by virtual start times).
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
-- Fair share: per queue, each fair key's next virtual start ('k:' + key), and under key '' the
-- largest handed out (the queue's virtual now when none of its fair jobs is queued).
CREATE TABLE {s}.tenure_fair (
    queue text NOT NULL,
    key text NOT NULL,
    next_vt double precision NOT NULL,
    PRIMARY KEY (queue, key)
);
