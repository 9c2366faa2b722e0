"""The Redis store: every state change is one atomic Lua script, and Redis's TIME is the clock.

What survives a Redis restart
-----------------------------
tenure keeps jobs, attempts, workers and restart requests in Redis itself (Redis 6.2 or newer),
so a restart keeps exactly what Redis persisted:

- **AOF on** (`appendonly yes`, with the usual `appendfsync everysec`): everything, except at
  most the last second of changes when the Redis process or its machine dies abruptly (crash,
  OOM kill, power loss); a clean shutdown loses nothing, and `appendfsync always` loses nothing
  acknowledged. Every state change is one Lua script, written to the AOF as one MULTI/EXEC
  block, so replaying the file never leaves a job half-moved (out of its queue but not running).
- **RDB snapshots only** (Redis's default `save` rules, AOF off): a clean shutdown writes a final
  snapshot and loses nothing; an abrupt end goes back to the last snapshot, which may be minutes
  old. Jobs dispatched after it are gone. Jobs that finished after it come back as queued, or as
  running (then rescued as `crashed` once their lease expires), and run again; the attempts and
  results recorded after the snapshot are not in the history.
- **No persistence** (`save ""`, AOF off): nothing. Every job, attempt, failed job, worker
  record and restart request is gone; a worker still running a job has its result refused
  because the job no longer exists.

Whatever the persistence: leases and schedules use the Redis server's clock. An outage longer
than the lease (30 s by default) ends the running attempts: their workers cannot renew, stop
them, and each is recorded (`lost_lease`, or `crashed` when a rescue finds the expired lease
first) and retried by its policy. Replicas are asynchronous: a failover may lose the writes the
old primary acknowledged last, unless `wait_replicas=N` (1 by default on redis+sentinel://,
connection.py) makes every write wait for N replicas; the new primary's clock becomes the
lease clock (keep servers on NTP). Set `maxmemory-policy noeviction`: an evicting policy deletes
jobs silently. Where a lost job matters, turn AOF on.

Key layout
----------
All keys start with `PREFIX:` (default `tenure`, set with `?prefix=NAME` in the URL). A queue's
keys share the hash tag `{q:QUEUE}`, so each lives in one Redis Cluster slot and every script
touches one slot only:

    PREFIX:{q:QUEUE}:job:ID       hash   the job (state stored as queued|running|succeeded|...;
                                         field `result`: its stored result, deleted with it)
    PREFIX:{q:QUEUE}:att:ID       hash   its attempts, fields "N.worker_id", "N.outcome", ...
    PREFIX:{q:QUEUE}:queued       zset   queued jobs of priority 0 by run_at ("scheduled" = run_at
                                         in future), members "SEQ:ID" (FIFO at one run_at)
    PREFIX:{q:QUEUE}:queued:pN    zset   the same for priority N (N != 0; field `priority`)
    PREFIX:{q:QUEUE}:priorities   zset   the N that may have jobs, by N: reserve walks lowest first
    PREFIX:{q:QUEUE}:running      zset   running jobs by lease expiry: rescue is a range query
    PREFIX:{q:QUEUE}:idx:STATE    zset   job ids by sequence, for list_jobs newest first
    PREFIX:{q:QUEUE}:all          zset   every job id by sequence
    PREFIX:{q:QUEUE}:seq          string the queue's sequence counter
    PREFIX:{q:QUEUE}:notify       list   wake-up tokens idle workers BLPOP
    PREFIX:{q:QUEUE}:waiter:ID    string someone waits for job ID's end (JobHandle.wait; TTL)
    PREFIX:{q:QUEUE}:woken:ID     list   the token its end leaves for that waiter (TTL 60 s)
    PREFIX:{q:QUEUE}:uniq:KEY, :overlap, :rate:KEY, :once:ID   guards (see guards.py)
    PREFIX:{q:QUEUE}:periodic     hash   periodic jobs whose runs go to QUEUE (periodic.py)
    PREFIX:{g}:queues             set    every queue name ever used
    PREFIX:{g}:workers, :worker:ID, :control, :meta

Batches
-------
A batch lives under the hash tag of its *home* queue: the queue of its first member, else of its
first callback, else `default` (`PREFIX:{q:HOME}:batch:ID`, the batch and its counts, and
`:bopen:ID`, its members not settled yet); `PREFIX:{g}:batch_queues` maps a batch id to its
home, `PREFIX:{g}:batches` orders batches for listing. A member's end and its batch's
bookkeeping (counts, cancelling the members still queued, enqueuing then/catch/finally exactly
once) are one Lua script (lua/lib/batch_io.lua), so they are never torn and never repeated.

On a single server or a Sentinel-managed one, a batch's members and callbacks may use any mix
of queues: the script reaches the other queues' keys too. On Redis Cluster they would sit in
other slots, so there every member and callback of a batch must use the batch's one queue;
enqueue_many(batch=, into_batch=) refuses anything else with a ConfigError before writing.

Operations over several queues (reserving across queues in priority order, counts, list_jobs,
finding a job by id alone) run one script per queue: each queue's part is atomic, the whole is
not, exactly like a worker asking each queue in turn. Waiting on several queues uses one BLPOP
over their notify lists; on a cluster, one per slot in turn (cluster.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, cast

import redis

from tenure.errors import ConfigError, TenureError
from tenure.retry import Counters, Policy, cancelled_ending, decide, parse_policy
from tenure.states import visible_state
from tenure.stores.base import (
    AttemptRecord,
    CancelResult,
    Capabilities,
    EndResult,
    HeartbeatReply,
    NewBatch,
    NewJob,
    Pruned,
    Rescued,
    Reservation,
    Swept,
    WorkerRecord,
    WorkerRef,
    batch_target,
    cancel_target,
    describe_crash,
)
from tenure.stores.redis.batches import RedisBatches
from tenure.stores.redis.client import (
    MIN_BLOCK_S,
    Call,
    optional,
)
from tenure.stores.redis.guards import RedisGuards
from tenure.stores.redis.operations import RedisOperations
from tenure.stores.redis.periodic import RedisPeriodic
from tenure.stores.redis.records import (
    to_float,
    to_int,
    to_opt_float,
)
from tenure.stores.redis.workers import RedisWorkers

log = logging.getLogger("tenure.stores.redis")

STALE = "stale token: lease taken over"

RESCUE_CHUNK = 500
# A conflict means another client changed the job between our read and our write (a rescue or
# a late result); the next read sees that change and settles it, so this bound is never reached
# in practice; it only turns a bug into an error instead of a hang.
MAX_CAS_ROUNDS = 50


class RedisStore(RedisBatches, RedisGuards, RedisPeriodic, RedisWorkers, RedisOperations):
    capabilities: ClassVar[Capabilities] = Capabilities(
        name="Redis",
        job_transactions=False,
        enqueue_in_caller_transaction=False,
        concurrent_job_transactions=False,
        listen_notify=False,
        many_hosts=True,
    )

    # -- the Store protocol --------------------------------------------------------------
    def migrate(self) -> None:
        """Redis needs no schema; record the key layout so a future one can be recognised."""
        self.check_layout()
        try:
            policy = cast(dict[str, str], self._redis.config_get("maxmemory-policy"))
        except redis.ResponseError:  # managed services often forbid CONFIG
            return
        # tenure's keys carry no TTL, so only the allkeys-* policies can evict them.
        if policy.get("maxmemory-policy", "").startswith("allkeys-"):
            log.warning(
                "Redis maxmemory-policy is %s: under memory pressure Redis will delete tenure's "
                "jobs without a trace; set maxmemory-policy noeviction",
                policy["maxmemory-policy"],
            )

    def close(self) -> None:
        self._disconnect()

    # -- jobs through their life ---------------------------------------------------------
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

    def reserve(
        self, *, queues: Sequence[str], worker: WorkerRef, lease: float, limit: int = 1
    ) -> list[Reservation]:
        out: list[Reservation] = []
        for queue in dict.fromkeys(queues):  # priority order: drain earlier queues first
            if len(out) >= limit:
                break
            rows = self._run(
                self._qcall("reserve", queue, *self._reserve_args(limit - len(out), worker, lease))
            )
            out += self._reservations(queue, rows)
        return out

    @staticmethod
    def _reserve_args(limit: int, worker: WorkerRef, lease: float) -> tuple[Any, ...]:
        return limit, repr(float(lease)), worker.id, worker.host, worker.pid

    def _reservations(self, queue: str, rows: Sequence[Any]) -> list[Reservation]:
        out = []
        for job_id, name, payload, policy, attempt, expires, batch_id in rows:
            self._remember(job_id, queue)
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
        ended = self._fail(job_id, token, outcome, error or outcome, traceback, permanent)
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
        queue = self._locate(job_id)
        if queue is None:
            return EndResult(accepted=False, state="missing", reason=STALE), None
        if worker is None or not order:
            reply = self._run(self._qcall("complete", queue, job_id, int(token), optional(result)))
            return _ended(reply), None
        if queue == order[0]:
            reply, rows = self._run(
                self._qcall(
                    "complete_and_reserve",
                    queue,
                    job_id,
                    int(token),
                    *self._reserve_args(1, worker, lease),
                    optional(result),
                )
            )
        else:
            reply, rows = self._run_many(
                [
                    self._qcall("complete", queue, job_id, int(token), optional(result)),
                    self._qcall("reserve", order[0], *self._reserve_args(1, worker, lease)),
                ]
            )
        ended = _ended(reply)
        claimed = self._reservations(order[0], rows)
        if not claimed and len(order) > 1:
            claimed = self.reserve(queues=order[1:], worker=worker, lease=lease, limit=1)
        return ended, claimed[0] if claimed else None

    def heartbeat(
        self,
        *,
        worker: WorkerRef | WorkerRecord,
        leases: Sequence[tuple[str, int]] = (),
        lease: float = 0.0,
    ) -> HeartbeatReply:
        located = self._locate_many([job_id for job_id, _ in leases])
        by_queue: dict[str, list[Any]] = {}
        lost: set[str] = set()
        cancel: set[str] = set()
        for job_id, token in leases:
            queue = located.get(job_id)
            if queue is None:
                lost.add(job_id)
            else:
                by_queue.setdefault(queue, []).extend((job_id, int(token)))
        # the worker's row first (starting or stopping), then seen, in the same round trip
        written = [self._worker_row(worker)] if isinstance(worker, WorkerRecord) else []
        calls: list[Call] = [
            *written,
            (
                self._g["beat_worker"],
                [self._global_key(f"worker:{worker.id}"), self._global_key("control")],
                [],
            ),
        ]
        calls += [
            self._qcall("heartbeat", queue, repr(float(lease)), *pairs)
            for queue, pairs in by_queue.items()
        ]
        restart, *renewals = self._run_many(calls)[len(written) :]
        for queue_lost, queue_cancel in renewals:
            lost.update(queue_lost)
            cancel.update(queue_cancel)
        return HeartbeatReply(
            lost=[job_id for job_id, _ in leases if job_id in lost],
            cancel=[job_id for job_id, _ in leases if job_id in cancel],
            restart_requested_at=to_opt_float(restart),
        )

    def cancel(self, job_id: str | None = None, *, batch_id: str | None = None) -> CancelResult:
        kind, job_id = cancel_target(job_id, batch_id)
        if kind == "batch":
            return self._cancel_batch(job_id)
        queue = self._locate(job_id)
        if queue is None:
            return CancelResult(accepted=False, state="missing")
        reply = self._run(self._qcall("cancel_job", queue, job_id))
        if reply[0] == "refused":
            return CancelResult(accepted=False, state=reply[1] or "missing")
        return CancelResult(accepted=True, state=str(reply[0]))

    def set_control(
        self, *, paused: Mapping[str, bool] | None = None, restart: bool = False
    ) -> float:
        calls: list[Any] = []
        if paused:
            # The registry first, so that `queue_counts` lists a paused queue with no job yet.
            calls.append((self._g["register_queues"], [self._global_key("queues")], [*paused]))
            calls += [self._qcall("pause_queue", q, "1" if p else "0") for q, p in paused.items()]
        if restart:
            calls.append((self._g["request_restart"], [self._global_key("control")], []))
        if not calls:
            return self.now()
        return float(self._run_many(calls)[-1])

    def _fail(
        self,
        job_id: str,
        token: int,
        outcome: str,
        error: str,
        traceback: str | None,
        permanent: bool,
    ) -> EndResult:
        queue = self._locate(job_id)
        if queue is None:
            return EndResult(accepted=False, state="missing", reason=STALE)
        for _ in range(MAX_CAS_ROUNDS):
            reply = self._run(self._qcall("end_read", queue, job_id, int(token), outcome))
            if reply[0] == "refused":
                return _refused(reply)
            _, now_text, policy, tries_used, exceptions, cancel_requested = reply
            result = self._apply_end(
                queue,
                job_id,
                int(token),
                outcome,
                error,
                traceback,
                parse_policy(policy),
                Counters(int(tries_used), int(exceptions)),
                float(now_text),
                permanent=permanent,
                cancel_requested=bool(cancel_requested),
                mode="end",
            )
            if result is not None:
                return result
        raise TenureError(f"job {job_id}: its record kept changing while ending attempt {token}")

    def _apply_end(
        self,
        queue: str,
        job_id: str,
        token: int,
        outcome: str,
        error: str,
        traceback: str | None,
        policy: Policy,
        counters: Counters,
        now: float,
        *,
        permanent: bool,
        cancel_requested: bool,
        mode: str,
    ) -> EndResult | None:
        """Decide in Python, apply in Lua if the job is unchanged; None when it changed."""
        decision = decide(
            policy, counters, outcome, now, permanent=permanent, cancel_requested=cancel_requested
        )
        new = decision.counters
        last_error = error if decision.retry else f"{error}; failed because {decision.reason}"
        retry = "1" if decision.retry else "0"
        if decision.cancel:
            outcome, error = cancelled_ending(outcome, error)
            last_error, retry = error, "c"
        reply = self._run(
            self._qcall(
                "end_apply",
                queue,
                job_id,
                token,
                outcome,
                optional(error),
                optional(traceback),
                retry,
                repr(float(decision.delay)),
                new.tries_used,
                new.exceptions,
                last_error,
                counters.tries_used,
                counters.exceptions,
                mode,
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

    def sweep(
        self, *, rescue: bool = True, prune: bool = True, limit: int = 500, dry_run: bool = False
    ) -> Swept:
        if dry_run:
            return Swept(pruned=self._count_due(limit))
        rescued = self._rescue_expired() if rescue else []
        pruned = Pruned()
        if prune:
            for queue in self._queues():
                pruned = pruned + self._prune(queue, limit, dry_run=False, offset=0)
                if pruned.more:
                    break  # the rest next tick: one bounded chunk per sweep
        return Swept(rescued=rescued, pruned=pruned)

    def _prune(self, queue: str, limit: int, *, dry_run: bool, offset: int) -> Pruned:
        reply = self._run(
            self._qcall("prune", queue, max(1, int(limit)), "1" if dry_run else "0", offset)
        )
        jobs, attempts, effects, batches, guards, more, *gone = reply
        if gone:  # the store-wide registry forgets them too (list_batches, get_batch)
            pipe = self._redis.pipeline(transaction=False)
            pipe.hdel(self._global_key("batch_queues"), *gone)
            pipe.zrem(self._global_key("batches"), *gone)
            pipe.execute()
        return Pruned(
            jobs=int(jobs),
            attempts=int(attempts),
            effects=int(effects),
            batches=int(batches),
            guards=int(guards),
            more=bool(int(more)),
        )

    def _count_due(self, page: int) -> Pruned:
        """Everything due in every queue, a page of entries per script call, nothing deleted."""
        total = Pruned()
        for queue in self._queues():
            for offset in range(0, 1 << 40, page):
                counted = self._prune(queue, page, dry_run=True, offset=offset)
                total = total + replace(counted, more=False)
                if not counted.more:
                    break
        return total

    def _rescue_expired(self) -> list[Rescued]:
        rescued: list[Rescued] = []
        for queue in self._queues():
            # Bounded: each round closes or skips every job it read, so a later round only
            # sees leases that expired meanwhile.
            for _ in range(1000):
                reply = self._run(self._qcall("rescue_read", queue, RESCUE_CHUNK))
                now = float(reply[0])
                entries = reply[1:]
                for entry in entries:
                    job_id, number, expired_at, policy, tries_used, exceptions = entry[:6]
                    worker_id, host, pid, started_at, heartbeat_at, cancel_requested = entry[6:12]
                    attempt = AttemptRecord(
                        job_id=job_id,
                        number=int(number),
                        worker_id=worker_id or "?",
                        host=host or "?",
                        pid=to_int(pid),
                        started_at=to_float(started_at),
                        ended_at=None,
                        outcome=None,
                        error=None,
                        traceback=None,
                        last_heartbeat_at=to_opt_float(heartbeat_at),
                    )
                    error = describe_crash(attempt, to_float(expired_at))
                    result = self._apply_end(
                        queue,
                        job_id,
                        int(number),
                        "crashed",
                        error,
                        None,
                        parse_policy(policy),
                        Counters(int(tries_used), int(exceptions)),
                        now,
                        permanent=False,
                        cancel_requested=bool(cancel_requested),
                        mode="rescue",
                    )
                    # None: the worker's own result arrived first, so nothing crashed.
                    if result is not None:
                        rescued.append(Rescued(job_id, int(number), result))
                if len(entries) < RESCUE_CHUNK:
                    break
        return rescued

    def wait_for_work(
        self, *, queues: Sequence[str], timeout: float, ended: Sequence[str] = ()
    ) -> None:
        if timeout <= 0:
            return
        if ended:
            self._wait_for_ends(ended, min(timeout, self._block_cap))
            return
        names = list(dict.fromkeys(queues))
        if not names:
            time.sleep(min(timeout, self._block_cap))
            return
        wait = min(timeout, self._block_cap)
        # Sleep no longer than until the earliest delayed job is due: nothing pushes a wake-up
        # when a run_at merely passes.
        for now_text, due in self._run_many([self._qcall("next_due", q) for q in names]):
            if due is not None:
                wait = min(wait, float(due) - float(now_text) + 0.002)
        wait = max(wait, MIN_BLOCK_S)
        self._wait_for_token([f"{self._base(q)}:notify" for q in names], wait)

    def _wait_for_ends(self, job_ids: Sequence[str], wait: float) -> None:
        """A waiter is a key `waiter:ID` beside the job (under its queue's hash tag); the
        script that ends the job turns it into a token on `woken:ID` (prelude.lua's
        wake_waiters), popped here. A waiter new on this call returns at once, for the caller
        to read the job again: an end before the key existed woke nobody."""
        located = self._locate_many(job_ids)
        if not located:
            time.sleep(wait)  # no such job: the caller's read says so
            return
        pipe = self._redis.pipeline(transaction=False)
        for job_id, queue in located.items():
            # SET ... GET: the old value, None when the key is new; the TTL is renewed
            pipe.set(f"{self._base(queue)}:waiter:{job_id}", "1", ex=int(wait) + 60, get=True)
        if any(previous is None for previous in pipe.execute()):
            return
        keys = [f"{self._base(q)}:woken:{job_id}" for job_id, q in located.items()]
        self._wait_for_token(keys, max(wait, MIN_BLOCK_S))


def _refused(reply: list[Any]) -> EndResult:
    _, state, run_at, now_text = reply
    shown = "missing" if state is None else visible_state(state, to_float(run_at), float(now_text))
    return EndResult(accepted=False, state=shown, reason=STALE)


def _ended(reply: list[Any]) -> EndResult:
    """A success script's reply: recorded, or refused with what the job is now."""
    return EndResult(accepted=True, state="succeeded") if reply[0] == "ok" else _refused(reply)
