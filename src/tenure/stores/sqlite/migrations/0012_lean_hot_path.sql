-- The worker's hot path writes fewer pages per job (issue 35): every page a commit touches is
-- one more 4 KB frame in the WAL, and the engine's own guaranteed loop writes 4.5 a job where
-- tenure wrote 10.8 (bench/proposals.md).
--
-- tenure_jobs_state held every job, so a job's walk moved its entry three times (queued ->
-- running -> succeeded: three leaf pages a job). Queued jobs are in tenure_jobs_ready and
-- running ones in tenure_jobs_lease already; it now holds the finished ones only. Every reader
-- of counts or listings by state names the condition of the index it reads (SQLite uses a
-- partial index only when the query states its condition): LIVE_SQL in sql/operations.py,
-- `state = 'queued'` and `state = 'running'`. Two values, not the three finished states: SQLite
-- tests a list of three or more by building a temporary table, at every UPDATE of a job's state
-- (the hot path's two), where two are two comparisons.
DROP INDEX tenure_jobs_state;
CREATE INDEX tenure_jobs_state ON tenure_jobs (state, queue)
    WHERE state NOT IN ('queued', 'running');
-- tenure_attempts is read and written by its key (job_id, number) only: as a WITHOUT ROWID
-- table its rows live in the key's own B-tree, so an attempt opened writes one B-tree, not the
-- table and its key index. SQLite cannot change a table's kind in place: rebuilt, rows kept.
CREATE TABLE tenure_attempts_0012 (
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
    cause TEXT,
    PRIMARY KEY (job_id, number)
) WITHOUT ROWID;
INSERT INTO tenure_attempts_0012 (job_id, number, worker_id, host, pid, started_at, ended_at,
    outcome, error, traceback, last_heartbeat_at, cause)
    SELECT job_id, number, worker_id, host, pid, started_at, ended_at, outcome, error,
        traceback, last_heartbeat_at, cause FROM tenure_attempts;
DROP TABLE tenure_attempts;
ALTER TABLE tenure_attempts_0012 RENAME TO tenure_attempts;
