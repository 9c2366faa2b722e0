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
-- Not done: tenure_attempts as a WITHOUT ROWID table. Job ids are random, so the attempt
-- closed and the attempt opened in one transaction are on two leaves either way (measured:
-- no page and no instruction saved), and the rebuild would hold the write lock for as long
-- as copying every attempt of a large store takes.
