"""The PostgreSQL store: many worker hosts on one database.

Reservation takes rows with `FOR UPDATE SKIP LOCKED`, so concurrent workers never wait on each
other and never claim the same job; idle workers sleep on `LISTEN` and wake on the `NOTIFY`
that enqueue and requeue send. Every time comes from the server, never from a worker, so a
worker host with a skewed clock cannot shorten or stretch a lease.

The clock, precisely: a statement that runs alone (autocommit) reads `now()`, which is the
start of its own transaction, i.e. of the statement. Such statements never wait on a row lock
for long (reservation skips locked rows; the others touch only jobs their caller holds), and an
early instant errs the safe way: a lease written from it ends slightly sooner, never later, and
an expiry check made with it rescues slightly later, never early. Transactions of several
statements lock their rows first and then read `clock_timestamp()` once, so a lock wait cannot
age the instant they decide with.

Plumbing (pool, migrations, LISTEN connection) lives in `tenure.stores.pg_sql.database`.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg.rows import DictRow

from tenure.retry import Counters, Policy, decide
from tenure.states import FINAL_STATES, JOB_STATES, visible_state
from tenure.stores.base import (
    AttemptRecord,
    BatchRecord,
    EndResult,
    JobRecord,
    NewBatch,
    NewJob,
    Rescued,
    Reservation,
    WorkerRecord,
    WorkerRef,
    describe_crash,
)
from tenure.stores.pg_sql import batches
from tenure.stores.pg_sql.database import POOL_MAX, Cursor, Database
from tenure.stores.pg_sql.jobs import NOW, attempt_record, insert_jobs, job_record


class PostgresStore:
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

    # -- jobs through their life -------------------------------------------------------
    def enqueue_many(self, jobs: Sequence[NewJob]) -> None:
        with self.db.cursor() as cur:
            insert_jobs(self.db, cur, jobs)

    def reserve(
        self, *, queues: Sequence[str], worker: WorkerRef, lease: float, limit: int = 1
    ) -> list[Reservation]:
        out: list[Reservation] = []
        with self.db.cursor() as cur:
            for queue in queues:  # priority order: drain earlier queues first
                if len(out) >= limit:
                    break
                # One statement per queue, atomic on its own: SKIP LOCKED passes over rows
                # another worker is claiming, and a row claimed and committed meanwhile fails
                # the re-checked `state = 'queued'`, so no job is handed out twice.
                rows = cur.execute(
                    self.db.q(
                        "WITH picked AS (SELECT id FROM {s}.tenure_jobs WHERE queue = %(queue)s"
                        f" AND state = 'queued' AND run_at <= {NOW}"
                        " ORDER BY run_at, seq LIMIT %(limit)s FOR UPDATE SKIP LOCKED),"
                        " claimed AS (UPDATE {s}.tenure_jobs j SET state = 'running',"
                        f" attempt = j.attempt + 1, lease_expires_at = {NOW} + %(lease)s,"
                        " worker_id = %(worker)s FROM picked WHERE j.id = picked.id"
                        " RETURNING j.id, j.name, j.queue, j.payload, j.policy, j.attempt,"
                        " j.lease_expires_at, j.batch_id, j.run_at, j.seq),"
                        " opened AS (INSERT INTO {s}.tenure_attempts (job_id, number, worker_id,"
                        " host, pid, started_at, last_heartbeat_at)"
                        f" SELECT id, attempt, %(worker)s, %(host)s, %(pid)s, {NOW}, {NOW}"
                        " FROM claimed)"
                        " SELECT * FROM claimed ORDER BY run_at, seq"
                    ),
                    {
                        "queue": queue,
                        "limit": limit - len(out),
                        "lease": float(lease),
                        "worker": worker.id,
                        "host": worker.host,
                        "pid": worker.pid,
                    },
                ).fetchall()
                out.extend(
                    Reservation(
                        job_id=r["id"],
                        name=r["name"],
                        queue=r["queue"],
                        payload=r["payload"],
                        policy=Policy.from_json(r["policy"]),
                        attempt=r["attempt"],
                        token=r["attempt"],
                        lease_expires_at=r["lease_expires_at"],
                        batch_id=r["batch_id"],
                    )
                    for r in rows
                )
        return out

    def heartbeat(
        self, *, worker: WorkerRef, leases: Sequence[tuple[str, int]], lease: float
    ) -> list[str]:
        with self.db.cursor() as cur:
            rows = cur.execute(
                self.db.q(
                    "WITH held AS (SELECT * FROM unnest(%(ids)s::text[], %(tokens)s::int[])"
                    " AS h(id, token)),"
                    f" renewed AS (UPDATE {{s}}.tenure_jobs j SET lease_expires_at = {NOW}"
                    " + %(lease)s FROM held WHERE j.id = held.id AND j.attempt = held.token"
                    f" AND j.state = 'running' AND j.lease_expires_at >= {NOW}"
                    " RETURNING j.id, j.attempt),"
                    f" beat AS (UPDATE {{s}}.tenure_attempts a SET last_heartbeat_at = {NOW}"
                    " FROM renewed r WHERE a.job_id = r.id AND a.number = r.attempt),"
                    f" seen AS (UPDATE {{s}}.tenure_workers SET last_seen_at = {NOW}"
                    " WHERE id = %(worker)s)"
                    " SELECT id FROM renewed"
                ),
                {
                    "ids": [job_id for job_id, _ in leases],
                    "tokens": [token for _, token in leases],
                    "lease": float(lease),
                    "worker": worker.id,
                },
            ).fetchall()
        renewed = {r["id"] for r in rows}
        return [job_id for job_id, _ in leases if job_id not in renewed]

    def complete(self, *, job_id: str, token: int) -> EndResult:
        with self.db.transaction() as cur:
            # The fast path in one statement; a stale token matches no row and falls through.
            done = cur.execute(
                self.db.q(
                    f"WITH done AS (UPDATE {{s}}.tenure_jobs SET state = 'succeeded',"
                    f" finished_at = {NOW}, lease_expires_at = NULL,"
                    " tries_used = tries_used + 1 WHERE id = %(id)s AND attempt = %(token)s"
                    " AND state = 'running' RETURNING id, batch_id),"
                    f" closed AS (UPDATE {{s}}.tenure_attempts SET ended_at = {NOW},"
                    " outcome = 'succeeded', error = NULL, traceback = NULL FROM done"
                    " WHERE job_id = done.id AND number = %(token)s)"
                    " SELECT id, batch_id FROM done"
                ),
                {"id": job_id, "token": token},
            ).fetchone()
            if done is None:
                return self._refuse(cur, job_id, token, "succeeded")
            if done["batch_id"] is not None:
                batches.member_ended(
                    self.db, cur, done["batch_id"], "succeeded", self.db.clock(cur)
                )
            return EndResult(accepted=True, state="succeeded")

    def end_attempt(
        self,
        *,
        job_id: str,
        token: int,
        outcome: str,
        error: str,
        traceback: str | None = None,
        permanent: bool = False,
    ) -> EndResult:
        with self.db.transaction() as cur:
            # Fencing: only the holder of the current attempt may end it. An expired lease not
            # yet rescued is still honoured: nobody else has the job, and taking the result
            # avoids a needless re-run.
            job = cur.execute(
                self.db.q(
                    "SELECT id, queue, policy, tries_used, exceptions, batch_id"
                    " FROM {s}.tenure_jobs WHERE id = %s AND attempt = %s AND state = 'running'"
                    " FOR UPDATE"
                ),
                (job_id, token),
            ).fetchone()
            if job is None:
                return self._refuse(cur, job_id, token, outcome)
            now = self.db.clock(cur)
            self._close_attempt(cur, job_id, token, now, outcome, error, traceback)
            return self._apply_decision(cur, job, outcome, error, now, permanent)

    def _refuse(self, cur: Cursor, job_id: str, token: int, outcome: str) -> EndResult:
        """Record a late result that was refused, on the attempt that produced it."""
        note = (
            f"its worker reported '{outcome}' after the lease had been taken over; "
            "the late result was refused (fencing)"
        )
        cur.execute(
            self.db.q(
                "UPDATE {s}.tenure_attempts SET outcome = 'lost_lease',"
                " error = coalesce(error || '; ', '') || %s WHERE job_id = %s AND number = %s"
                " AND (outcome IS NULL OR outcome = 'crashed')"
            ),
            (note, job_id, token),
        )
        row = cur.execute(
            self.db.q(
                "SELECT state, run_at, date_part('epoch', clock_timestamp()) AS now"
                " FROM {s}.tenure_jobs WHERE id = %s"
            ),
            (job_id,),
        ).fetchone()
        state = visible_state(row["state"], row["run_at"], row["now"]) if row else "missing"
        return EndResult(accepted=False, state=state, reason="stale token: lease taken over")

    def _close_attempt(
        self,
        cur: Cursor,
        job_id: str,
        number: int,
        now: float,
        outcome: str,
        error: str | None,
        traceback: str | None,
    ) -> None:
        cur.execute(
            self.db.q(
                "UPDATE {s}.tenure_attempts SET ended_at = %s, outcome = %s, error = %s,"
                " traceback = %s WHERE job_id = %s AND number = %s"
            ),
            (now, outcome, error, traceback, job_id, number),
        )

    def _apply_decision(
        self, cur: Cursor, job: DictRow, outcome: str, error: str, now: float, permanent: bool
    ) -> EndResult:
        """Retry or fail the (locked) job by its own Policy: the one rule every store shares."""
        counters = Counters(job["tries_used"], job["exceptions"])
        decision = decide(
            Policy.from_json(job["policy"]), counters, outcome, now, permanent=permanent
        )
        c = decision.counters
        batch_id = job["batch_id"]
        if (
            decision.retry
            and batch_id is not None
            and batches.stops_new_work(self.db, cur, batch_id)
        ):
            # Its batch was cancelled or has failed: the retry would be wasted work.
            cur.execute(
                self.db.q(
                    "UPDATE {s}.tenure_jobs SET state = 'cancelled', finished_at = %s,"
                    " lease_expires_at = NULL, tries_used = %s, exceptions = %s,"
                    " last_error = %s WHERE id = %s"
                ),
                (now, c.tries_used, c.exceptions, error, job["id"]),
            )
            batches.member_ended(self.db, cur, batch_id, "cancelled", now)
            return EndResult(True, "cancelled", "its batch no longer runs new work")
        if decision.retry:
            cur.execute(
                self.db.q(
                    "UPDATE {s}.tenure_jobs SET state = 'queued', run_at = %s,"
                    " lease_expires_at = NULL, worker_id = NULL, tries_used = %s,"
                    " exceptions = %s, last_error = %s WHERE id = %s"
                ),
                (now + decision.delay, c.tries_used, c.exceptions, error, job["id"]),
            )
            if decision.delay <= 0:
                # handed back at once (interrupted, lost lease): wake an idle worker for it
                cur.execute("SELECT pg_notify(%s, %s)", (self.db.channel, job["queue"]))
                return EndResult(True, "queued", decision.reason, decision.delay)
            return EndResult(True, "scheduled", decision.reason, decision.delay)
        reason = f"{error}; failed because {decision.reason}"
        cur.execute(
            self.db.q(
                "UPDATE {s}.tenure_jobs SET state = 'failed', finished_at = %s,"
                " lease_expires_at = NULL, tries_used = %s, exceptions = %s, last_error = %s"
                " WHERE id = %s"
            ),
            (now, c.tries_used, c.exceptions, reason, job["id"]),
        )
        if batch_id is not None:
            batches.member_ended(self.db, cur, batch_id, "failed", now)
        return EndResult(True, "failed", decision.reason)

    def rescue_expired(self) -> list[Rescued]:
        rescued: list[Rescued] = []
        with self.db.transaction() as cur:
            now = self.db.clock(cur)
            # SKIP LOCKED: a job whose holder is heartbeating or ending it right now is not
            # ours to judge; if its lease really is gone, the next pass takes it.
            rows = cur.execute(
                self.db.q(
                    "SELECT j.id, j.queue, j.policy, j.tries_used, j.exceptions, j.batch_id,"
                    " j.attempt,"
                    " j.lease_expires_at, j.worker_id AS job_worker, a.worker_id, a.host, a.pid,"
                    " a.started_at, a.last_heartbeat_at FROM {s}.tenure_jobs j"
                    " LEFT JOIN {s}.tenure_attempts a ON a.job_id = j.id AND a.number = j.attempt"
                    " WHERE j.state = 'running' AND j.lease_expires_at < %s"
                    " ORDER BY j.lease_expires_at FOR UPDATE OF j SKIP LOCKED"
                ),
                (now,),
            ).fetchall()
            # Jobs of one batch may be among them: take their batch rows up front, in one
            # order, so two rescuers cannot each hold a batch the other waits for.
            batches.lock(self.db, cur, [r["batch_id"] for r in rows if r["batch_id"]])
            for row in rows:
                attempt = AttemptRecord(
                    job_id=row["id"],
                    number=row["attempt"],
                    # a missing attempt row (damaged data) must not stop the rescue
                    worker_id=row["worker_id"] or row["job_worker"] or "unknown",
                    host=row["host"] or "unknown host",
                    pid=row["pid"] or 0,
                    started_at=row["started_at"] or row["lease_expires_at"],
                    ended_at=None,
                    outcome=None,
                    error=None,
                    traceback=None,
                    last_heartbeat_at=row["last_heartbeat_at"],
                )
                error = describe_crash(attempt, row["lease_expires_at"])
                self._close_attempt(cur, row["id"], row["attempt"], now, "crashed", error, None)
                result = self._apply_decision(cur, row, "crashed", error, now, False)
                rescued.append(Rescued(row["id"], row["attempt"], result))
        return rescued

    def wait_for_work(self, *, queues: Sequence[str], timeout: float) -> None:
        # LISTEN/NOTIFY: an idle worker sleeps on a socket and wakes when enqueue, retry or a
        # hand-back commits; the caller's timeout is the bounded fallback poll (delayed jobs
        # coming due send no NOTIFY).
        self.db.wait_for_notify(set(queues), timeout)

    # -- batches -----------------------------------------------------------------------
    def create_batch(self, *, batch: NewBatch, jobs: Sequence[NewJob]) -> None:
        with self.db.transaction() as cur:
            batches.create(self.db, cur, batch, jobs, self.db.clock(cur))

    def add_to_batch(self, *, batch_id: str, jobs: Sequence[NewJob]) -> int:
        with self.db.transaction() as cur:
            return batches.add(self.db, cur, batch_id, jobs, self.db.clock(cur))

    def cancel_batch(self, batch_id: str) -> bool:
        with self.db.transaction() as cur:
            return batches.cancel(self.db, cur, batch_id, self.db.clock(cur))

    def get_batch(self, batch_id: str) -> BatchRecord | None:
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
        with self.db.cursor() as cur:
            # One statement, one snapshot: the attempts agree with the job row.
            row = cur.execute(
                self.db.q(
                    f"SELECT j.*, {NOW} AS now, coalesce((SELECT json_agg(a ORDER BY a.number)"
                    " FROM {s}.tenure_attempts a WHERE a.job_id = j.id), '[]') AS attempts"
                    " FROM {s}.tenure_jobs j WHERE j.id = %s"
                ),
                (job_id,),
            ).fetchone()
        if row is None:
            return None
        return job_record(row, [attempt_record(a) for a in row["attempts"]])

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
        with self.db.cursor() as cur:
            # attempts go with the job (ON DELETE CASCADE)
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
