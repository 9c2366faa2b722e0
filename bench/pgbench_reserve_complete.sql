-- tenure's reserve and complete on PostgreSQL, as src/tenure/stores/postgres.py issues them
-- (one job per reserve; worker id, host and pid fixed). Keep in step with that file. One
-- transaction per job, as a busy worker's complete_and_reserve commits one per job.
-- (Run with -M prepared: :job_id is sent as a bound parameter, so it needs no quoting.)
BEGIN;
WITH picked AS (SELECT id FROM tenure.tenure_jobs WHERE queue = 'default'
    AND state = 'queued' AND run_at <= date_part('epoch', now())
    ORDER BY run_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED),
  claimed AS (UPDATE tenure.tenure_jobs j SET state = 'running', attempt = j.attempt + 1,
    lease_expires_at = date_part('epoch', now()) + 30, worker_id = 'w-pgbench'
    FROM picked WHERE j.id = picked.id
    RETURNING j.id, j.attempt),
  opened AS (INSERT INTO tenure.tenure_attempts (job_id, number, worker_id, host, pid,
    started_at, last_heartbeat_at)
    SELECT id, attempt, 'w-pgbench', 'bench', 1, date_part('epoch', now()),
    date_part('epoch', now()) FROM claimed)
SELECT id AS job_id, attempt AS token FROM claimed \gset
WITH done AS (UPDATE tenure.tenure_jobs SET state = 'succeeded',
    finished_at = date_part('epoch', now()), lease_expires_at = NULL,
    tries_used = tries_used + 1 WHERE id = :job_id AND attempt = :token
    AND state = 'running' RETURNING id),
  closed AS (UPDATE tenure.tenure_attempts SET ended_at = date_part('epoch', now()),
    outcome = 'succeeded', error = NULL, traceback = NULL FROM done
    WHERE job_id = done.id AND number = :token)
SELECT count(*) AS n FROM done;
COMMIT;
