"""The PostgreSQL store's plumbing-facing half: lifecycle, batches, reading and operating
(what the CLI, the dashboard and the doctor ask), and the worker registry. No job changes state
here except through retry and forget; the queue's rules live in `tenure.stores.postgres`."""

from __future__ import annotations

from collections.abc import Sequence

from tenure.states import FINAL_STATES, JOB_STATES
from tenure.stores.base import (
    BatchRecord,
    EffectRecord,
    JobRecord,
    NewBatch,
    NewJob,
    WorkerRecord,
)
from tenure.stores.pg_sql import batches
from tenure.stores.pg_sql.database import POOL_MAX, Database
from tenure.stores.pg_sql.jobs import NOW, attempt_record, job_record


def usable_id(value: str) -> bool:
    """An id a person typed may hold a NUL, which PostgreSQL text cannot: no such job."""
    return "\x00" not in value


class PostgresOperations:
    """`postgresql://user@host/db?schema=NAME` (default schema: tenure)."""

    def __init__(self, url: str, *, pool_max: int = POOL_MAX) -> None:
        self.url = url
        self.db = Database(url, pool_max=pool_max)
        self.schema = self.db.schema

    def now(self) -> float:
        with self.db.cursor() as cur:
            return self.db.clock(cur)

    def migrate(self) -> None:
        self.db.migrate()

    def close(self) -> None:
        self.db.close()

    # -- batches -----------------------------------------------------------------------
    def create_batch(self, *, batch: NewBatch, jobs: Sequence[NewJob]) -> None:
        with self.db.transaction() as cur:
            batches.create(self.db, cur, batch, jobs, self.db.clock(cur))

    def add_to_batch(self, *, batch_id: str, jobs: Sequence[NewJob]) -> int:
        with self.db.transaction() as cur:
            return batches.add(self.db, cur, batch_id, jobs, self.db.clock(cur))

    def cancel_batch(self, batch_id: str) -> bool:
        if not usable_id(batch_id):
            return False
        with self.db.transaction() as cur:
            return batches.cancel(self.db, cur, batch_id, self.db.clock(cur))

    def get_batch(self, batch_id: str) -> BatchRecord | None:
        if not usable_id(batch_id):
            return None
        with self.db.cursor() as cur:
            return batches.read(self.db, cur, batch_id)

    def list_batches(self, *, limit: int = 50) -> list[BatchRecord]:
        with self.db.cursor() as cur:
            return batches.list_recent(self.db, cur, limit)

    def report_progress(self, *, job_id: str, token: int, fraction: float) -> None:
        with self.db.cursor() as cur:
            batches.report_progress(self.db, cur, job_id, token, fraction)

    # -- reading and operating ---------------------------------------------------------
    def get_job(self, job_id: str) -> JobRecord | None:
        if not usable_id(job_id):
            return None
        with self.db.cursor() as cur:
            # One statement, one snapshot: the attempts and effects agree with the job row.
            row = cur.execute(
                self.db.q(
                    f"SELECT j.*, {NOW} AS now, coalesce((SELECT json_agg(a ORDER BY a.number)"
                    " FROM {s}.tenure_attempts a WHERE a.job_id = j.id), '[]') AS attempts,"
                    " coalesce((SELECT json_agg(o ORDER BY o.at, o.key) FROM {s}.tenure_once o"
                    " WHERE o.job_id = j.id), '[]') AS effects"
                    " FROM {s}.tenure_jobs j WHERE j.id = %s"
                ),
                (job_id,),
            ).fetchone()
        if row is None:
            return None
        return job_record(
            row,
            [attempt_record(a) for a in row["attempts"]],
            [EffectRecord(key=e["key"], attempt=e["attempt"], at=e["at"]) for e in row["effects"]],
        )

    def list_jobs(
        self, *, state: str | None = None, queue: str | None = None, limit: int = 100
    ) -> list[JobRecord]:
        where = ["true"]
        params: list[object] = []
        if state == "scheduled":
            where.append(f"state = 'queued' AND run_at > {NOW}")
        elif state == "queued":
            where.append(f"state = 'queued' AND run_at <= {NOW}")
        elif state is not None:
            where.append("state = %s")
            params.append(state)
        if queue is not None:
            where.append("queue = %s")
            params.append(queue)
        with self.db.cursor() as cur:
            rows = cur.execute(
                self.db.q(
                    f"SELECT *, {NOW} AS now FROM {{s}}.tenure_jobs WHERE {' AND '.join(where)}"
                    " ORDER BY created_at DESC, seq DESC LIMIT %s"
                ),
                (*params, limit),
            ).fetchall()
        return [job_record(r, []) for r in rows]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(JOB_STATES, 0)
        with self.db.cursor() as cur:
            rows = cur.execute(
                self.db.q(
                    f"SELECT CASE WHEN state = 'queued' AND run_at > {NOW} THEN 'scheduled'"
                    " ELSE state END AS s, count(*) AS n FROM {s}.tenure_jobs GROUP BY 1"
                )
            ).fetchall()
        for row in rows:
            out[row["s"]] = int(row["n"])
        return out

    def retry_job(self, job_id: str) -> bool:
        if not usable_id(job_id):
            return False
        with self.db.cursor() as cur:
            rows = cur.execute(
                self.db.q(
                    f"WITH r AS (UPDATE {{s}}.tenure_jobs SET state = 'queued', run_at = {NOW},"
                    " finished_at = NULL, tries_used = 0, exceptions = 0"
                    " WHERE id = %s AND state = 'failed' RETURNING queue)"
                    " SELECT pg_notify(%s, queue) FROM r"
                ),
                (job_id, self.db.channel),
            ).fetchall()
        return bool(rows)

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
    def register_worker(self, record: WorkerRecord) -> None:
        with self.db.cursor() as cur:
            cur.execute(
                self.db.q(
                    "INSERT INTO {s}.tenure_workers (id, host, pid, queues, concurrency,"
                    f" started_at, last_seen_at) VALUES (%s, %s, %s, %s, %s, {NOW}, {NOW})"
                    " ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
                    " queues = excluded.queues, concurrency = excluded.concurrency,"
                    " started_at = excluded.started_at, last_seen_at = excluded.last_seen_at,"
                    " stopped_at = NULL"
                ),
                (record.id, record.host, record.pid, list(record.queues), record.concurrency),
            )

    def worker_stopped(self, worker_id: str) -> None:
        with self.db.cursor() as cur:
            cur.execute(
                self.db.q(f"UPDATE {{s}}.tenure_workers SET stopped_at = {NOW} WHERE id = %s"),
                (worker_id,),
            )

    def list_workers(self) -> list[WorkerRecord]:
        with self.db.cursor() as cur:
            rows = cur.execute(
                self.db.q("SELECT * FROM {s}.tenure_workers ORDER BY started_at DESC")
            ).fetchall()
        return [
            WorkerRecord(
                id=r["id"],
                host=r["host"],
                pid=r["pid"],
                queues=tuple(r["queues"]),
                concurrency=r["concurrency"],
                started_at=r["started_at"],
                last_seen_at=r["last_seen_at"],
                stopped_at=r["stopped_at"],
            )
            for r in rows
        ]

    def request_restart(self) -> float:
        with self.db.cursor() as cur:
            row = cur.execute(
                self.db.q(
                    "INSERT INTO {s}.tenure_control (key, value)"
                    f" VALUES ('restart_at', ({NOW})::text)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value RETURNING value"
                )
            ).fetchone()
        assert row is not None
        return float(row["value"])

    def restart_requested_at(self) -> float | None:
        with self.db.cursor() as cur:
            row = cur.execute(
                self.db.q("SELECT value FROM {s}.tenure_control WHERE key = 'restart_at'")
            ).fetchone()
        return float(row["value"]) if row else None
