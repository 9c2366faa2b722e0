-- Concurrency slots counted in one row per key, so a claim takes a slot in its own statement:
-- it locks the key's row (FOR UPDATE SKIP LOCKED: a busy key is left for the next pass, never
-- waited for), adds what it grants to `running` and parks the rest, all in one round trip. An
-- ending attempt takes one off (waiting for the row's lock, so a park committed meanwhile is
-- seen by the hand-back that follows). `granted`: what the last claim took, read back by it.
-- A key without a row is claimed by the slow path, which makes the row: retention deletes the
-- rows of keys with nothing running and no live job.
CREATE TABLE {s}.tenure_concurrency (
    key text PRIMARY KEY,
    running integer NOT NULL,
    granted integer NOT NULL DEFAULT 0
);
INSERT INTO {s}.tenure_concurrency (key, running)
    SELECT concurrency_key, count(*) FILTER (WHERE state = 'running')
    FROM {s}.tenure_jobs WHERE concurrency_key IS NOT NULL AND state IN ('queued', 'running')
    GROUP BY concurrency_key;
-- Retention deletes the fair keys' turns no dispatch needs any more (at or before their
-- queue's virtual now): found by this range, not by reading every key's row.
CREATE INDEX tenure_fair_turns ON {s}.tenure_fair (queue, next_vt);
