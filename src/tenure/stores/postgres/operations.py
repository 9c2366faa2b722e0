"""The PostgreSQL store's plumbing-facing half: lifecycle, batches, reading and operating
(what the CLI, the dashboard and the doctor ask), and the worker registry. No job changes state
here except through retry, cancel and forget; the queue's rules live in
`tenure.stores.postgres`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tenure.states import FINAL_STATES
from tenure.stores.base import (
    BatchRecord,
    CancelResult,
    JobRecord,
    QueueCounts,
    WorkerRecord,
    cancel_target,
    ready_age,
)
from tenure.stores.postgres.database import POOL_MAX, Database
from tenure.stores.postgres.dialect import PostgresDialect
from tenure.stores.postgres.jobs import NOW
from tenure.stores.sql import batches, control, operations, workers
from tenure.stores.sql.dialect import Dialect
from tenure.stores.sql.rows import attempt_record, effect_record, job_record

# Counter rows left by disconnected backends that a read tolerates before folding them.
FOLD_AFTER_ROWS = 256


def usable_id(value: str) -> bool:
    """An id a person typed may hold a NUL, which PostgreSQL text cannot: no such job."""
    return "\x00" not in value


class PostgresOperations:
    """`postgresql://user@host/db?schema=NAME` (default schema: tenure)."""

    def __init__(self, url: str, *, pool_max: int = POOL_MAX) -> None:
        self.url = url
        self.db = Database(url, pool_max=pool_max)
        self.dialect: Dialect = PostgresDialect(self.db)
        self.schema = self.db.schema

    def now(self) -> float:
        with self.db.cursor() as cur:
            return self.db.clock(cur)

    def migrate(self) -> None:
        self.db.migrate()

    def close(self) -> None:
        self.db.close()

    # -- batches -----------------------------------------------------------------------
    def list_batches(
        self, *, ids: Sequence[str] | None = None, limit: int = 50
    ) -> list[BatchRecord]:
        if ids is not None:
            ids = [i for i in ids if usable_id(i)]
        with self.db.cursor() as cur:
            return batches.list_batches(self.dialect, cur, ids, limit)

    def report_progress(self, *, job_id: str, token: int, fraction: float) -> None:
        with self.db.cursor() as cur:
            batches.report_progress(self.dialect, cur, job_id, token, fraction)

    # -- reading and operating ---------------------------------------------------------
    def list_jobs(
        self,
        *,
        ids: Sequence[str] | None = None,
        state: str | None = None,
        queue: str | None = None,
        limit: int = 100,
    ) -> list[JobRecord]:
        if ids is None:
            with self.db.cursor() as cur:
                return operations.list_jobs(
                    self.dialect, cur, state=state, queue=queue, limit=limit
                )
        wanted = [job_id for job_id in dict.fromkeys(ids) if usable_id(job_id)]
        if not wanted:
            return []
        with self.db.cursor() as cur:
            # One statement, one snapshot: the attempts and effects agree with the job rows.
            rows = cur.execute(
                self.db.q(
                    f"SELECT j.*, {NOW} AS now, coalesce((SELECT json_agg(a ORDER BY a.number)"
                    " FROM {s}.tenure_attempts a WHERE a.job_id = j.id), '[]') AS attempts,"
                    " coalesce((SELECT json_agg(o ORDER BY o.at, o.key) FROM {s}.tenure_once o"
                    " WHERE o.job_id = j.id), '[]') AS effects"
                    " FROM {s}.tenure_jobs j WHERE j.id = ANY(%s)"
                ),
                (wanted,),
            ).fetchall()
        found = {
            row["id"]: job_record(
                row,
                row["now"],
                [attempt_record(a) for a in row["attempts"]],
                [effect_record(e) for e in row["effects"]],
            )
            for row in rows
        }
        return [found[job_id] for job_id in wanted if job_id in found]

    def queue_counts(self) -> dict[str, QueueCounts]:
        out: dict[str, QueueCounts] = {}
        with self.db.cursor() as cur:
            # One statement, one snapshot: the counters (kept by the triggers of migration
            # 0004) and the scheduled jobs counted beside them agree. Scheduled ones are an
            # index range of tenure_jobs_ready per queue that has queued jobs at all, and the
            # oldest ready job that index's first entry for the queue.
            rows = cur.execute(
                self.db.q(
                    "WITH c AS (SELECT queue, state, sum(n) AS n,"
                    " count(*) FILTER (WHERE shard <> 0 AND NOT EXISTS"
                    " (SELECT FROM pg_stat_activity a WHERE a.pid = shard)) AS gone"
                    " FROM {s}.tenure_job_counts GROUP BY queue, state)"
                    " SELECT queue, state, n, gone, CASE WHEN state = 'queued' AND n > 0"
                    " THEN (SELECT count(*) FROM {s}.tenure_jobs j WHERE j.ready_queue = c.queue"
                    f" AND j.run_at > {NOW}) ELSE 0 END AS scheduled,"
                    " CASE WHEN state = 'queued' AND n > 0 THEN (SELECT j.run_at"
                    " FROM {s}.tenure_jobs j WHERE j.ready_queue = c.queue"
                    f" ORDER BY j.run_at LIMIT 1) END AS oldest, {NOW} AS now"
                    " FROM c"
                )
            ).fetchall()
            paused = control.paused_queues(self.dialect, cur)
        gone = 0
        for row in rows:
            gone += int(row["gone"])
            n = int(row["n"])
            if n == 0:
                continue  # a queue whose jobs were all forgotten, or moved on
            counts = out.setdefault(row["queue"], QueueCounts())
            counts[row["state"]] += n
            if row["state"] == "queued":
                counts["queued"] -= int(row["scheduled"])
                counts["scheduled"] += int(row["scheduled"])
                counts.oldest_ready_age = ready_age(row["now"], row["oldest"])
        for queue in paused:
            out.setdefault(queue, QueueCounts()).paused = True
        if gone > FOLD_AFTER_ROWS:
            self._fold_counts()
        return out

    def _fold_counts(self) -> None:
        """Move the counter rows of backends that have disconnected into shard 0.

        Each backend writes rows of its own (see 0004_counters.sql), so every connection a
        pool ever opened would leave rows behind; reading sums them, and folding keeps that
        sum over a few rows. Rows still locked (a reused pid writing right now) are skipped,
        not waited for: the next fold takes them."""
        with self.db.transaction() as cur:
            cur.execute(
                self.db.q(
                    "WITH gone AS (DELETE FROM {s}.tenure_job_counts WHERE (queue, state, shard)"
                    " IN (SELECT queue, state, shard FROM {s}.tenure_job_counts"
                    " WHERE shard <> 0 AND NOT EXISTS"
                    " (SELECT FROM pg_stat_activity a WHERE a.pid = shard)"
                    " FOR UPDATE SKIP LOCKED) RETURNING queue, state, n)"
                    " INSERT INTO {s}.tenure_job_counts AS c (queue, state, shard, n)"
                    " SELECT queue, state, 0, sum(n) FROM gone GROUP BY queue, state"
                    # the same lock order as the triggers: two folds never deadlock
                    " ORDER BY queue, state"
                    " ON CONFLICT (queue, state, shard) DO UPDATE SET n = c.n + excluded.n"
                )
            )
            cur.execute(self.db.q("DELETE FROM {s}.tenure_job_counts WHERE shard = 0 AND n = 0"))

    def retry_job(self, job_id: str) -> bool:
        if not usable_id(job_id):
            return False
        with self.db.transaction() as cur:
            return operations.retry_job(self.dialect, cur, job_id, self.db.clock(cur))

    def forget_job(self, job_id: str) -> bool:
        if not usable_id(job_id):
            return False
        with self.db.cursor() as cur:
            # attempts and once() records go with the job (ON DELETE CASCADE)
            cur.execute(
                self.db.q("DELETE FROM {s}.tenure_jobs WHERE id = %s AND state = ANY(%s)"),
                (job_id, sorted(FINAL_STATES)),
            )
            return cur.rowcount > 0

    # -- workers -----------------------------------------------------------------------
    def list_workers(self) -> list[WorkerRecord]:
        with self.db.cursor() as cur:
            return workers.list_all(self.dialect, cur)

    # -- cancelling, pausing, restarting -------------------------------------------------------
    def cancel(self, job_id: str | None = None, *, batch_id: str | None = None) -> CancelResult:
        kind, target = cancel_target(job_id, batch_id)
        if not usable_id(target):
            return CancelResult(accepted=False, state="missing")
        with self.db.transaction() as cur:
            if kind == "batch":
                # the batch row, then its queued members: the lock order of every batch change
                return control.cancel_batch(self.dialect, cur, target, self.db.clock(cur))
            return control.cancel(self.dialect, cur, target, lambda: self.db.clock(cur))

    def set_control(
        self, *, paused: Mapping[str, bool] | None = None, restart: bool = False
    ) -> float:
        with self.db.transaction() as cur:
            return control.set_control(self.dialect, cur, paused or {}, restart, self.db.clock(cur))
