"""A job through its life on PostgreSQL, the hot path: enqueued, reserved, completed (and the
next one claimed in the same statement), with the one insert every enqueue path shares.

The statements are put in the store's schema once (`in_schema`, cached) and their
parameters built before a connection is taken, so that a job's walk goes from here to the
pool and back, not to and fro. Heartbeats, rescue, waiting and periodic claims are store.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg.rows import DictRow

from tenure.core.records import (
    Ending,
    EndResult,
    NewBatch,
    NewJob,
    Reservation,
    WorkerRef,
    batch_target,
    reservation,
)
from tenure.stores.postgres import claims, guards
from tenure.stores.postgres.claims import NEXT_ATTEMPT, OPEN_ATTEMPT
from tenure.stores.postgres.database import CLOCK, Cursor, Database, in_schema
from tenure.stores.postgres.inserts import NOW, insert_jobs, insert_statement
from tenure.stores.postgres.limited import (
    LIMITED_END_AND_CLAIM,
    LIMITED_END_AND_CLAIM_LEAN,
    LIMITED_END_AND_CLAIM_PASS,
)
from tenure.stores.sql import batches, endings
from tenure.stores.sql.control import not_paused
from tenure.stores.sql.dialect import Dialect
from tenure.stores.sql.guards import (
    RESERVE_LOOKAHEAD,
    debounced,
    deferral_note,
    park,
    place_fairly,
    release,
)

RESERVE_ROUNDS = 4
LIMITED_NOTES = 100_000  # PostgresJobs.limited's bound


class PostgresJobs:
    """The hot path of PostgresStore (which sets `db` and `dialect`)."""

    db: Database
    dialect: Dialect
    # (job id, token) of the attempts this store claimed under a concurrency limit, outside any
    # batch and chain: their success takes _end_limited's one round trip. Only a hint: an end
    # not found here takes the general path, which is right for every job. The value: whether
    # the attempt was claimed by a slot passing to it, so its own end likely passes one too.
    limited: dict[tuple[str, int], bool]

    def enqueue_many(
        self,
        jobs: Sequence[NewJob],
        *,
        conn: Any = None,
        batch: NewBatch | None = None,
        into_batch: str | None = None,
    ) -> list[str]:
        target = None if batch is None and into_batch is None else batch_target(batch, into_batch)
        plain = conn is None and target is None
        if plain and not any(
            j.guards.unique_key is not None
            or j.guards.debounce_key is not None
            or j.guards.fair_key is not None
            for j in jobs
        ):
            statement, params = insert_statement(self.db, jobs, skip_existing=True)
            with self.db.cursor() as cur:  # one statement, one round trip
                cur.execute(statement, params)
            return [j.id for j in jobs]
        # With conn, the application's own transaction: its commit or rollback decides, not us.
        with self.db.transaction() if conn is None else self.db.caller_cursor(conn) as cur:
            if target is not None:
                return batches.enqueue(self.dialect, cur, target, jobs, self.db.clock(cur))
            return self._enqueue(cur, jobs)

    def _enqueue(self, cur: Cursor, jobs: Sequence[NewJob]) -> list[str]:
        # A held unique key stores nothing: its holder's id stands in the job's place. The
        # key rows stay locked until this transaction ends, so racing dispatches store one.
        holders = guards.take_unique_keys(self.db, cur, jobs)
        ids = [holders.get(j.guards.unique_key or "", j.id) for j in jobs]
        # the debounce keys' and fair queues' locks, taken up front in one order, so two
        # dispatches of several keys cannot each hold one the other waits for
        for name in sorted(
            {f"debounce:{j.guards.debounce_key}" for j in jobs if j.guards.debounce_key}
            | {f"fair:{j.queue}" for j in jobs if j.guards.fair_key is not None}
        ):
            self.dialect.lock_key(cur, name)
        for i, job in enumerate(jobs):
            if job.guards.debounce_key is not None:
                # the key's pending job takes these arguments; else this one is stored now,
                # for the next dispatch of the key in this call to find
                pending = debounced(self.dialect, cur, job, self.db.clock(cur))
                ids[i] = pending or job.id
                if pending is None:
                    insert_jobs(self.db, cur, [job], skip_existing=True)
        # an id already present is skipped: a dispatch retried after a lost reply must not
        # create the job twice
        insert_jobs(
            self.db,
            cur,
            [j for j, stored in zip(jobs, ids, strict=True) if stored == j.id],
            skip_existing=True,
        )
        for job, stored in zip(jobs, ids, strict=True):
            if job.guards.fair_key is not None and stored == job.id:
                place_fairly(self.dialect, cur, job)
        return ids

    def reserve(
        self, *, queues: Sequence[str], worker: WorkerRef, lease: float, limit: int = 1
    ) -> list[Reservation]:
        out: list[Reservation] = []
        for queue in queues:  # priority order: drain earlier queues first
            seen: list[str] = []  # guarded jobs judged in this call: not looked at again
            for _ in range(RESERVE_ROUNDS):
                want = limit - len(out)
                statement = _claim_statement(self.db, want)
                params = _claim_params(queue, want, seen, worker, lease)
                with self.db.cursor() as cur:
                    rows = cur.execute(statement, params).fetchall()
                picked, guarded = self._claimed(rows, out)
                if guarded:
                    seen += self._reserve_guarded(queue, seen, limit, worker, lease, out)
                if len(out) >= limit or picked < want or not (guarded or rows[0]["parked"]):
                    break  # enough, or the queue has nothing more ready
                if len(seen) >= limit + RESERVE_LOOKAHEAD:
                    break  # looked far enough: the rest waits for the next call
            if len(out) >= limit:
                break
        return out

    def end_attempt(
        self,
        ending: Ending,
        *,
        queues: Sequence[str] = (),
        worker: WorkerRef | None = None,
        lease: float = 0.0,
    ) -> tuple[EndResult, Reservation | None]:
        order = list(dict.fromkeys(queues))
        job_id, token, result = ending.job_id, ending.token, ending.result
        if ending.outcome == "succeeded" and worker is not None and order:
            passing = self.limited.pop((job_id, token), None)
            if passing is not None:
                done = self._end_limited(job_id, token, order, worker, lease, result, passing)
            else:
                done = self._succeed_and_claim(job_id, token, order, worker, lease, result)
            if done is not None:
                return done
        self.limited.pop((job_id, token), None)
        with self.db.transaction() as cur:
            if ending.outcome == "succeeded":  # complete_on's None: a stale token, refused
                ended = self.complete_on(cur, job_id, token, result) or endings.refuse(
                    self.dialect, cur, job_id, token, "succeeded"
                )
            else:
                ended = endings.end_attempt(self.dialect, cur, lambda: self.db.clock(cur), ending)
            if worker is None or not order:
                return ended, None
            # after the job's and its batch's locks, as cancel_batch orders its locks
            return ended, self._claim_one(cur, order, worker, lease)

    def _succeed_and_claim(
        self,
        job_id: str,
        token: int,
        order: list[str],
        worker: WorkerRef,
        lease: float,
        result: str | None,
    ) -> tuple[EndResult, Reservation | None] | None:
        """One statement, one round trip and one commit for a job outside any batch; None
        sends a batch member, a chain link or a stale token to the transaction path. Only
        plain jobs are claimed: a guarded job at the head of a queue is left for `reserve`,
        which judges guards."""
        statement = in_schema(self.db.quoted_schema, claims.COMPLETE_AND_CLAIM)
        params = {
            "id": job_id,
            "token": token,
            "result": result,
            "channel": self.db.channel,
            **_claim_params(order[0], 1, [], worker, lease),
        }
        with self.db.cursor() as cur:
            rows = cur.execute(statement, params).fetchall()
        if not rows[0]["completed"]:
            return None
        ok = EndResult(accepted=True, state="succeeded")
        out: list[Reservation] = []
        self._claimed(rows, out)
        if out or rows[0]["picked"] or len(order) == 1:
            return ok, out[0] if out else None
        with self.db.cursor() as cur:
            return ok, self._claim_one(cur, order[1:], worker, lease)

    def _end_limited(
        self,
        job_id: str,
        token: int,
        order: list[str],
        worker: WorkerRef,
        lease: float,
        result: str | None,
        passing: bool,
    ) -> tuple[EndResult, Reservation | None] | None:
        """limited.LIMITED_END_AND_CLAIM: one statement, one round trip and one commit; None,
        with nothing written, sends the end to the transaction path (not this job's case after
        all, a stale token, or its job's or key's row busy at that instant)."""
        params = {
            "id": job_id,
            "token": token,
            "result": result,
            "channel": self.db.channel,
            **_claim_params(order[0], 1, [], worker, lease),
        }
        rows = self._run_limited(params, passing)
        if not rows[0]["settled"]:
            return None
        ok = EndResult(accepted=True, state="succeeded")
        out: list[Reservation] = []
        picked, _ = self._claimed(rows, out, passed=bool(rows[0]["passed"]))
        if out or picked or len(order) == 1:
            return ok, out[0] if out else None
        with self.db.cursor() as cur:
            return ok, self._claim_one(cur, order[1:], worker, lease)

    def _run_limited(self, params: dict[str, object], passing: bool) -> list[DictRow]:
        """The narrowest statement likely to settle this end first (`passing`: the slot
        passing on, then the common case's), and, each time one held both rows but found its
        case was not one it settles (it wrote nothing), the next wider one."""
        schema = self.db.quoted_schema
        texts = [LIMITED_END_AND_CLAIM_LEAN, LIMITED_END_AND_CLAIM]
        if passing:
            texts.insert(0, LIMITED_END_AND_CLAIM_PASS)
        with self.db.cursor() as cur:
            for text in texts:
                rows = cur.execute(in_schema(schema, text), params).fetchall()
                if not rows[0]["held"] or rows[0]["fits"]:
                    break
        return rows

    def _claimed(
        self, rows: list[DictRow], out: list[Reservation], *, passed: bool = False
    ) -> tuple[int, list[str]]:
        """Add the claimed rows to `out` (noting the limited ones, and whether a slot was
        `passed` to them); how many rows were picked and the guarded ones' ids."""
        for row in rows:
            if row["id"] is not None:
                out.append(self._claimed_row(row, passed))
        return int(rows[0]["picked"]), list(rows[0]["guarded"])

    def _claimed_row(self, row: DictRow, passed: bool = False) -> Reservation:
        if row["concurrency_key"] is not None and row["batch_id"] is None and row["chain"] is None:
            if len(self.limited) > LIMITED_NOTES:
                self.limited.clear()  # ends that never came (a crash): forget the hints
            self.limited[(row["id"], row["attempt"])] = passed
        return reservation(row)

    def _claim_one(
        self, cur: Cursor, queues: Sequence[str], worker: WorkerRef, lease: float
    ) -> Reservation | None:
        """The next job after an end, one statement per queue (claims.CLAIM_ONE): the oldest
        ready job without guards; a guarded one at a queue's head is left for `reserve`."""
        out: list[Reservation] = []
        statement = _claim_statement(self.db, 1)
        for queue in queues:
            rows = cur.execute(statement, _claim_params(queue, 1, [], worker, lease)).fetchall()
            picked, _ = self._claimed(rows, out)
            if out or picked:
                break  # claimed one, or the queue's head is guarded: `reserve` judges it
        return out[0] if out else None

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
        full: set[str] = set()  # concurrency keys found without a free slot
        with self.db.transaction() as cur:
            rows = cur.execute(
                in_schema(
                    self.db.quoted_schema,
                    "SELECT j.id, j.overlap_key, j.overlap_delay, j.rate_key, j.rate_limit,"
                    " j.rate_window, j.concurrency_key, j.concurrency_limit"
                    " FROM {s}.tenure_jobs j WHERE j.id IN (SELECT id"
                    " FROM {s}.tenure_jobs WHERE priority_queue = %(queue)s"
                    f" AND run_at <= {NOW} AND id <> ALL(%(seen)s::text[])"
                    + not_paused("%(queue)s")
                    + " ORDER BY priority, run_at, seq LIMIT %(window)s)"
                    " AND (j.overlap_key IS NOT NULL OR j.rate_key IS NOT NULL"
                    " OR j.concurrency_key IS NOT NULL)"
                    " AND j.state = 'queued' ORDER BY j.priority, j.run_at, j.seq"
                    " FOR UPDATE OF j SKIP LOCKED",
                ),
                {"queue": queue, "seen": seen, "window": limit - len(out) + RESERVE_LOOKAHEAD},
            ).fetchall()
            for row in rows:
                if len(out) >= limit:
                    break
                judged.append(row["id"])
                key = row["concurrency_key"]
                slot = False  # a slot of `key` taken for this row
                try:
                    if key is not None:
                        # full stays full while this transaction holds the key's row: an
                        # ending commits only once it has it (sql.guards.release)
                        slot = key not in full and guards.take_slot(self.db, cur, row)
                        if not slot:
                            full.add(key)
                            park(self.dialect, cur, row["id"])
                            continue
                    now, deferred = guards.judge(self.db, cur, row)
                except guards.KeyBusy:
                    if slot:
                        guards.give_slot_back(self.db, cur, key)
                    continue
                if deferred is None:
                    out.append(self._open_attempt(cur, row["id"], worker, now, lease))
                else:
                    if slot:
                        guards.give_slot_back(self.db, cur, key)
                    self._defer(cur, row["id"], worker, now, *deferred)
        return judged

    def _open_attempt(
        self, cur: Cursor, job_id: str, worker: WorkerRef, now: float, lease: float
    ) -> Reservation:
        row = cur.execute(
            in_schema(self.db.quoted_schema, _OPEN_ATTEMPT),
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
        return self._claimed_row(row)

    def _defer(
        self, cur: Cursor, job_id: str, worker: WorkerRef, now: float, run_at: float, reason: str
    ) -> None:
        """Not now, and not the job's fault: a `deferred` attempt, no try used."""
        cur.execute(
            in_schema(
                self.db.quoted_schema,
                "WITH moved AS (UPDATE {s}.tenure_jobs j SET attempt = " + NEXT_ATTEMPT + ","
                " run_at = %(run_at)s WHERE id = %(id)s RETURNING id, attempt)"
                " INSERT INTO {s}.tenure_attempts (job_id, number, worker_id, host, pid,"
                " started_at, ended_at, outcome, error) SELECT id, attempt, %(worker)s,"
                " %(host)s, %(pid)s, %(now)s, %(now)s, 'deferred', %(error)s FROM moved"
                + OPEN_ATTEMPT,
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

    def complete_on(
        self, cur: Cursor, job_id: str, token: int, result: str | None = None
    ) -> EndResult | None:
        """Write the success (and its result) inside the caller's transaction; None when the
        token is stale, and then nothing is written."""
        # The fast path in one statement; a stale token matches no row.
        done = cur.execute(
            in_schema(
                self.db.quoted_schema,
                # the clock, not now(): in a job's own transaction, now() is when it began
                f"WITH clock AS MATERIALIZED (SELECT {CLOCK} AS now),"
                " done AS (UPDATE {s}.tenure_jobs SET state = 'succeeded',"
                " finished_at = clock.now, lease_expires_at = NULL,"
                " tries_used = tries_used + 1, result = %(result)s FROM clock WHERE id = %(id)s"
                " AND attempt = %(token)s AND state = 'running'"
                " RETURNING id, batch_id, chain, worker_id, clock.now, queue, concurrency_key,"
                " concurrency_limit),"
                + claims.close_succeeded("%(token)s")
                + f",{claims.WAKE_WAITERS}"
                " SELECT id, batch_id, chain, now, queue, concurrency_key, concurrency_limit,"
                f" {claims.WOKEN} AS woken FROM done",
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
        if done["concurrency_key"] is not None:
            release(self.dialect, cur, done, done["now"])
        return EndResult(accepted=True, state="succeeded")


# the guarded job `reserve` judged startable, claimed with its row already locked
_OPEN_ATTEMPT = "WITH" + claims.claim_and_open("%(now)s", "= %(id)s") + " SELECT * FROM claimed"


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


def _claim_statement(db: Database, want: int) -> str:
    """The claim of `want` jobs in the store's schema (one job: the pkey's equality)."""
    return in_schema(db.quoted_schema, claims.CLAIM_ONE if want == 1 else claims.CLAIM)
