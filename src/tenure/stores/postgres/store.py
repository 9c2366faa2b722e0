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
hot path in `jobs.py`; the guards (unique, overlap, rate, once) in `guards.py`; the
application's transactions in `transaction.py`; the operators' verbs both SQL stores share in
`tenure.stores.sql.store`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from typing import ClassVar

from tenure.core import causes
from tenure.core.records import (
    HeartbeatReply,
    JobRecord,
    NewJob,
    PeriodicClaim,
    QueueCounts,
    Rescued,
    Swept,
    WorkerRecord,
    WorkerRef,
    ready_age,
)
from tenure.core.states import FINAL_STATES, PARKED_AT
from tenure.core.words import describe_crash
from tenure.stores.base import Capabilities
from tenure.stores.postgres import claims, guards, waiters
from tenure.stores.postgres.database import POOL_MAX, Cursor, Database
from tenure.stores.postgres.dialect import PostgresDialect, lock_batches
from tenure.stores.postgres.inserts import NOW
from tenure.stores.postgres.jobs import PostgresJobs
from tenure.stores.postgres.transaction import PostgresJobTransaction
from tenure.stores.sql import batches, control, endings, operations, periodic, retention, workers
from tenure.stores.sql.dialect import Dialect
from tenure.stores.sql.guards import add_key_counts
from tenure.stores.sql.rows import attempt_record, effect_record, job_record
from tenure.stores.sql.store import Clock, SQLStore, usable_id

# A waiter's row outlives its wait by this much: a waiter that died leaves it at most so long.
WAITER_GRACE_S = 60.0
# Counter rows left by disconnected backends that a read tolerates before folding them.
FOLD_AFTER_ROWS = 256


class PostgresStore(PostgresJobs, SQLStore):
    """`postgresql://user@host/db?schema=NAME` (default schema: tenure)."""

    capabilities: ClassVar[Capabilities] = Capabilities(
        name="PostgreSQL",
        job_transactions=True,
        enqueue_in_caller_transaction=True,
        concurrent_job_transactions=True,
        listen_notify=True,
        many_hosts=True,
    )

    def __init__(self, url: str, *, pool_max: int = POOL_MAX) -> None:
        self.url = url
        self.db = Database(url, pool_max=pool_max)
        self.dialect: Dialect = PostgresDialect(self.db)
        self.schema = self.db.schema
        self.limited = {}

    def now(self) -> float:
        with self.db.cursor() as cur:
            return self.db.clock(cur)

    def migrate(self) -> None:
        self.db.migrate()

    def close(self) -> None:
        self.db.close()

    def _read(self) -> AbstractContextManager[Cursor]:
        return self.db.cursor()

    @contextmanager
    def _change(self) -> Iterator[tuple[Cursor, Clock]]:
        with self.db.transaction() as cur:
            yield cur, lambda: self.db.clock(cur)

    def heartbeat(
        self,
        *,
        worker: WorkerRef | WorkerRecord,
        leases: Sequence[tuple[str, int]] = (),
        lease: float = 0.0,
        memory: Mapping[str, float] | None = None,
    ) -> HeartbeatReply:
        # One statement: the renewals, the worker seen, and what the worker must hear of (a
        # cancel of a job it holds, a restart request), on one row even when nothing renewed.
        with self.db.cursor() as cur:
            if isinstance(worker, WorkerRecord):
                workers.register(self.dialect, cur, worker)
            rows = cur.execute(
                self.db.q(
                    "WITH held AS (SELECT * FROM unnest(%(ids)s::text[], %(tokens)s::int[],"
                    " %(memory)s::float8[]) AS h(id, token, memory_mb)),"
                    f" renewed AS (UPDATE {{s}}.tenure_jobs j SET lease_expires_at = {NOW}"
                    " + %(lease)s FROM held WHERE j.id = held.id AND j.attempt = held.token"
                    f" AND j.state = 'running' AND j.lease_expires_at >= {NOW}"
                    " RETURNING j.id, j.attempt, j.cancel_requested_at, held.memory_mb),"
                    # an upsert, for the reason given at claims.OPEN_ATTEMPT
                    " beat AS (INSERT INTO {s}.tenure_attempts AS att (job_id, number, worker_id,"
                    " host, pid, started_at, last_heartbeat_at, memory_mb) SELECT r.id,"
                    f" r.attempt, %(worker)s, %(host)s, %(pid)s, {NOW}, {NOW}, r.memory_mb"
                    " FROM renewed r ON CONFLICT (job_id, number) DO UPDATE"
                    " SET last_heartbeat_at = EXCLUDED.last_heartbeat_at, memory_mb ="
                    " coalesce(EXCLUDED.memory_mb, att.memory_mb)),"
                    f" seen AS (UPDATE {{s}}.tenure_workers SET last_seen_at = {NOW}"
                    " WHERE id = %(worker)s)"
                    " SELECT r.id, r.cancel_requested_at, (SELECT value FROM {s}.tenure_control"
                    " WHERE key = 'restart_at') AS restart_at"
                    " FROM (SELECT 1) one LEFT JOIN renewed r ON true"
                ),
                {
                    "ids": [job_id for job_id, _ in leases],
                    "tokens": [token for _, token in leases],
                    "memory": [(memory or {}).get(job_id) for job_id, _ in leases],
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
        rescued, lapse = self._rescue_expired() if rescue else ([], None)
        if not prune:
            return Swept(rescued=rescued, next_lapse_in=lapse)
        with self.db.transaction() as cur:
            now = self.db.clock(cur)
            pruned = retention.prune(self.dialect, cur, now, limit)
            gone = waiters.prune(self.db, cur, now, limit)
        return Swept(
            rescued=rescued,
            pruned=replace(pruned, waiters=gone, more=pruned.more or gone >= limit),
            next_lapse_in=lapse,
        )

    def _rescue_expired(self) -> tuple[list[Rescued], float | None]:
        """The rescued attempts, and in how many seconds the earliest lease left ends."""
        rescued: list[Rescued] = []
        with self.db.transaction() as cur:
            now = self.db.clock(cur)
            # SKIP LOCKED: a job whose holder is heartbeating or ending it right now is not
            # ours to judge; if its lease really is gone, the next pass takes it.
            rows = cur.execute(
                self.db.q(
                    "SELECT j.id, j.queue, j.policy, j.tries_used, j.exceptions, j.batch_id,"
                    " j.attempt, j.cancel_requested_at, j.chain, j.lease_expires_at,"
                    " j.concurrency_key, j.concurrency_limit,"
                    # the attempt, for describe_crash: a missing row (damaged data) must not
                    # stop the rescue
                    " j.id AS job_id, j.attempt AS number, coalesce(nullif(a.worker_id, ''),"
                    " nullif(j.worker_id, ''), 'unknown') AS worker_id,"
                    " coalesce(nullif(a.host, ''), 'unknown host') AS host,"
                    " coalesce(a.pid, 0) AS pid,"
                    " coalesce(nullif(a.started_at, 0), j.lease_expires_at) AS started_at,"
                    " a.ended_at, a.outcome, a.error, a.traceback, a.last_heartbeat_at,"
                    " a.memory_mb,"
                    # the worker had begun stopping (a deploy's SIGTERM): its grace ran out
                    " w.stopping_at AS worker_stopping_at"
                    " FROM {s}.tenure_jobs j"
                    " LEFT JOIN {s}.tenure_attempts a ON a.job_id = j.id AND a.number = j.attempt"
                    " LEFT JOIN {s}.tenure_workers w ON w.id = a.worker_id"
                    " AND w.stopped_at IS NULL"
                    " WHERE j.state = 'running' AND j.lease_expires_at < %s"
                    " ORDER BY j.lease_expires_at FOR UPDATE OF j SKIP LOCKED"
                ),
                (now,),
            ).fetchall()
            # Jobs of one batch may be among them: take their batch rows up front, in one
            # order, so two rescuers cannot each hold a batch the other waits for.
            lock_batches(self.db, cur, [r["batch_id"] for r in rows if r["batch_id"]])
            # concurrency keys are locked as each rescue hands back its key's parked jobs:
            # in one order too
            for row in sorted(rows, key=lambda r: r["concurrency_key"] or ""):
                stopping_at = row["worker_stopping_at"]
                error = describe_crash(attempt_record(row), row["lease_expires_at"], stopping_at)
                cause = causes.of_rescue(stopping_at)
                with endings.isolated(self.dialect, cur, row["id"], now, "rescue"):
                    rescued.append(endings.rescue(self.dialect, cur, row, error, now, cause))
            return rescued, endings.next_lapse_in(self.dialect, cur, now)

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

    # -- batches, reading and operating -------------------------------------------------
    def report_progress(self, *, job_id: str, token: int, fraction: float) -> None:
        with self.db.cursor() as cur:
            batches.report_progress(self.dialect, cur, job_id, token, fraction)

    def list_jobs(
        self,
        *,
        ids: Sequence[str] | None = None,
        state: str | None = None,
        queue: str | None = None,
        limit: int = 100,
        batch_id: str | None = None,
    ) -> list[JobRecord]:
        if ids is None:
            with self.db.cursor() as cur:
                return operations.list_jobs(
                    self.dialect, cur, state=state, queue=queue, limit=limit, batch_id=batch_id
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

    def queue_counts(self, *, keys: bool = False) -> dict[str, QueueCounts]:
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
                    f" AND j.run_at > {NOW} AND j.run_at < {PARKED_AT}) ELSE 0 END AS scheduled,"
                    " CASE WHEN state = 'queued' AND n > 0"
                    " THEN (SELECT count(*) FROM {s}.tenure_jobs j WHERE j.ready_queue = c.queue"
                    f" AND j.run_at >= {PARKED_AT}) ELSE 0 END AS waiting,"
                    " CASE WHEN state = 'queued' AND n > 0 THEN (SELECT j.run_at"
                    " FROM {s}.tenure_jobs j WHERE j.ready_queue = c.queue"
                    f" ORDER BY j.run_at LIMIT 1) END AS oldest, {NOW} AS now"
                    " FROM c"
                )
            ).fetchall()
            paused = control.paused_queues(self.dialect, cur)
            if keys:  # a statement of its own: the live jobs of the keys, not the counters
                by_key: dict[str, QueueCounts] = {}
                add_key_counts(self.dialect, cur, by_key)
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
                counts.waiting = int(row["waiting"])  # parked: queued, waiting on their key
                counts.oldest_ready_age = ready_age(row["now"], row["oldest"])
        for queue in paused:
            out.setdefault(queue, QueueCounts()).paused = True
        if keys:
            for queue, counts in out.items():
                counts.by_key = by_key[queue].by_key if queue in by_key else {}
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
