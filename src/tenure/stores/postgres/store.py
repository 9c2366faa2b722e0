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

Jobs without guards are reserved by one statement (the hot path); guarded ones (overlap, rate
limit) are judged apart, one by one in a transaction, each with the clock read after its locks.

Plumbing (pool, migrations, LISTEN connection) lives in `tenure.stores.postgres.database`; the
guards (unique, overlap, rate, once) in `guards.py`; the application's transactions in
`transaction.py`; reading, operating and batches in `operations.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

from tenure.stores.base import (
    Capabilities,
    HeartbeatReply,
    NewJob,
    PeriodicClaim,
    PeriodicRecord,
    Rescued,
    Swept,
    WorkerRecord,
    WorkerRef,
    describe_crash,
)
from tenure.stores.postgres import claims, guards, waiters
from tenure.stores.postgres.dialect import lock_batches
from tenure.stores.postgres.jobs import NOW, PostgresJobs
from tenure.stores.postgres.operations import PostgresOperations
from tenure.stores.postgres.transaction import PostgresJobTransaction
from tenure.stores.sql import endings, periodic, retention, workers
from tenure.stores.sql.rows import attempt_record

# A waiter's row outlives its wait by this much: a waiter that died leaves it at most so long.
WAITER_GRACE_S = 60.0


class PostgresStore(PostgresJobs, PostgresOperations):
    """`postgresql://user@host/db?schema=NAME` (default schema: tenure). Reading, operating,
    batches and the worker registry are in `tenure.stores.postgres.operations`."""

    capabilities: ClassVar[Capabilities] = Capabilities(
        name="PostgreSQL",
        job_transactions=True,
        enqueue_in_caller_transaction=True,
        concurrent_job_transactions=True,
        listen_notify=True,
        many_hosts=True,
    )

    def heartbeat(
        self,
        *,
        worker: WorkerRef | WorkerRecord,
        leases: Sequence[tuple[str, int]] = (),
        lease: float = 0.0,
    ) -> HeartbeatReply:
        # One statement: the renewals, the worker seen, and what the worker must hear of (a
        # cancel of a job it holds, a restart request), on one row even when nothing renewed.
        with self.db.cursor() as cur:
            if isinstance(worker, WorkerRecord):
                workers.register(self.dialect, cur, worker)
            rows = cur.execute(
                self.db.q(
                    "WITH held AS (SELECT * FROM unnest(%(ids)s::text[], %(tokens)s::int[])"
                    " AS h(id, token)),"
                    f" renewed AS (UPDATE {{s}}.tenure_jobs j SET lease_expires_at = {NOW}"
                    " + %(lease)s FROM held WHERE j.id = held.id AND j.attempt = held.token"
                    f" AND j.state = 'running' AND j.lease_expires_at >= {NOW}"
                    " RETURNING j.id, j.attempt, j.cancel_requested_at),"
                    # an upsert, for the reason given at claims.OPEN_ATTEMPT
                    " beat AS (INSERT INTO {s}.tenure_attempts (job_id, number, worker_id,"
                    f" host, pid, started_at, last_heartbeat_at) SELECT r.id, r.attempt,"
                    f" %(worker)s, %(host)s, %(pid)s, {NOW}, {NOW} FROM renewed r"
                    " ON CONFLICT (job_id, number) DO UPDATE"
                    " SET last_heartbeat_at = EXCLUDED.last_heartbeat_at),"
                    f" seen AS (UPDATE {{s}}.tenure_workers SET last_seen_at = {NOW}"
                    " WHERE id = %(worker)s)"
                    " SELECT r.id, r.cancel_requested_at, (SELECT value FROM {s}.tenure_control"
                    " WHERE key = 'restart_at') AS restart_at"
                    " FROM (SELECT 1) one LEFT JOIN renewed r ON true"
                ),
                {
                    "ids": [job_id for job_id, _ in leases],
                    "tokens": [token for _, token in leases],
                    "lease": float(lease),
                    "worker": worker.id,
                    "host": worker.host,
                    "pid": worker.pid,
                },
            ).fetchall()
        renewed = {r["id"] for r in rows if r["id"] is not None}
        restart = rows[0]["restart_at"] if rows else None
        return HeartbeatReply(
            lost=[job_id for job_id, _ in leases if job_id not in renewed],
            cancel=[r["id"] for r in rows if r["cancel_requested_at"] is not None],
            restart_requested_at=None if restart is None else float(restart),
        )

    def job_transaction(self, *, job_id: str, token: int) -> PostgresJobTransaction:
        return PostgresJobTransaction(self, job_id, token)

    def claim_once(self, *, job_id: str, token: int, key: str) -> bool:
        with self.db.cursor() as cur:
            return guards.claim_once(self.db, cur, job_id, token, key)

    def sweep(
        self, *, rescue: bool = True, prune: bool = True, limit: int = 500, dry_run: bool = False
    ) -> Swept:
        if dry_run:
            with self.db.transaction() as cur:
                now = self.db.clock(cur)
                due = retention.count_due(self.dialect, cur, now)
                return Swept(pruned=replace(due, waiters=waiters.count_lapsed(self.db, cur, now)))
        rescued = self._rescue_expired() if rescue else []
        if not prune:
            return Swept(rescued=rescued)
        with self.db.transaction() as cur:
            now = self.db.clock(cur)
            pruned = retention.prune(self.dialect, cur, now, limit)
            gone = waiters.prune(self.db, cur, now, limit)
        return Swept(
            rescued=rescued, pruned=replace(pruned, waiters=gone, more=pruned.more or gone >= limit)
        )

    def _rescue_expired(self) -> list[Rescued]:
        rescued: list[Rescued] = []
        with self.db.transaction() as cur:
            now = self.db.clock(cur)
            # SKIP LOCKED: a job whose holder is heartbeating or ending it right now is not
            # ours to judge; if its lease really is gone, the next pass takes it.
            rows = cur.execute(
                self.db.q(
                    "SELECT j.id, j.queue, j.policy, j.tries_used, j.exceptions, j.batch_id,"
                    " j.attempt, j.cancel_requested_at, j.chain, j.lease_expires_at,"
                    # the attempt, for describe_crash: a missing row (damaged data) must not
                    # stop the rescue
                    " j.id AS job_id, j.attempt AS number, coalesce(nullif(a.worker_id, ''),"
                    " nullif(j.worker_id, ''), 'unknown') AS worker_id,"
                    " coalesce(nullif(a.host, ''), 'unknown host') AS host,"
                    " coalesce(a.pid, 0) AS pid,"
                    " coalesce(nullif(a.started_at, 0), j.lease_expires_at) AS started_at,"
                    " a.ended_at, a.outcome, a.error, a.traceback, a.last_heartbeat_at"
                    " FROM {s}.tenure_jobs j"
                    " LEFT JOIN {s}.tenure_attempts a ON a.job_id = j.id AND a.number = j.attempt"
                    " WHERE j.state = 'running' AND j.lease_expires_at < %s"
                    " ORDER BY j.lease_expires_at FOR UPDATE OF j SKIP LOCKED"
                ),
                (now,),
            ).fetchall()
            # Jobs of one batch may be among them: take their batch rows up front, in one
            # order, so two rescuers cannot each hold a batch the other waits for.
            lock_batches(self.db, cur, [r["batch_id"] for r in rows if r["batch_id"]])
            for row in rows:
                error = describe_crash(attempt_record(row), row["lease_expires_at"])
                rescued.append(endings.rescue(self.dialect, cur, row, error, now))
        return rescued

    def wait_for_work(
        self, *, queues: Sequence[str], timeout: float, ended: Sequence[str] = ()
    ) -> None:
        # LISTEN/NOTIFY: an idle worker sleeps on a socket and wakes when enqueue, retry or a
        # hand-back commits; the caller's timeout is the bounded fallback poll (delayed jobs
        # coming due send no NOTIFY). A waiter of a job's end is a row in tenure_waiters,
        # which the end deletes with a NOTIFY 'ended:ID' (claims.WAKE_WAITERS).
        wanted = set(queues)
        if ended:
            if self._register_waiters(ended, timeout):
                return  # newly registered: the caller reads the job again before sleeping
            wanted |= {claims.ENDED_PREFIX + job_id for job_id in ended}
        self.db.wait_for_notify(wanted, timeout)

    def _register_waiters(self, job_ids: Sequence[str], timeout: float) -> bool:
        """Write (or renew) the waiter rows; True when one was new. Rows of waiters gone
        for a minute are deleted on the way."""
        with self.db.cursor() as cur:
            rows = cur.execute(
                self.db.q(
                    f"WITH lapsed AS (DELETE FROM {{s}}.tenure_waiters WHERE until < {NOW})"
                    " INSERT INTO {s}.tenure_waiters (job_id, until)"
                    f" SELECT unnest(%(ids)s::text[]), {NOW} + %(ttl)s ON CONFLICT (job_id)"
                    " DO UPDATE SET until = EXCLUDED.until RETURNING (xmax = 0) AS inserted"
                ),
                {"ids": list(job_ids), "ttl": float(timeout) + WAITER_GRACE_S},
            ).fetchall()
        return any(r["inserted"] for r in rows)

    # -- periodic jobs -----------------------------------------------------------------
    def claim_periodic(
        self, *, name: str, queue: str, due: float, job: NewJob | None
    ) -> PeriodicClaim:
        with self.db.transaction() as cur:
            return periodic.claim(
                self.dialect, cur, name, due, job, lambda jobs: self._enqueue(cur, jobs)
            )

    def list_periodic(self) -> list[PeriodicRecord]:
        with self.db.cursor() as cur:
            return periodic.read_all(self.dialect, cur)
