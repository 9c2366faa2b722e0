-- Job counts per queue and state, kept by triggers, so that counts() and the dashboard read a
-- table of a few rows instead of counting a jobs table of millions (issue 9: 98 ms for
-- `succeeded` alone at 1,000,000 jobs). Triggers rather than bookkeeping in each store verb:
-- every path that changes a job's state (reserve, complete, end, rescue, retry, forget, batch
-- cancel, a hand edit) is counted, including paths written later.
--
-- "scheduled" is not counted here: it is a queued job whose run_at is in the future, which
-- changes with the clock and no write. The reader counts it from tenure_jobs_ready (partial on
-- state = 'queued'), an index range of the scheduled jobs alone.

-- One row per (queue, state, shard); a count is sum(n) over the shards. shard is the writing
-- backend's pid, so no two open transactions ever write the same row: a worker never waits
-- on another's counter row, a transaction holding one for long (an application transaction
-- that enqueued) blocks nobody, and no order of statements across transactions can deadlock.
-- shard 0 holds the backfill and the rows folded in from backends that have gone.
CREATE TABLE {s}.tenure_job_counts (
    queue text NOT NULL,
    state text NOT NULL,
    shard integer NOT NULL,
    n bigint NOT NULL,
    PRIMARY KEY (queue, state, shard)
) WITH (fillfactor = 50);  -- room on each page for HOT updates: n is updated constantly

-- Statement-level triggers with transition tables: one upsert per statement, however many rows
-- it changed (enqueue_many of 10,000 jobs is one aggregate, not 10,000 upserts). The deltas are
-- upserted ORDER BY queue, state, so even rows of one shard are always locked in one order.
CREATE FUNCTION {s}.tenure_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {s}.tenure_job_counts AS c (queue, state, shard, n)
    SELECT queue, state, pg_backend_pid(), count(*) FROM tenure_new_rows
    GROUP BY queue, state ORDER BY queue, state
    ON CONFLICT (queue, state, shard) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
END $$;

CREATE FUNCTION {s}.tenure_count_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- +1 for each row's new (queue, state), -1 for its old one: rows whose queue and state did
    -- not change (heartbeats, progress, deferrals, a retry's new run_at) cancel out and write
    -- nothing. An UPDATE OF state, queue trigger would skip them sooner, but PostgreSQL allows
    -- no transition tables on a trigger with a column list.
    INSERT INTO {s}.tenure_job_counts AS c (queue, state, shard, n)
    SELECT queue, state, pg_backend_pid(), sum(d) FROM (
        SELECT queue, state, 1 AS d FROM tenure_new_rows
        UNION ALL
        SELECT queue, state, -1 AS d FROM tenure_old_rows
    ) moved
    GROUP BY queue, state HAVING sum(d) <> 0 ORDER BY queue, state
    ON CONFLICT (queue, state, shard) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
END $$;

CREATE FUNCTION {s}.tenure_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {s}.tenure_job_counts AS c (queue, state, shard, n)
    SELECT queue, state, pg_backend_pid(), -count(*) FROM tenure_old_rows
    GROUP BY queue, state ORDER BY queue, state
    ON CONFLICT (queue, state, shard) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
END $$;

CREATE FUNCTION {s}.tenure_count_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {s}.tenure_job_counts;  -- an emptied jobs table counts nothing
    RETURN NULL;
END $$;

-- Writers wait from here to this migration's commit (reads go on): the backfill below and the
-- triggers then start from one instant, and no job written meanwhile is missed or counted twice.
LOCK TABLE {s}.tenure_jobs IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER tenure_count_inserted AFTER INSERT ON {s}.tenure_jobs
    REFERENCING NEW TABLE AS tenure_new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {s}.tenure_count_inserted();
CREATE TRIGGER tenure_count_updated AFTER UPDATE ON {s}.tenure_jobs
    REFERENCING OLD TABLE AS tenure_old_rows NEW TABLE AS tenure_new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {s}.tenure_count_updated();
CREATE TRIGGER tenure_count_deleted AFTER DELETE ON {s}.tenure_jobs
    REFERENCING OLD TABLE AS tenure_old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {s}.tenure_count_deleted();
CREATE TRIGGER tenure_count_truncated AFTER TRUNCATE ON {s}.tenure_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION {s}.tenure_count_truncated();

INSERT INTO {s}.tenure_job_counts (queue, state, shard, n)
SELECT queue, state, 0, count(*) FROM {s}.tenure_jobs GROUP BY queue, state;
