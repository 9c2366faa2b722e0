-- One ready index, and a failed or cancelled job in one index (issue 35). Every UPDATE of a
-- job's state (its claim, its end: two a job on the worker's hot path) opens and tests each
-- index that names `state`, and a queued job was in two ready indexes: its claim deleted an
-- entry from both.
--
-- tenure_jobs_ready (queue, state, run_at) is dropped. The claim already read
-- tenure_jobs_ready_by_priority (queue, state, priority, run_at); what the dropped index
-- answered is now read from that one, per priority in use (a loose index scan: one seek for
-- each priority, then the range or the first entry within it): the fair-share head and the
-- oldest queued job (ready.FAIR_HEAD), the scheduled and parked counts per queue
-- (ready.SCHEDULED). The counts of queued jobs scan the priority index (covering), and the
-- listing of queued or scheduled jobs reads it by queue.
--
-- tenure_jobs_state (state, queue) and tenure_jobs_prune_failed (state, finished_at +
-- keep_failed) held the same failed and cancelled jobs (the second without batch members):
-- one index now, retention's range first and the queue as the key's last column, as migration
-- 0015 did for succeeded jobs. Retention's statement still says `batch_id IS NULL` and skips
-- batch members as it reads its range; the counts scan it (covering), the listing by state
-- reads that state's range.
DROP INDEX tenure_jobs_ready;
DROP INDEX tenure_jobs_prune_failed;
DROP INDEX tenure_jobs_state;
CREATE INDEX tenure_jobs_state ON tenure_jobs (state, finished_at + keep_failed, queue)
    WHERE state IN ('failed', 'cancelled');
