"""A job through its life on Redis, the hot path: enqueued, reserved, ended (a success and the
next reservation in one script), its lease renewed by the heartbeat, and the waits for new work
or for a job's end. Each step is one script or one pipeline of them; the replies are read here,
so a job's walk goes from here to the database (database.py) and back, not to and fro. Rescue,
pruning, cancel and the operators' switches are store.py's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from tenure.core import chains
from tenure.core.errors import ConfigError, TenureError
from tenure.core.records import (
    Ending,
    EndResult,
    HeartbeatReply,
    NewBatch,
    NewJob,
    Reservation,
    WorkerRecord,
    WorkerRef,
    batch_target,
)
from tenure.core.retry import Counters, cancelled_ending, decide, parse_policy
from tenure.core.states import visible_state
from tenure.stores import texts
from tenure.stores.redis.batches import RedisBatches
from tenure.stores.redis.database import (
    MIN_BLOCK_S,
    Call,
    enqueue_args,
    optional,
    plain,
    plain_args,
    trim_plain,
)
from tenure.stores.redis.records import to_float, to_opt_float

STALE = "stale token: lease taken over"
ENQUEUE_CHUNK = 500  # jobs per script call: keeps one script from blocking Redis for long
# A conflict means another client changed the job between our read and our write (a rescue or
# a late result); the next read sees that change and settles it, so this bound is never reached
# in practice; it only turns a bug into an error instead of a hang.
MAX_CAS_ROUNDS = 50
# How long a reserve's "nothing here, next due then" (db.idle) stands in for next_due: the wait
# follows its reserve at once in a worker's loop; an older answer is asked again.
IDLE_FRESH_S = 1.0
# A claimed job in a reserve's flat reply: id, name, payload, policy, attempt, expiry, batch id.
CLAIM_FIELDS = 7
# A refused end's reply: 'refused', the job's state, its run_at, the server's now.
REFUSED_FIELDS = 4


class RedisJobs(RedisBatches):
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
            what = (
                "enqueue"
                if target is None
                else "create a batch"
                if isinstance(target, NewBatch)
                else "add to a batch"
            )
            raise ConfigError(
                f"conn=: Redis cannot {what} inside your database transaction; use PostgreSQL "
                "or SQLite for conn=, or dispatch after your commit"
            )
        if target is None:
            return self._enqueue_jobs(jobs)
        if isinstance(target, NewBatch):
            return self._create_batch(target, jobs)
        return self._add_to_batch(target, jobs)

    def _enqueue_jobs(self, jobs: Sequence[NewJob]) -> list[str]:
        """enqueue_many of plain jobs: unique keys taken in each queue's script."""
        if not jobs:
            return []
        # a chain's later links and callbacks go to queues named in its spec, with their keys
        later = {q for job in jobs if job.chain is not None for q in chains.queues(job.chain)}
        jobs = [
            job
            if job.chain is None
            else replace(job, chain=chains.with_bases(job.chain, self.db.base))
            for job in jobs
        ]
        by_queue: dict[str, list[int]] = {}
        for i, job in enumerate(jobs):
            by_queue.setdefault(job.queue, []).append(i)
        # The registry first: a job must never exist in a queue that get_job cannot find.
        # The registry only grows, so a queue this client registered once is registered.
        wanted = [*by_queue, *(q for q in sorted(later) if q not in by_queue)]
        unregistered = [q for q in wanted if q not in self.db.registered_queues]
        calls: list[Call] = []
        if unregistered:
            calls.append(
                (self.db.g["register_queues"], [self.db.global_key("queues")], unregistered)
            )
        positions: list[list[int]] = []
        for queue, indexes in by_queue.items():
            for start in range(0, len(indexes), ENQUEUE_CHUNK):
                chunk = indexes[start : start + ENQUEUE_CHUNK]
                args: list[Any] = []
                if all(plain(jobs[i]) for i in chunk):  # the usual dispatch: the short script
                    for i in chunk:
                        args += plain_args(jobs[i])
                    calls.append(self.db.qcall("enqueue_plain", queue, *trim_plain(args)))
                    positions.append([])  # its reply is a count: each job keeps its own id
                    continue
                for i in chunk:
                    args += enqueue_args(jobs[i])
                calls.append(self.db.qcall("enqueue", queue, *args))
                positions.append(chunk)
        ids = [job.id for job in jobs]
        # One call (the common dispatch of one job) skips the pipeline's machinery.
        results = [self.db.run(calls[0])] if len(calls) == 1 else self.db.run_many(calls)
        self.db.registered_queues.update(unregistered)
        for chunk, stored in zip(positions, results[len(calls) - len(positions) :], strict=True):
            if not chunk:  # enqueue_plain's count
                continue
            for i, job_id in zip(chunk, stored, strict=True):
                ids[i] = str(job_id)
        for job, job_id in zip(jobs, ids, strict=True):
            self.db.remember(job_id, job.queue)
        return ids

    def reserve(
        self, *, queues: Sequence[str], worker: WorkerRef, lease: float, limit: int = 1
    ) -> list[Reservation]:
        out: list[Reservation] = []
        for queue in dict.fromkeys(queues):  # priority order: drain earlier queues first
            if len(out) >= limit:
                break
            args = self._reserve_args(limit - len(out), worker, lease)
            rows = self.db.run(self.db.qcall("reserve", queue, *args, "1"))
            out += self._reservations(queue, rows)
        return out

    @staticmethod
    def _reserve_args(limit: int, worker: WorkerRef, lease: float) -> tuple[Any, ...]:
        return limit, repr(float(lease)), worker.id, worker.host, worker.pid

    def _reservations(self, queue: str, rows: Sequence[Any], at: int = 0) -> list[Reservation]:
        """A reserve's flat reply from position `at` (lib/hot_path.lua's reserve_into): how many
        jobs were claimed, then CLAIM_FIELDS per job; none claimed by a worker's own reserve:
        then the server's now and the earliest future run_at, kept for the wait that follows."""
        claimed = int(rows[at])
        if not claimed:
            if len(rows) > at + 1:
                now_text, due = rows[at + 1], rows[at + 2]
                self.db.idle[queue] = (time.monotonic(), float(now_text), to_opt_float(due))
            return []
        out = []
        first = at + 1
        for start in range(first, first + claimed * CLAIM_FIELDS, CLAIM_FIELDS):
            job_id, name, payload, policy, attempt, expires, batch_id = rows[
                start : start + CLAIM_FIELDS
            ]
            self.db.remember(job_id, queue)
            out.append(
                Reservation(
                    job_id=job_id,
                    name=name,
                    queue=queue,
                    payload=payload,
                    policy=parse_policy(policy),
                    attempt=int(attempt),
                    token=int(attempt),
                    lease_expires_at=float(expires),
                    batch_id=batch_id,
                )
            )
        return out

    def end_attempt(
        self,
        ending: Ending,
        *,
        queues: Sequence[str] = (),
        worker: WorkerRef | None = None,
        lease: float = 0.0,
    ) -> tuple[EndResult, Reservation | None]:
        if ending.outcome == "succeeded":
            return self._succeed(ending.job_id, ending.token, queues, worker, lease, ending.result)
        ended = self._fail(ending)
        if worker is None or not queues:
            return ended, None
        claimed = self.reserve(queues=queues, worker=worker, lease=lease, limit=1)
        return ended, claimed[0] if claimed else None

    def _succeed(
        self,
        job_id: str,
        token: int,
        queues: Sequence[str],
        worker: WorkerRef | None,
        lease: float,
        result: str | None,
    ) -> tuple[EndResult, Reservation | None]:
        """One round trip: one atomic script when the next job is looked for in the finished
        job's own queue (the usual case: their keys share a hash tag), else the two scripts in
        one pipeline. A connection lost between those two leaves the success recorded and at
        worst one claimed job whose lease expires and is rescued, as after any lost reply."""
        order = list(dict.fromkeys(queues))
        # A job another process reserved (the worker's supervisor) is not in this one's cache:
        # it is tried in the worker's first queue, the usual one, rather than looked up (two
        # round trips). There, a job of another queue is only refused as missing: no write.
        guessed = worker is not None and bool(order) and job_id not in self.db.job_queue
        queue = order[0] if guessed else self.db.locate(job_id)
        if queue is None:
            return EndResult(accepted=False, state="missing", reason=STALE), None
        if worker is None or not order:
            reply = self.db.run(
                self.db.qcall("complete", queue, job_id, int(token), optional(result))
            )
            return _ended(reply), None
        ending, claim = (job_id, int(token)), self._reserve_args(1, worker, lease)
        if queue == order[0]:
            # one flat reply: the end's ('ok', or 'refused' and 3 fields), then the claim's; the
            # claim is of one job (no limit sent), and no result is sent when there is none
            tail = () if result is None else (optional(result),)
            call = self.db.qcall("complete_and_reserve", queue, *ending, *claim[1:], *tail)
            reply = rows = self.db.run(call)
            at = 1 if reply[0] == "ok" else REFUSED_FIELDS
        else:
            completion = self.db.qcall("complete", queue, *ending, optional(result))
            reply, rows = self.db.run_many([completion, self.db.qcall("reserve", order[0], *claim)])
            at = 0
        ended = _ended(reply)
        if guessed and ended.state == "missing":  # not in that queue: completed where it is
            ended, _ = self._succeed(job_id, token, (), None, lease, result)
        elif guessed:
            self.db.remember(job_id, queue)
        claimed = self._reservations(order[0], rows, at)
        if not claimed and len(order) > 1:
            claimed = self.reserve(queues=order[1:], worker=worker, lease=lease, limit=1)
        return ended, claimed[0] if claimed else None

    def heartbeat(
        self,
        *,
        worker: WorkerRef | WorkerRecord,
        leases: Sequence[tuple[str, int]] = (),
        lease: float = 0.0,
        memory: Mapping[str, float] | None = None,
    ) -> HeartbeatReply:
        located = self.db.locate_many([job_id for job_id, _ in leases])
        by_queue: dict[str, list[Any]] = {}
        lost: set[str] = set()
        cancel: set[str] = set()
        for job_id, token in leases:
            queue = located.get(job_id)
            if queue is None:
                lost.add(job_id)
            else:
                reading = (memory or {}).get(job_id)
                mb = "" if reading is None else repr(float(reading))
                by_queue.setdefault(queue, []).extend((job_id, int(token), mb))
        # the worker's row first (starting or stopping), then seen, in the same round trip
        written = [self._worker_row(worker)] if isinstance(worker, WorkerRecord) else []
        seen = [self.db.global_key(f"worker:{worker.id}"), self.db.global_key("control")]
        calls: list[Call] = [*written, (self.db.g["beat_worker"], seen, [])]
        calls += [
            self.db.qcall("heartbeat", q, repr(float(lease)), *p) for q, p in by_queue.items()
        ]
        restart, *renewals = self.db.run_many(calls)[len(written) :]
        for queue_lost, queue_cancel in renewals:
            lost.update(queue_lost)
            cancel.update(queue_cancel)
        return HeartbeatReply(
            lost=[job_id for job_id, _ in leases if job_id in lost],
            cancel=[job_id for job_id, _ in leases if job_id in cancel],
            restart_requested_at=to_opt_float(restart),
        )

    def _worker_row(self, record: WorkerRecord) -> Call:
        """The write of a worker's row that `heartbeat` sends with a WorkerRecord."""
        key = self.db.global_key(f"worker:{record.id}")
        if record.stopped_at is not None:  # the worker stopped: its row, stamped now
            return (self.db.g["touch_worker"], [key], ["stopped_at"])
        if record.stopping_at is not None:  # its first SIGTERM, with attempts still running
            return (self.db.g["touch_worker"], [key], ["stopping_at"])
        return (
            self.db.g["register_worker"],
            [key, self.db.global_key("workers")],
            [
                record.id,
                record.host,
                record.pid,
                json.dumps(list(record.queues)),
                record.concurrency,
                "" if record.known is None else json.dumps(list(record.known)),
            ],
        )

    def _fail(self, e: Ending) -> EndResult:
        job_id, token, outcome = e.job_id, int(e.token), e.outcome
        queue = self.db.locate(job_id)
        if queue is None:
            return EndResult(accepted=False, state="missing", reason=STALE)
        for _ in range(MAX_CAS_ROUNDS):
            reply = self.db.run(self.db.qcall("end_read", queue, job_id, token, outcome))
            if reply[0] == "refused":
                return _refused(reply)
            ending = (job_id, token, outcome, *texts.recorded(e.error_text, e.traceback), e.cause)
            mode = "end" if e.record else "forget"
            result = self._apply_end(
                queue, ending, reply[2:], float(reply[1]), e.permanent, mode, e.snooze
            )
            if result is not None:
                return result
        raise TenureError(f"job {job_id}: its record kept changing while ending attempt {token}")

    def _apply_end(
        self,
        queue: str,
        ending: tuple[str, int, str, str, str | None, str | None],
        read: Sequence[Any],
        now: float,
        permanent: bool,
        mode: str,
        snooze: float = 0.0,
    ) -> EndResult | None:
        """Decide in Python, apply in Lua if the job is unchanged; None when it changed.
        `ending` is (job id, token, outcome, error, traceback, cause); `read` what the script
        read of the job: its policy, tries used, exceptions, and whether a cancel was asked."""
        job_id, token, outcome, error, traceback, cause = ending
        policy, tries_used, exceptions, cancel_requested = read
        counters = Counters(int(tries_used), int(exceptions))
        decision = decide(
            parse_policy(policy),
            counters,
            outcome,
            now,
            permanent=permanent,
            cancel_requested=bool(cancel_requested),
            snooze=snooze,
        )
        new = decision.counters
        last_error = error if decision.retry else f"{error}; failed because {decision.reason}"
        retry = "1" if decision.retry else "0"
        if decision.cancel:
            outcome, error = cancelled_ending(outcome, error)
            last_error, retry = error, "c"
        reply = self.db.run(
            self.db.qcall(
                "end_apply",
                queue,
                *(job_id, token, outcome, optional(error), optional(traceback), retry),
                *(repr(float(decision.delay)), new.tries_used, new.exceptions, last_error),
                *(counters.tries_used, counters.exceptions, mode, cause or ""),
            )
        )
        if reply[0] == "conflict":
            return None
        if reply[1] == "queued":
            state = "queued" if decision.delay <= 0 else "scheduled"
            return EndResult(True, state, decision.reason, decision.delay)
        if reply[1] == "cancelled" and decision.cancel:
            return EndResult(True, "cancelled", decision.reason)
        if reply[1] == "cancelled":
            return EndResult(True, "cancelled", "its batch no longer runs new work")
        return EndResult(True, "failed", decision.reason)

    def wait_for_work(
        self, *, queues: Sequence[str], timeout: float, ended: Sequence[str] = ()
    ) -> None:
        if timeout <= 0:
            return
        wait = min(timeout, self.db.block_cap)
        names = list(dict.fromkeys(queues))
        if ended:
            self._wait_for_ends(ended, wait)
            return
        if not names:
            time.sleep(wait)
            return
        # Sleep no longer than until the earliest delayed job is due: nothing pushes a wake-up
        # when a run_at merely passes. A reserve that just found a queue idle said when (its
        # reply, db.idle); another queue is asked. (A job enqueued since pushes a wake-up.)
        asked = []
        for queue in names:
            seen = self.db.idle.pop(queue, None)
            if seen is None or time.monotonic() - seen[0] > IDLE_FRESH_S:
                asked.append(queue)
            elif seen[2] is not None:
                wait = min(wait, seen[2] - seen[1] - (time.monotonic() - seen[0]) + 0.002)
        for now_text, due in self.db.run_many([self.db.qcall("next_due", q) for q in asked]):
            if due is not None:
                wait = min(wait, float(due) - float(now_text) + 0.002)
        wait = max(wait, MIN_BLOCK_S)
        self.db.wait_for_token([f"{self.db.base(q)}:notify" for q in names], wait)

    def _wait_for_ends(self, job_ids: Sequence[str], wait: float) -> None:
        """A waiter is the job's field `waiter` (wait_end.lua), read by the script that ends
        the job with the rest of it and turned into a token on `woken:ID` (prelude.lua's
        wake_waiters), popped here. A waiter new on this call returns at once, for the caller
        to read the job again: an end before the mark woke nobody."""
        located = self.db.locate_many(job_ids)
        if not located:
            time.sleep(wait)  # no such job: the caller's read says so
            return
        by_queue: dict[str, list[str]] = {}
        for job_id, queue in located.items():
            by_queue.setdefault(queue, []).append(job_id)
        marked = self.db.run_many(
            [self.db.qcall("wait_end", q, *ids) for q, ids in by_queue.items()]
        )
        if not all(all(int(was) for was in reply) for reply in marked):
            return
        keys = [f"{self.db.base(q)}:woken:{job_id}" for job_id, q in located.items()]
        self.db.wait_for_token(keys, max(wait, MIN_BLOCK_S))


def _refused(reply: list[Any]) -> EndResult:
    _, state, run_at, now_text = reply[:REFUSED_FIELDS]
    shown = "missing" if state is None else visible_state(state, to_float(run_at), float(now_text))
    return EndResult(accepted=False, state=shown, reason=STALE)


def _ended(reply: list[Any]) -> EndResult:
    """A success script's reply: recorded, or refused with what the job is now."""
    return EndResult(accepted=True, state="succeeded") if reply[0] == "ok" else _refused(reply)
