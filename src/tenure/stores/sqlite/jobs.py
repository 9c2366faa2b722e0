"""A job through its life on SQLite, the hot path: enqueued, reserved, completed (and the next
one claimed in the same transaction), over the one insert every enqueue path shares
(inserts.py). The statements and the transaction they run in sit in one module (on database.py's
connections), so that the walk does not hop from layer to layer; off the busy worker's path,
the overlap and rate guards' deferral is guards.py, the application's own transaction
database.py. The rest of the store (rescue, heartbeats, batches, reading) is store.py,
ready.py and stores/sql/."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from tenure.core.records import (
    Ending,
    EndResult,
    NewBatch,
    NewJob,
    Reservation,
    WorkerRef,
    batch_target,
    quick_reservation,
)
from tenure.core.retry import parse_policy
from tenure.stores.sql import batches, endings
from tenure.stores.sql import guards as sql_guards
from tenure.stores.sql.dialect import Dialect
from tenure.stores.sqlite import guards
from tenure.stores.sqlite.database import ROW_ERRORS, SQLiteDatabase, sqlite_now
from tenure.stores.sqlite.hot_sql import (
    ATTEMPT_ROW,
    CLAIM,
    CLAIM_GUARDED,
    CLAIM_UNDER,
    CLOSE_SUCCEEDED,
    COMPLETE,
    COMPLETE_PLAIN,
    COMPLETE_PLAIN_WITH_RESULT,
    COMPLETE_UNDER,
    COMPLETE_UNDER_WITH_RESULT,
    COMPLETE_WITH_RESULT,
    COMPLETED_COLUMNS,
    PLAIN_COMPLETED,
    UNDER_HINTS,
)
from tenure.stores.sqlite.inserts import insert_jobs
from tenure.stores.sqlite.ready import ANY_READY, READY, READY_AFTER

# The busy worker's statements read on plain tuples (_cursor): a sqlite3.Row's look-ups by name
# cost more than these narrow rows' own step, so the success and the unguarded head's claim run
# on one cursor without a row factory; anything guarded goes on to the general path.


def _cursor(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """One cursor for a transaction's statements, its rows plain tuples."""
    cur = conn.cursor()
    cur.row_factory = None
    return cur


def _complete(
    cur: sqlite3.Cursor,
    job_id: str,
    token: int,
    now: float,
    result: str | None,
    under: tuple[str, Any, str] | None = None,
) -> tuple[Any, ...] | None:
    """The success of `job_id`/`token` and its attempt closed; its COMPLETED_COLUMNS, or None
    when the token is stale (nothing written: the caller refuses it). `under`: the key,
    limit and queue it was claimed under with no other guard (COMPLETE_UNDER), else None."""
    params = (now, job_id, token) if result is None else (now, result, job_id, token)
    row: tuple[Any, ...] | None = PLAIN_COMPLETED
    if under is None:
        first = COMPLETE_PLAIN if result is None else COMPLETE_PLAIN_WITH_RESULT
        fenced = params
    else:
        first = COMPLETE_UNDER if result is None else COMPLETE_UNDER_WITH_RESULT
        fenced, (key, limit, queue) = (*params, *under), under
        row = (None, None, queue, key, limit)
    if cur.execute(first, fenced).rowcount != 1:
        row = cur.execute(COMPLETE if result is None else COMPLETE_WITH_RESULT, params).fetchone()
    if row is not None:
        cur.execute(CLOSE_SUCCEEDED, (now, job_id, token))
    return row


def _head_after(
    cur: sqlite3.Cursor, queue: str, now: float, ended: str
) -> tuple[tuple[Any, ...] | None, bool]:
    """_head, and whether the concurrency key `ended` has a parked job (READY_AFTER); with
    no ready job, True (not known)."""
    row = cur.execute(READY_AFTER, (ended, queue, now, queue, 1)).fetchone()
    return (None, True) if row is None else (row[:-1], row[-1] is not None)


def _open(
    cur: Any, row: Any, worker: WorkerRef, now: float, lease: float, under: tuple[Any, ...] = ()
) -> Reservation | None:
    """Claim the ready job READY read as `row` and open its attempt; with `under` (its key,
    now, the key's limit), only while its key has a free slot: None when it has none. Two
    statements where PostgreSQL claims in one (FOR UPDATE SKIP LOCKED: one writer here)."""
    job_id, (name, queue, payload, policy, batch_id, number) = row[0], tuple(row)[8:14]
    params = (number, now + lease, worker.id, job_id, *under)  # row[1], [6]: overlap, concurrency
    claim = CLAIM_UNDER if under else CLAIM if row[1] is None and row[6] is None else CLAIM_GUARDED
    claimed = cur.execute(claim, params).rowcount == 1
    if not claimed and claim is CLAIM:  # a debounce key: READY does not read it (cost)
        claimed = cur.execute(CLAIM_GUARDED, params).rowcount == 1
    if not claimed:
        return None
    cur.execute(ATTEMPT_ROW, (job_id, number, worker.id, worker.host, worker.pid, now, now))
    return quick_reservation(
        job_id, name, queue, payload, parse_policy(policy), number, number, now + lease, batch_id
    )


# What a damaged job row raises while it is claimed: it fails alone (sql/endings.isolated).
DAMAGE = ROW_ERRORS
# what every accepted success returns (frozen: one for all)
SUCCEEDED = EndResult(accepted=True, state="succeeded")


class _Damaged(Exception):
    """A row failed to claim on the savepoint-free path: roll back, claim carefully."""


class SQLiteJobs:
    """A job through its life on the hot path: enqueued, reserved, completed (and the next
    one claimed in the same transaction). SQLiteStore sets `db` and `dialect`."""

    db: SQLiteDatabase
    dialect: Dialect  # the store's SQLITE (dialect.py builds on this module)
    # the jobs this store claimed under a concurrency key and no other guard: id -> (key,
    # limit, queue), for their success's COMPLETE_UNDER (SQLiteStore sets it: a dict of its own)
    _under: dict[str, tuple[str, Any, str]]

    def _remember(self, job_id: str, key: str, limit: Any, queue: str) -> None:
        if len(self._under) >= UNDER_HINTS:
            self._under.clear()  # jobs ended elsewhere (failed, rescued): only hints
        self._under[job_id] = (key, limit, queue)

    def enqueue_many(
        self,
        jobs: Sequence[NewJob],
        *,
        conn: Any = None,
        batch: NewBatch | None = None,
        into_batch: str | None = None,
    ) -> list[str]:
        target = None if batch is None and into_batch is None else batch_target(batch, into_batch)
        with self.db.write() if conn is None else self.db.caller_transaction(conn) as (cur, now):
            if target is not None:
                return batches.enqueue(self.dialect, cur, target, jobs, now)
            return self._enqueue(cur, jobs, now)

    def _enqueue(self, conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float) -> list[str]:
        ids: list[str] = []
        fresh: list[NewJob] = []
        for job in jobs:
            if job.guards.debounce_key is not None:
                pending = sql_guards.debounced(self.dialect, conn, job, now)
                if pending is not None:
                    ids.append(pending)  # the key's one pending job, with these arguments
                    continue
                insert_jobs(conn, [job], now, skip_existing=True)  # seen by the next one
            elif job.guards.unique_key is not None:
                holder = guards.held_unique(conn, job.guards, now)
                if holder is not None:
                    ids.append(holder)  # deduplicated: the holder stands for it
                    continue
                guards.take_unique(conn, job.guards, job.id, now)
                # the next job of this call with the same key must see this one
                insert_jobs(conn, [job], now, skip_existing=True)
            else:
                fresh.append(job)
            ids.append(job.id)
        # an id already present is skipped: a dispatch retried after a lost reply must not
        # create the job twice
        insert_jobs(conn, fresh, now, skip_existing=True)
        for job, stored in zip(jobs, ids, strict=True):
            if job.guards.fair_key is not None and stored == job.id:
                sql_guards.place_fairly(self.dialect, conn, job)
        return ids

    def reserve(
        self, *, queues: Sequence[str], worker: WorkerRef, lease: float, limit: int = 1
    ) -> list[Reservation]:
        if limit < 1:
            return []
        # A poll that finds nothing ready takes no write lock: one read of each queue's head,
        # no transaction (a worker with free slots, e.g. waiting on a concurrency limit, polls
        # often, and each BEGIN IMMEDIATE would queue behind the one writer).
        conn = self.db.checked_conn()
        now = self.db.clock(conn)
        if not any(conn.execute(ANY_READY, (queue, now, queue)).fetchone() for queue in queues):
            return []
        with self.db.write() as (conn, now):
            return self._reserve_on(conn, now, queues, worker, lease, limit)

    def end_attempt(
        self,
        ending: Ending,
        *,
        queues: Sequence[str] = (),
        worker: WorkerRef | None = None,
        lease: float = 0.0,
    ) -> tuple[EndResult, Reservation | None]:
        # One write transaction for the end and the next claim: the hot path of a busy worker.
        # The claim runs without a savepoint; a row that fails to claim (damaged) rolls the
        # whole transaction back, and it runs again with each claim in its own savepoint.
        # The transaction is written out rather than db.write()'s `with` (four calls a job).
        db = self.db
        for careful in (False, True):
            conn = db.checked_conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                now = sqlite_now() if db.frozen is None else db.frozen()
                done = self._end_and_claim(conn, now, ending, queues, worker, lease, careful)
            except _Damaged:
                conn.execute("ROLLBACK")
                continue
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")  # an error propagates
            return done
        raise AssertionError("unreachable: the careful claim isolates every row")

    def _end_and_claim(
        self,
        conn: sqlite3.Connection,
        now: float,
        ending: Ending,
        queues: Sequence[str],
        worker: WorkerRef | None,
        lease: float,
        careful: bool,
    ) -> tuple[EndResult, Reservation | None]:
        """end_attempt's transaction. A success's concurrency slot is handed back after the
        next claim: when that claim took a slot of the same key, the key's free slots are
        what they were before the end, and no parked job has one to take (nothing to hand
        back, no statement). One cursor for the success and the claim."""
        held = None
        cur = conn.cursor()
        cur.row_factory = None  # _cursor's plain tuples, without the call
        if ending.outcome == "succeeded":
            ended, held = self._succeed(conn, ending.job_id, ending.token, now, ending.result, cur)
        else:
            ended = endings.end_attempt(self.dialect, conn, lambda: now, ending)
        if worker is None or not queues or careful:
            if held is not None:
                self._release(conn, held, now)
            if worker is None or not queues:
                return ended, None
            claimed = self._reserve_on(conn, now, queues, worker, lease, 1)
            return ended, claimed[0] if claimed else None
        after = None if held is None else held[3]
        following, key, parked = self._claim_next(conn, now, queues, worker, lease, after, cur)
        if held is None or key == held[3] or not parked:
            return ended, following
        # a parked job handed back may be this worker's next
        if self._release(conn, held, now) and following is None:
            following, _, _ = self._claim_next(conn, now, queues, worker, lease, None, cur)
        return ended, following

    def _claim_next(
        self,
        conn: sqlite3.Connection,
        now: float,
        queues: Sequence[str],
        worker: WorkerRef,
        lease: float,
        ended: str | None = None,
        cur: sqlite3.Cursor | None = None,
    ) -> tuple[Reservation | None, str | None, bool]:
        """The next job of `queues` claimed, no savepoint (a damaged row raises _Damaged), the
        concurrency key it took a slot of on the way here (else None), and whether the key
        `ended` (a success's, else None) may have a parked job now: False only when the first
        head read said it had none and nothing was parked since. On tuples while a queue's
        head has no guard but perhaps a concurrency limit (CLAIM_UNDER counts and claims in
        one statement; a full key's head is parked, and the rest of the queue is looked at),
        else the general path from that queue on."""
        cur = _cursor(conn) if cur is None else cur
        parked = True
        for i, queue in enumerate(queues):
            if ended is None:  # the ready job `queue` would hand out now (READY's columns)
                row = cur.execute(READY, (queue, now, queue, 1)).fetchone()
            else:
                row, parked = _head_after(cur, queue, now, ended)
                ended = None if row is not None else ended  # asked once, with a head
            if row is None:
                continue
            # no overlap or rate key; perhaps a concurrency key (row[6])
            if row[1] is None and row[3] is None:
                key = row[6]
                try:
                    if key is None:
                        return _open(cur, row, worker, now, lease), None, parked
                    claimed = _open(cur, row, worker, now, lease, (key, now, row[7] or 1))
                    if claimed is not None:
                        self._remember(claimed.job_id, key, row[7], claimed.queue)
                        return claimed, key, parked
                    sql_guards.park(self.dialect, cur, row[0])  # over its limit: not reserved
                except DAMAGE as exc:
                    raise _Damaged() from exc
            # (the general path may park jobs of any key: not known)
            rest = self._reserve_on(conn, now, queues[i:], worker, lease, 1, False)
            return (rest[0] if rest else None), None, True
        return None, None, True

    def _reserve_on(
        self,
        conn: sqlite3.Connection,
        now: float,
        queues: Sequence[str],
        worker: WorkerRef,
        lease: float,
        limit: int,
        careful: bool = True,
    ) -> list[Reservation]:
        """Claim up to `limit` jobs. `careful`: each in a savepoint, a damaged one failed alone;
        else no savepoint, and a damaged row raises _Damaged (the caller starts again)."""
        out: list[Reservation] = []
        full: set[str] = set()  # concurrency keys found without a free slot
        for queue in queues:  # priority order: drain earlier queues first
            want = limit - len(out)
            rows = self._ready(conn, queue, now, want)
            # guarded jobs may be parked or deferred: then look a little further than
            # `limit` (when there is further to look), past the rows judged already
            further = len(rows) == want and any(
                r["overlap_key"] is not None
                or r["rate_key"] is not None
                or r["concurrency_key"] is not None
                for r in rows
            )
            judged: set[str] = set()
            self._claim_rows(conn, rows, judged, worker, now, lease, limit, out, full, careful)
            if further and len(out) < limit:
                rows = self._ready(conn, queue, now, want + sql_guards.RESERVE_LOOKAHEAD)
                self._claim_rows(conn, rows, judged, worker, now, lease, limit, out, full, careful)
            if len(out) >= limit:
                break
        return out

    def _claim_rows(
        self,
        conn: sqlite3.Connection,
        rows: list[Any],
        judged: set[str],
        worker: WorkerRef,
        now: float,
        lease: float,
        limit: int,
        out: list[Reservation],
        full: set[str],
        careful: bool,
    ) -> None:
        """_claim each of `rows` not `judged` yet, in order, until `out` holds `limit`."""
        for row in rows:
            if len(out) >= limit:
                break
            if row["id"] in judged:
                continue
            judged.add(row["id"])
            if not careful:
                try:
                    self._claim(conn, row, worker, now, lease, out, full)
                except DAMAGE as exc:
                    raise _Damaged() from exc
                continue
            with endings.isolated(self.dialect, conn, row["id"], now, "start"):
                self._claim(conn, row, worker, now, lease, out, full)

    def _claim(
        self,
        conn: sqlite3.Connection,
        row: Any,
        worker: WorkerRef,
        now: float,
        lease: float,
        out: list[Reservation],
        full: set[str],
    ) -> None:
        """Open the ready job's attempt into `out`, park it when its concurrency key is full,
        or defer it if its guard says not now. `full`: the keys found without a free slot in
        this transaction; they stay full, since no attempt ends inside it."""
        key = row["concurrency_key"]
        if key is not None and row["overlap_key"] is None and row["rate_key"] is None:
            # a limit alone: the count and the claim in one statement (OPEN_UNDER)
            limit = (key, now, row["concurrency_limit"] or 1)
            claimed = None if key in full else _open(conn, row, worker, now, lease, limit)
            if claimed is None:
                full.add(key)
                sql_guards.park(self.dialect, conn, row["id"])
            else:
                out.append(claimed)
                self._remember(claimed.job_id, key, row["concurrency_limit"], claimed.queue)
            return
        if key is not None and (
            key in full
            or sql_guards.running_under(self.dialect, conn, key, now)
            >= (row["concurrency_limit"] or 1)
        ):
            full.add(key)
            sql_guards.park(self.dialect, conn, row["id"])
            return
        deferral = guards.deferral(conn, row, now)
        if deferral is not None:
            guards.defer(conn, row["id"], worker, now, *deferral)
        else:
            opened = _open(conn, row, worker, now, lease)
            if opened is not None:  # (it is: nothing else claims it under the write lock)
                out.append(opened)

    @staticmethod
    def _ready(conn: sqlite3.Connection, queue: str, now: float, limit: int) -> list[Any]:
        return conn.execute(READY, (queue, now, queue, limit)).fetchall()

    def _complete_on(
        self,
        conn: sqlite3.Connection,
        job_id: str,
        token: int,
        now: float,
        result: str | None = None,
    ) -> EndResult:
        ended, held = self._succeed(conn, job_id, token, now, result)
        if held is not None:
            self._release(conn, held, now)
        return ended

    def _succeed(
        self,
        conn: sqlite3.Connection,
        job_id: str,
        token: int,
        now: float,
        result: str | None,
        cur: sqlite3.Cursor | None = None,
    ) -> tuple[EndResult, tuple[Any, ...] | None]:
        """The success and what follows it, but the hand-back of its concurrency slot: that
        is left to the caller (_release), with the COMPLETED_COLUMNS returned (else None)."""
        # The fencing check and the update are one statement: no row means the token is stale,
        # and then its result is not written either.
        cur = _cursor(conn) if cur is None else cur
        row = _complete(cur, job_id, token, now, result, self._under.pop(job_id, None))
        if row is None:
            return endings.refuse(self.dialect, conn, job_id, token, "succeeded", now), None
        batch_id, chain, _, key, _ = row
        if batch_id is not None or chain is not None:
            # a chain's next link in this same transaction: a kill before the commit loses
            # neither the success nor the link
            endings.after_success(self.dialect, conn, job_id, batch_id, chain, now, result)
        return SUCCEEDED, (row if key is not None else None)

    def _release(self, conn: sqlite3.Connection, held: tuple[Any, ...], now: float) -> int:
        """The key of a success's COMPLETED_COLUMNS `held` has a free slot: its parked jobs
        handed back (sql.guards.release); how many."""
        job = dict(zip(COMPLETED_COLUMNS, held, strict=True))
        return sql_guards.release(self.dialect, conn, job, now)
