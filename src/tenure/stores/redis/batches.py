"""Batches on Redis: where a batch's keys live, enqueue_many's batch forms and the batch verbs
of the Store protocol.

A batch lives under the hash tag of its *home* queue: the queue of its first member, else of its
first callback, else `default` (`PREFIX:{q:HOME}:batch:ID`, the batch and its counts, and
`:bopen:ID`, its members not settled yet). The rules run in Lua (lua/lib/batch_rules.lua and
batch_io.lua) inside the same script as the job change that triggers them, so a member's end
and its batch's bookkeeping (counts, cancelling the members still queued, enqueuing
then/catch/finally exactly once) are one atomic step: never torn, never repeated. The
store-wide keys (tag `{g}`) say where each batch lives:

    PREFIX:{g}:batch_queues   hash   batch id -> its home queue
    PREFIX:{g}:batches        zset   batch ids by creation order, for list_batches
    PREFIX:{g}:batch_seq      string that order's counter

On a single server or a Sentinel-managed one, a batch's members and callbacks may use any mix
of queues: the script reaches the other queues' keys too. On Redis Cluster they would sit in
other slots, so there every member and callback of a batch must use the batch's one queue;
enqueue_many(batch=, into_batch=) refuses anything else with a ConfigError before writing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from tenure.core import chains
from tenure.core.codec import guard_fields
from tenure.core.errors import ConfigError, TenureError
from tenure.core.records import BatchRecord, CancelResult, NewBatch, NewJob
from tenure.stores.redis.database import RedisDatabase, keep_args, optional
from tenure.stores.redis.guards import member_guards
from tenure.stores.redis.records import PROGRESS_UNITS, batch_record
from tenure.stores.redis.scripts import CALLBACK_FIELDS, CALLBACK_KINDS

BATCH_PAGE = 100


class RedisBatches:
    db: RedisDatabase  # the store's own (RedisStore sets it)

    def _members_of(self, batch_id: str, jobs: Sequence[NewJob]) -> list[NewJob]:
        """The members as stored: in the batch, a chain member's spec with its queues' keys."""
        return [
            replace(j, batch_id=batch_id, chain=chains.with_bases(j.chain, self.db.base))
            for j in jobs
        ]

    def _create_batch(self, batch: NewBatch, jobs: Sequence[NewJob]) -> list[str]:
        members = self._members_of(batch.id, jobs)
        callbacks = list(
            zip(CALLBACK_KINDS, (batch.then, batch.catch, batch.finally_), strict=True)
        )
        present = [j for _, j in callbacks if j is not None]
        home = members[0].queue if members else present[0].queue if present else "default"
        later = sorted({q for j in members for q in chains.queues(j.chain)})
        queues = [j.queue for j in (*members, *present)] + later
        self._check_one_slot(batch.id, home, queues)
        if self._register_batch(batch.id, home, queues) != home:
            raise TenureError(f"batch {batch.id!r} already exists (in another queue)")
        args: list[Any] = [
            batch.id,
            batch.name,
            optional(None if batch.total is None else str(int(batch.total))),
            "1" if batch.allow_failures else "0",
            *keep_args(batch.keep),
        ]
        for _, job in callbacks:
            if job is None:
                args += ["0"] + [""] * len(CALLBACK_FIELDS)
            else:
                keep = " ".join(keep_args(job.keep))
                guards = guard_fields(job.guards)
                args += ["1", job.id, self.db.base(job.queue), job.queue, *_fields(job), keep]
                args.append(json.dumps(guards) if guards else "")
        reply = self.db.run(self.db.qcall("create_batch", home, *args, *self._members(members)))
        if reply[0] == "exists":
            raise TenureError(f"batch {batch.id!r} already exists")
        for job in members:
            self.db.remember(job.id, job.queue)
        return [str(job_id) for job_id in reply[1]]

    def _add_to_batch(self, batch_id: str, jobs: Sequence[NewJob]) -> list[str]:
        home = self._batch_home(batch_id)
        if home is None or not jobs:
            return []
        members = self._members_of(batch_id, jobs)
        later = sorted({q for j in members for q in chains.queues(j.chain)})
        queues = [j.queue for j in members] + later
        self._check_one_slot(batch_id, home, queues)
        self._register_batch(batch_id, home, queues)
        added = self.db.run(self.db.qcall("add_to_batch", home, batch_id, *self._members(members)))
        for job in members:
            self.db.remember(job.id, job.queue)
        return [str(job_id) for job_id in added]

    def _cancel_batch(self, batch_id: str) -> CancelResult:
        home = self._batch_home(batch_id)
        if home is not None and self.db.run(self.db.qcall("cancel_batch", home, batch_id)):
            return CancelResult(accepted=True, state="cancelled")
        record = next(iter(self.list_batches(ids=[batch_id])), None)
        return CancelResult(accepted=False, state=record.state if record else "missing")

    def list_batches(
        self, *, ids: Sequence[str] | None = None, limit: int = 50
    ) -> list[BatchRecord]:
        if ids is not None:
            return self._read_batches(list(dict.fromkeys(ids)), limit=len(ids))
        out: list[BatchRecord] = []
        start = 0
        while len(out) < limit:
            page = cast(
                list[str],
                self.db.client.zrevrange(
                    self.db.global_key("batches"), start, start + BATCH_PAGE - 1
                ),
            )
            if not page:
                break
            start += len(page)
            out += self._read_batches(page, limit=limit - len(out))
        return out

    def _read_batches(self, ids: list[str], *, limit: int) -> list[BatchRecord]:
        if not ids:
            return []
        homes = cast(
            list[str | None], self.db.client.hmget(self.db.global_key("batch_queues"), ids)
        )
        # a batch registered by a create that never ran (or no batch) reads as an empty hash
        rows = self.db.hashes(
            [self._batch_key(h or "", b) for b, h in zip(ids, homes, strict=True)]
        )
        found = [batch_record(b, fields) for b, fields in zip(ids, rows, strict=True) if fields]
        return found[:limit]

    def report_progress(self, *, job_id: str, token: int, fraction: float) -> None:
        queue = self.db.locate(job_id)
        if queue is None:
            return
        units = round(max(0.0, min(1.0, fraction)) * PROGRESS_UNITS)
        self.db.run(self.db.qcall("report_progress", queue, job_id, int(token), units))

    # -- inside ------------------------------------------------------------------------
    def _batch_key(self, home: str, batch_id: str) -> str:
        return f"{self.db.base(home)}:batch:{batch_id}"

    def _batch_home(self, batch_id: str) -> str | None:
        home = self.db.client.hget(self.db.global_key("batch_queues"), batch_id)
        return cast(str | None, home)

    def _register_batch(self, batch_id: str, home: str, queues: Sequence[str]) -> str:
        """Record the batch's home and register every queue it touches, before any job exists
        there: get_job and sweep only look in registered queues."""
        keys = [self.db.global_key(k) for k in ("queues", "batch_queues", "batches", "batch_seq")]
        args = [batch_id, home, *dict.fromkeys([home, *queues])]
        return cast(str, self.db.run((self.db.g["register_batch"], keys, args)))

    def _members(self, jobs: Sequence[NewJob]) -> list[Any]:
        """The members' ARGV groups for the batch scripts (scripts.MEMBER_FIELDS each)."""
        args: list[Any] = []
        for job in jobs:
            args += [self.db.base(job.queue), job.queue, job.id, *_fields(job), member_guards(job)]
        return args

    def _check_one_slot(self, batch_id: str, home: str, queues: Sequence[str]) -> None:
        others = sorted({q for q in queues if q != home})
        if others and self.db.cluster:
            raise ConfigError(
                f"batch {batch_id}: on Redis Cluster every job and callback of a batch must use "
                f"the batch's queue {home!r} (its keys live in that queue's slot), got also "
                f"{others}; put them in one queue, or use a single Redis server or Sentinel"
            )


def _fields(job: NewJob) -> list[Any]:
    """A member's or callback's name, payload, policy and delay, as the batch scripts take them."""
    return [job.name, job.payload, job.policy.text, repr(float(job.delay))]
