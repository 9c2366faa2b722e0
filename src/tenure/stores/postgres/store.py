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
from typing import Any, ClassVar

from psycopg.rows import DictRow

from tenure.retry import parse_policy
from tenure.stores.base import (
    AttemptRecord,
    Capabilities,
    EndResult,
    HeartbeatReply,
    NewBatch,
    NewJob,
    PeriodicClaim,
    PeriodicRecord,
    Rescued,
    Reservation,
    Swept,
    WorkerRecord,
    WorkerRef,
    batch_target,
    describe_crash,
)
from tenure.stores.postgres import claims, guards, waiters
from tenure.stores.postgres.claims import NEXT_ATTEMPT, OPEN_ATTEMPT, RETURNING
from tenure.stores.postgres.database import Cursor
from tenure.stores.postgres.dialect import lock_batches
from tenure.stores.postgres.guards import CLOCK
from tenure.stores.postgres.jobs import NOW, insert_jobs
from tenure.stores.postgres.operations import PostgresOperations
from tenure.stores.postgres.transaction import PostgresJobTransaction, caller_cursor
from tenure.stores.sql import batches, endings, periodic, retention, workers
from tenure.stores.sql.control import not_paused
from tenure.stores.sql.guards import deferral_note

# guarded jobs one reserve call may look at beyond `limit`: they may be deferred instead
RESERVE_LOOKAHEAD = 32
RESERVE_ROUNDS = 4
# A waiter's row outlives its wait by this much: a waiter that died leaves it at most so long.
WAITER_GRACE_S = 60.0


class PostgresStore(PostgresOperations):
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

    # -- jobs through their life -------------------------------------------------------
    def enqueue_many(
        self,
        jobs: Sequence[NewJob],
        *,
        conn: Any = None,
        batch: NewBatch | None = None,
        into_batch: str | None = None,
    ) -> list[str]:
        target = batch_target(batch, into_batch)
        if conn is not None:
            # The application's own transaction: its commit or rollback decides, not us.
            with caller_cursor(self.db, conn) as cur:
                if target is not None:
                    return batches.enqueue(self.dialect, cur, target, jobs, self.db.clock(cur))
                return self._enqueue(cur, jobs)
        if target is not None:
            with self.db.transaction() as cur:
                return batches.enqueue(self.dialect, cur, target, jobs, self.db.clock(cur))
        if not any(j.guards.unique_key is not None for j in jobs):
            with self.db.cursor() as cur:  # one statement, one round trip
                insert_jobs(self.db, cur, jobs, skip_existing=True)
            return [j.id for j in jobs]
        with self.db.transaction() as cur:
            return self._enqueue(cur, jobs)

    def _enqueue(self, cur: Cursor, jobs: Sequence[NewJob]) -> list[str]:
        # A held unique key stores nothing: its holder's id stands in the job's place. The
        # key rows stay locked until this transaction ends, so racing dispatches store one.
        holders = guards.take_unique_keys(self.db, cur, jobs)
        ids = [holders.get(j.guards.unique_key or "", j.id) for j in jobs]
        # an id already present is skipped: a dispatch retried after a lost reply must not
        # create the job twice
        insert_jobs(
            self.db,
            cur,
            [j for j, stored in zip(jobs, ids, strict=True) if stored == j.id],
            skip_existing=True,
        )
        return ids

    def reserve(
        self, *, queues: Sequence[str], worker: WorkerRef, lease: float, limit: int = 1
    ) -> list[Reservation]:
        out: list[Reservation] = []
        for queue in queues:  # priority order: drain earlier queues first
            seen: list[str] = []  # guarded jobs judged in this call: not looked at again
            for _ in range(RESERVE_ROUNDS):
                want = limit - len(out)
                with self.db.cursor() as cur:
                    picked, guarded = self._reserve_plain(
                        cur, queue, want, seen, worker, lease, out
                    )
                if guarded:
                    seen += self._reserve_guarded(queue, seen, limit, worker, lease, out)
                if len(out) >= limit or picked < want or not guarded:
                    break  # enough, or the queue has nothing more ready
                if len(seen) >= limit + RESERVE_LOOKAHEAD:
                    break  # looked far enough: the rest waits for the next call
            if len(out) >= limit:
                break
        return out

    def end_attempt(
        self,
        *,
        job_id: str,
        token: int,
        outcome: str = "succeeded",
        result: str | None = None,
        error: str | None = None,
        traceback: str | None = None,
        permanent: bool = False,
        queues: Sequence[str] = (),
        worker: WorkerRef | None = None,
        lease: float = 0.0,
    ) -> tuple[EndResult, Reservation | None]:
        if outcome == "succeeded":
            return self._succeed(job_id, token, queues, worker, lease, result)
        ending = (job_id, token, outcome, error or outcome, traceback, permanent)
        order = list(dict.fromkeys(queues))
        with self.db.transaction() as cur:
            ended = endings.end_attempt(self.dialect, cur, lambda: self.db.clock(cur), *ending)
            if worker is None or not order:
                return ended, None
            # after the job's and its batch's locks, as cancel_batch orders its locks
            return ended, self._claim_one(cur, order, worker, lease)

    def _succeed(
        self,
        job_id: str,
        token: int,
        queues: Sequence[str],
        worker: WorkerRef | None,
        lease: float,
        result: str | None,
    ) -> tuple[EndResult, Reservation | None]:
        """One statement, one round trip and one commit for a job outside any batch; a batch
        member (or a stale token) takes the transaction path. Only plain jobs are claimed: a
        guarded job at the head of a queue is left for `reserve`, which judges guards."""
        order = list(dict.fromkeys(queues))
        if worker is None or not order:
            with self.db.transaction() as cur:
                ended = self.complete_on(cur, job_id, token, result)
                if ended is None:
                    ended = endings.refuse(self.dialect, cur, job_id, token, "succeeded")
                return ended, None
        with self.db.cursor() as cur:
            rows = cur.execute(
                self.db.q(claims.COMPLETE_AND_CLAIM),
                {
                    "id": job_id,
                    "token": token,
                    "result": result,
                    "channel": self.db.channel,
                    **_claim_params(order[0], 1, [], worker, lease),
                },
            ).fetchall()
        if not rows[0]["completed"]:
            return self._succeed_in_transaction(job_id, token, order, worker, lease, result)
        ok = EndResult(accepted=True, state="succeeded")
        out = [_reservation(r) for r in rows if r["id"] is not None]
        if out or rows[0]["picked"] or len(order) == 1:
            return ok, out[0] if out else None
        with self.db.cursor() as cur:
            return ok, self._claim_one(cur, order[1:], worker, lease)

    def _succeed_in_transaction(
        self,
        job_id: str,
        token: int,
        queues: Sequence[str],
        worker: WorkerRef,
        lease: float,
        result: str | None,
    ) -> tuple[EndResult, Reservation | None]:
        with self.db.transaction() as cur:
            ended = self.complete_on(cur, job_id, token, result)
            if ended is None:
                ended = endings.refuse(self.dialect, cur, job_id, token, "succeeded")
            # after the batch row's lock (complete_on), as cancel_batch orders its locks
            return ended, self._claim_one(cur, queues, worker, lease)

    def _claim_one(
        self, cur: Cursor, queues: Sequence[str], worker: WorkerRef, lease: float
    ) -> Reservation | None:
        out: list[Reservation] = []
        for queue in queues:
            picked, _ = self._reserve_plain(cur, queue, 1, [], worker, lease, out)
            if out or picked:
                break  # claimed one, or the queue's head is guarded: `reserve` judges it
        return out[0] if out else None

    def _reserve_plain(
        self,
        cur: Cursor,
        queue: str,
        want: int,
        seen: list[str],
        worker: WorkerRef,
        lease: float,
        out: list[Reservation],
    ) -> tuple[int, list[str]]:
        """The hot path, one statement (claims.CLAIM): claim the oldest ready jobs without
        guards; return how many rows were picked and the ids of the guarded ones among them,
        to judge apart."""
        statement = claims.CLAIM_ONE if want == 1 else claims.CLAIM
        rows = cur.execute(
            self.db.q(statement), _claim_params(queue, want, seen, worker, lease)
        ).fetchall()
        out.extend(_reservation(r) for r in rows if r["id"] is not None)
        return int(rows[0]["picked"]), list(rows[0]["guarded"])

    def _reserve_guarded(
        self,
        queue: str,
        seen: list[str],
        limit: int,
        worker: WorkerRef,
        lease: float,
        out: list[Reservation],
    ) -> list[str]:
        """Judge the guarded jobs among the next ready ones (as far as SQLite looks), one by one
        in one transaction: start, or defer (overlap held by a running job with a live lease,
        or rate limit reached), or leave for the next pass (another worker is judging the same
        key right now). Returns the ids judged."""
        judged: list[str] = []
        with self.db.transaction() as cur:
            rows = cur.execute(
                self.db.q(
                    "SELECT j.id, j.overlap_key, j.overlap_delay, j.rate_key, j.rate_limit,"
                    " j.rate_window FROM {s}.tenure_jobs j WHERE j.id IN (SELECT id"
                    " FROM {s}.tenure_jobs WHERE priority_queue = %(queue)s"
                    f" AND run_at <= {NOW} AND id <> ALL(%(seen)s::text[])"
                    + not_paused("%(queue)s")
                    + " ORDER BY priority, run_at, seq LIMIT %(window)s)"
                    " AND (j.overlap_key IS NOT NULL OR j.rate_key IS NOT NULL)"
                    " AND j.state = 'queued' ORDER BY j.priority, j.run_at, j.seq"
                    " FOR UPDATE OF j SKIP LOCKED"
                ),
                {"queue": queue, "seen": seen, "window": limit - len(out) + RESERVE_LOOKAHEAD},
            ).fetchall()
            for row in rows:
                if len(out) >= limit:
                    break
                judged.append(row["id"])
                try:
                    now, deferred = guards.judge(self.db, cur, row)
                except guards.KeyBusy:
                    continue
                if deferred is None:
                    out.append(self._open_attempt(cur, row["id"], worker, now, lease))
                else:
                    self._defer(cur, row["id"], worker, now, *deferred)
        return judged

    def _open_attempt(
        self, cur: Cursor, job_id: str, worker: WorkerRef, now: float, lease: float
    ) -> Reservation:
        row = cur.execute(
            self.db.q(
                "WITH claimed AS (UPDATE {s}.tenure_jobs j SET state = 'running',"
                " attempt = " + NEXT_ATTEMPT + ", lease_expires_at = %(now)s + %(lease)s,"
                f" worker_id = %(worker)s WHERE j.id = %(id)s{RETURNING}),"
                " opened AS (INSERT INTO {s}.tenure_attempts (job_id, number, worker_id, host,"
                " pid, started_at, last_heartbeat_at) SELECT id, attempt, %(worker)s,"
                " %(host)s, %(pid)s, %(now)s, %(now)s FROM claimed" + OPEN_ATTEMPT + ")"
                " SELECT * FROM claimed"
            ),
            {
                "id": job_id,
                "now": now,
                "lease": float(lease),
                "worker": worker.id,
                "host": worker.host,
                "pid": worker.pid,
            },
        ).fetchone()
        assert row is not None  # the row is locked by this transaction
        return _reservation(row)

    def _defer(
        self, cur: Cursor, job_id: str, worker: WorkerRef, now: float, run_at: float, reason: str
    ) -> None:
        """Not now, and not the job's fault: a `deferred` attempt, no try used."""
        cur.execute(
            self.db.q(
                "WITH moved AS (UPDATE {s}.tenure_jobs j SET attempt = " + NEXT_ATTEMPT + ","
                " run_at = %(run_at)s WHERE id = %(id)s RETURNING id, attempt)"
                " INSERT INTO {s}.tenure_attempts (job_id, number, worker_id, host, pid,"
                " started_at, ended_at, outcome, error) SELECT id, attempt, %(worker)s,"
                " %(host)s, %(pid)s, %(now)s, %(now)s, 'deferred', %(error)s FROM moved"
                + OPEN_ATTEMPT
            ),
            {
                "id": job_id,
                "run_at": run_at,
                "now": now,
                "worker": worker.id,
                "host": worker.host,
                "pid": worker.pid,
                "error": deferral_note(reason, run_at, now),
            },
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

    def complete_on(
        self, cur: Cursor, job_id: str, token: int, result: str | None = None
    ) -> EndResult | None:
        """Write the success (and its result) inside the caller's transaction; None when the
        token is stale, and then nothing is written."""
        # The fast path in one statement; a stale token matches no row.
        done = cur.execute(
            self.db.q(
                # the clock, not now(): in a job's own transaction, now() is when it began
                f"WITH clock AS MATERIALIZED (SELECT {CLOCK} AS now),"
                " done AS (UPDATE {s}.tenure_jobs SET state = 'succeeded',"
                " finished_at = clock.now, lease_expires_at = NULL,"
                " tries_used = tries_used + 1, result = %(result)s FROM clock WHERE id = %(id)s"
                " AND attempt = %(token)s AND state = 'running'"
                " RETURNING id, batch_id, chain, worker_id, clock.now),"
                + claims.close_succeeded("%(token)s")
                + f",{claims.WAKE_WAITERS}"
                f" SELECT id, batch_id, chain, now, {claims.WOKEN} AS woken FROM done"
            ),
            {"id": job_id, "token": token, "result": result, "channel": self.db.channel},
        ).fetchone()
        if done is None:
            return None
        if done["batch_id"] is not None or done["chain"] is not None:
            # its batch counted, a chain's next link queued: in the transaction of the success
            # (a batch member reads the clock again, once its batch row is locked)
            now = self.db.clock(cur) if done["batch_id"] is not None else done["now"]
            endings.after_success(
                self.dialect, cur, job_id, done["batch_id"], done["chain"], now, result
            )
        return EndResult(accepted=True, state="succeeded")

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
                    " j.attempt, j.cancel_requested_at, j.chain,"
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
            lock_batches(self.db, cur, [r["batch_id"] for r in rows if r["batch_id"]])
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
                endings.close_attempt(
                    self.dialect, cur, row["id"], row["attempt"], now, "crashed", error, None
                )
                result = endings.apply_decision(
                    self.dialect, cur, row, "crashed", error, now, False
                )
                rescued.append(Rescued(row["id"], row["attempt"], result))
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


def _claim_params(
    queue: str, limit: int, seen: list[str], worker: WorkerRef, lease: float
) -> dict[str, Any]:
    return {
        "queue": queue,
        "seen": seen,
        "limit": limit,
        "lease": float(lease),
        "worker": worker.id,
        "host": worker.host,
        "pid": worker.pid,
    }


def _reservation(r: DictRow) -> Reservation:
    return Reservation(
        job_id=r["id"],
        name=r["name"],
        queue=r["queue"],
        payload=r["payload"],
        policy=parse_policy(r["policy"]),
        attempt=r["attempt"],
        token=r["attempt"],
        lease_expires_at=r["lease_expires_at"],
        batch_id=r["batch_id"],
    )
