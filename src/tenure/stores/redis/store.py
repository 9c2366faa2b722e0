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
                                         field `result`: its stored result, deleted with it) and
                                         its attempts, fields "N.worker_id", "N.host", ...,
                                         written by the claim, "N.ended_at", "N.outcome", ...
                                         added by the attempt's end (layout 5; layouts 3-4
                                         kept the open attempt in cur.host, ... until its end
                                         copied it, and an older release's worker may still
                                         claim so mid-deploy: a non-empty cur.started_at;
                                         layouts 1-3 kept ended ones in PREFIX:{q:QUEUE}:att:ID,
                                         still read and deleted with the job);
                                         field `waiter`: someone waits for its end (JobHandle);
                                         attempt, tries_used, exceptions absent read as 0 (a
                                         plain job is enqueued without them)
    PREFIX:{q:QUEUE}:queued       zset   queued jobs of priority 0 by run_at ("scheduled" = run_at
                                         in future), members "SEQ:ID" (FIFO at one run_at)
    PREFIX:{q:QUEUE}:queued:pN    zset   the same for priority N (N != 0; field `priority`)
    PREFIX:{q:QUEUE}:priorities   zset   the N that may have jobs, by N: reserve walks lowest first;
                                         member `paused` (score -inf) while the queue is paused
    PREFIX:{q:QUEUE}:running      zset   running jobs by lease expiry: rescue is a range query
    PREFIX:{q:QUEUE}:idx:STATE    zset   finished job ids by sequence (succeeded, failed,
                                         cancelled), for list_jobs newest first and counts;
                                         a listing of every state merges these, the queued
                                         zsets and `running` (layout 5: no index of every
                                         job, `all`, which layouts 1-4 wrote per enqueue)
    PREFIX:{q:QUEUE}:seq          string the sequence counter that older releases' enqueues
                                         INCR; a job's seq is the server's clock (layout 6)
                                         in µs (prelude.lua new_seq): no command
    PREFIX:{q:QUEUE}:notify       list   wake-up tokens idle workers BLPOP
    PREFIX:{q:QUEUE}:woken:ID     list   the token its end leaves for that waiter (TTL 60 s)
    PREFIX:{q:QUEUE}:uniq:KEY, :overlap, :rate:KEY, :once:ID   guards (see guards.py)
    PREFIX:{q:QUEUE}:periodic     hash   periodic jobs whose runs go to QUEUE (periodic.py)
    PREFIX:{q:HOME}:batch:ID, :bopen:ID    a batch, under its home queue's tag (batches.py)
    PREFIX:{g}:queues             set    every queue name ever used
    PREFIX:{g}:workers, :worker:ID, :control, :meta, :batch_queues, :batches, :batch_seq

Operations over several queues (reserving across queues in priority order, counts, list_jobs,
finding a job by id alone) run one script per queue: each queue's part is atomic, the whole is
not, exactly like a worker asking each queue in turn. Waiting on several queues uses one BLPOP
over their notify lists; on a cluster, one per slot in turn (cluster.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, cast

import redis

from tenure.core import causes
from tenure.core.records import AttemptRecord, CancelResult, Rescued, Swept, cancel_target
from tenure.core.retention import Pruned
from tenure.core.words import describe_crash
from tenure.stores.base import Capabilities
from tenure.stores.redis.database import RedisDatabase
from tenure.stores.redis.guards import RedisGuards
from tenure.stores.redis.jobs import RedisJobs
from tenure.stores.redis.operations import RedisOperations
from tenure.stores.redis.periodic import RedisPeriodic
from tenure.stores.redis.records import to_float, to_int, to_opt_float

log = logging.getLogger("tenure.stores.redis")

RESCUE_CHUNK = 500


class RedisStore(RedisJobs, RedisGuards, RedisPeriodic, RedisOperations):
    capabilities: ClassVar[Capabilities] = Capabilities(
        name="Redis",
        job_transactions=False,
        enqueue_in_caller_transaction=False,
        concurrent_job_transactions=False,
        listen_notify=False,
        many_hosts=True,
    )

    def __init__(self, url: str) -> None:
        self.url = url
        self.db = RedisDatabase(url)
        self.prefix = self.db.prefix

    # -- the Store protocol --------------------------------------------------------------
    def migrate(self) -> None:
        """Redis needs no schema; record the key layout so a future one can be recognised."""
        self.db.check_layout()
        try:
            policy = cast(dict[str, str], self.db.client.config_get("maxmemory-policy"))
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
        self.db.close()

    # -- jobs through their life ---------------------------------------------------------
    def cancel(self, job_id: str | None = None, *, batch_id: str | None = None) -> CancelResult:
        kind, job_id = cancel_target(job_id, batch_id)
        if kind == "batch":
            return self._cancel_batch(job_id)
        queue = self.db.locate(job_id)
        if queue is None:
            return CancelResult(accepted=False, state="missing")
        reply = self.db.run(self.db.qcall("cancel_job", queue, job_id))
        if reply[0] == "refused":
            return CancelResult(accepted=False, state=reply[1] or "missing")
        return CancelResult(accepted=True, state=str(reply[0]))

    def set_control(
        self, *, paused: Mapping[str, bool] | None = None, restart: bool = False
    ) -> float:
        calls: list[Any] = []
        if paused:
            # The registry first, so that `queue_counts` lists a paused queue with no job yet.
            calls.append((self.db.g["register_queues"], [self.db.global_key("queues")], [*paused]))
            calls += [self.db.qcall("pause_queue", q, "1" if p else "0") for q, p in paused.items()]
        if restart:
            calls.append((self.db.g["request_restart"], [self.db.global_key("control")], []))
        if not calls:
            return self.now()
        return float(self.db.run_many(calls)[-1])

    def sweep(
        self, *, rescue: bool = True, prune: bool = True, limit: int = 500, dry_run: bool = False
    ) -> Swept:
        if dry_run:
            return Swept(pruned=self._count_due(limit))
        rescued, lapse = self._rescue_expired() if rescue else ([], None)
        pruned = Pruned()
        if prune:
            for queue in self.db.queues():
                pruned = pruned + self._prune(queue, limit, dry_run=False, offset=0)
                if pruned.more:
                    break  # the rest next tick: one bounded chunk per sweep
        return Swept(rescued=rescued, pruned=pruned, next_lapse_in=lapse)

    def _prune(self, queue: str, limit: int, *, dry_run: bool, offset: int) -> Pruned:
        reply = self.db.run(
            self.db.qcall("prune", queue, max(1, int(limit)), "1" if dry_run else "0", offset)
        )
        jobs, attempts, effects, batches, guards, more, *gone = reply
        if gone:  # the store-wide registry forgets them too (list_batches, get_batch)
            pipe = self.db.client.pipeline(transaction=False)
            pipe.hdel(self.db.global_key("batch_queues"), *gone)
            pipe.zrem(self.db.global_key("batches"), *gone)
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
        for queue in self.db.queues():
            for offset in range(0, 1 << 40, page):
                counted = self._prune(queue, page, dry_run=True, offset=offset)
                total = total + replace(counted, more=False)
                if not counted.more:
                    break
        return total

    def _rescue_expired(self) -> tuple[list[Rescued], float | None]:
        """The rescued attempts, and in how many seconds the earliest lease left ends."""
        rescued: list[Rescued] = []
        lapses: list[float] = []
        for queue in self.db.queues():
            # Bounded: each round closes or skips every job it read, so a later round only
            # sees leases that expired meanwhile.
            for _ in range(1000):
                now, upcoming, *entries = self.db.run(
                    self.db.qcall("rescue_read", queue, RESCUE_CHUNK)
                )
                if upcoming:
                    lapses.append(float(upcoming) - float(now))
                for entry in entries:
                    found = self._rescue(queue, float(now), entry)
                    if found is not None:
                        rescued.append(found)
                if len(entries) < RESCUE_CHUNK:
                    break
        return rescued, min(lapses, default=None)

    def _rescue(self, queue: str, now: float, entry: Sequence[Any]) -> Rescued | None:
        """End one expired attempt as crashed and decide; None when the worker's own result
        arrived first, so nothing crashed."""
        job_id, number, expired_at, policy, tries_used, exceptions = entry[:6]
        worker_id, host, pid, started_at, heartbeat_at, cancel_requested, memory = entry[6:13]
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
            memory_mb=to_opt_float(memory),
        )
        stopping_at = self._stopping_at(attempt.worker_id)
        error = describe_crash(attempt, to_float(expired_at), stopping_at)
        read = (policy, tries_used, exceptions, cancel_requested)
        result = self._apply_end(
            queue,
            (job_id, int(number), "crashed", error, None, causes.of_rescue(stopping_at)),
            read,
            now,
            False,
            "rescue",
        )
        return None if result is None else Rescued(job_id, int(number), result)

    def _stopping_at(self, worker_id: str) -> float | None:
        """When the worker had begun stopping (a deploy's SIGTERM), if it never stopped."""
        worker = self.db.hashes([self.db.global_key(f"worker:{worker_id}")])[0]
        if worker.get("stopped_at"):
            return None
        return to_opt_float(worker.get("stopping_at"))


class RedisClusterStore(RedisStore):
    """The store on Redis Cluster (`redis+cluster://`): the same store, routed per slot
    (cluster.py). A batch's bookkeeping and its members' ends are one script, so they share
    one slot: a batch's jobs cannot span queues there."""

    capabilities: ClassVar[Capabilities] = replace(
        RedisStore.capabilities, batches_span_queues=False
    )
