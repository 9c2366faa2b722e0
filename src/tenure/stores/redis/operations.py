"""Reading and operating on Redis: what the CLI, the dashboard and the doctor ask (a job, a
page of jobs, counts per queue, the live workers), and retry or forget. No job changes state
here except through retry and forget, each one script. (A worker's row is written by its
heartbeat, jobs.py; restart requests, in the same `{g}` slot, by RedisStore.set_control.)"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, cast

from tenure.core.records import JobRecord, KeyCounts, QueueCounts, WorkerRecord, ready_age
from tenure.core.states import JOB_STATES, SCHEDULED
from tenure.stores.redis.database import INDEXED_STATES, LIST_PAGE, RedisDatabase, clock_value
from tenure.stores.redis.guards import effect_records
from tenure.stores.redis.records import (
    LISTED_JOB_FIELDS,
    attempt_records,
    job_record,
    to_int,
    to_opt_float,
    with_open_attempt,
    worker_record,
)

# Queued or running jobs of one queue read whole for a listing at most; past it, the listing
# scans them for the newest this many (operations._scanned).
LISTED_READ_MAX = 10_000
# The order of the figures the "counts" script returns after the clock.
COUNTED_STATES = ("queued", "scheduled", "running", "succeeded", "failed", "cancelled")


class RedisOperations:
    db: RedisDatabase  # the store's own (RedisStore sets it)

    def now(self) -> float:
        seconds, micros = self.db.client.time()
        return clock_value(seconds, micros)

    def _read_job(self, job_id: str) -> JobRecord | None:
        queue = self.db.locate(job_id)
        if queue is None:
            return None
        base = self.db.base(queue)
        # one consistent view: the job with its attempts (layout 4: in its own hash), the
        # attempts an older release's worker still running through a rolling deploy ended into
        # `att:ID` (layouts 1-3) after the upgrade, and the effects it recorded
        pipe = self.db.slot_transaction(f"{base}:job:{job_id}")
        pipe.time()
        names = (f"job:{job_id}", f"att:{job_id}", f"once:{job_id}")
        for name in names:
            pipe.hgetall(f"{base}:{name}")
        # raise_on_error=False: a key of another type (WRONGTYPE) reads as damaged, not raised
        (seconds, micros), *read = pipe.execute(raise_on_error=False)
        damage = [
            f"key {name} holds a {self.db.client.type(f'{base}:{name}')}, not a hash"
            for name, got in zip(names, read, strict=True)
            if isinstance(got, Exception)
        ]
        fields, leftover, effects = (got if isinstance(got, dict) else {} for got in read)
        if not fields and not damage:
            self.db.job_queue.pop(job_id, None)
            return None
        record = job_record(
            job_id,
            queue,
            fields,
            clock_value(seconds, micros),
            attempt_records(job_id, with_open_attempt({**leftover, **fields})),
        )
        if damage:
            note = f"the job's record in Redis is damaged: {'; '.join(damage)}"
            last = f"{note}; {record.last_error}" if record.last_error else note
            record = replace(record, last_error=last)
        return replace(record, effects=effect_records(effects))

    def list_jobs(
        self,
        *,
        ids: Sequence[str] | None = None,
        state: str | None = None,
        queue: str | None = None,
        limit: int = 100,
        batch_id: str | None = None,
    ) -> list[JobRecord]:
        if ids is not None:
            read = (self._read_job(job_id) for job_id in dict.fromkeys(ids))
            return [record for record in read if record is not None]
        if limit <= 0 or (state is not None and state not in JOB_STATES):
            return []
        if batch_id is not None:
            return self._list_members(batch_id, state, queue, limit)
        # Finished jobs have an index per state; queued (and scheduled) and running ones are
        # read where the hot path keeps them (layout 3 keeps no index of its own for either).
        # Every state: each of those read newest first and merged (layout 5 keeps no index of
        # every job), a job met twice (it moved on between two reads) listed once.
        index = "queued" if state == "scheduled" else state
        indexes = [index] if index is not None else ["queued", "running", *INDEXED_STATES]
        queues = [queue] if queue is not None else self.db.queues()
        now = self.now()
        found: list[tuple[float, int, JobRecord]] = []
        for name in queues:
            for each in indexes:
                found += self._list_queue(name, each, state, limit, now)
        found.sort(key=lambda item: (item[0], item[1]), reverse=True)
        once = {record.id: record for _, _, record in found}
        return list(once.values())[:limit]

    def _list_members(
        self, batch_id: str, state: str | None, queue: str | None, limit: int
    ) -> list[JobRecord]:
        """A batch's members from its member hashes (id -> queue base): `bmembers`, every
        member, and `bopen`, the unsettled ones (which alone list them in a batch written
        before `bmembers` was kept for every batch). Read whole: a batch is bounded; of each
        member's hash, only the fields its record shows (LISTED_JOB_FIELDS)."""
        home = cast(str | None, self.db.client.hget(self.db.global_key("batch_queues"), batch_id))
        if home is None:
            return []
        bbase = self.db.base(home)
        where: dict[str, str] = {}
        for kind in ("bopen", "bmembers"):
            where |= cast(dict[str, str], self.db.client.hgetall(f"{bbase}:{kind}:{batch_id}"))
        now = self.now()
        found: list[tuple[float, int, JobRecord]] = []
        ours = f"{self.db.prefix}:{{q:"  # a damaged entry must not read another prefix's keys
        items = sorted((j, q) for j, q in where.items() if q.startswith(ours))
        for start in range(0, len(items), LIST_PAGE):
            page = items[start : start + LIST_PAGE]
            keys = [f"{qbase}:job:{job_id}" for job_id, qbase in page]
            rows = self.db.hash_fields(keys, LISTED_JOB_FIELDS)
            for (job_id, _), fields in zip(page, rows, strict=True):
                if fields is None or fields.get("batch_id") != batch_id:
                    continue
                record = job_record(job_id, fields.get("queue") or "?", fields, now, [])
                if (state is None or record.state == state) and (
                    queue is None or record.queue == queue
                ):
                    found.append((record.created_at, to_int(fields.get("seq")), record))
        found.sort(key=lambda item: (item[0], item[1]), reverse=True)
        return [record for _, _, record in found[:limit]]

    def _list_queue(
        self, queue: str, index: str, state: str | None, limit: int, now: float
    ) -> list[tuple[float, int, JobRecord]]:
        base = self.db.base(queue)
        out: list[tuple[float, int, JobRecord]] = []
        # Each job read counts when nothing is filtered out or a final state's own index is
        # read: then a page need be no longer than the room left (a listing of 500 reads 500
        # hashes, not 600); else (queued against scheduled) pages stay whole.
        counted = state is None or (state == index and index in INDEXED_STATES)
        room = (lambda: limit - len(out)) if counted else (lambda: LIST_PAGE)
        for ids in self._id_pages(queue, index, room, state, limit):
            keys = [f"{base}:job:{job_id}" for job_id in ids]
            rows = self.db.hash_fields(keys, LISTED_JOB_FIELDS)
            for job_id, fields in zip(ids, rows, strict=True):
                if fields is None:
                    continue
                record = job_record(job_id, queue, fields, now, [])
                # The visible state decides (queued vs scheduled), not the index alone.
                if state is None or record.state == state:
                    out.append((record.created_at, to_int(fields.get("seq")), record))
                    if len(out) >= limit:
                        return out
        return out

    def _id_pages(
        self,
        queue: str,
        index: str,
        room: Callable[[], int],
        state: str | None = None,
        most: int = LISTED_READ_MAX,
    ) -> Iterator[list[str]]:
        """The ids `_list_queue` looks at, newest first, a page at a time: a final state's
        index; or the queued or running jobs as the hot path keeps them (listed_ids.lua),
        when there are few enough to read whole, else the newest of them found by a scan
        (_scanned: the `most` newest). A page is no longer than `room()` (at most LIST_PAGE).
        `state`: the state listed, which a scan of the queued jobs filters by run_at."""
        if index in ("queued", "running"):
            listed = self.db.run(self.db.qcall("listed_ids", queue, index, LISTED_READ_MAX))
            if listed is None:
                listed = self._scanned(queue, index, state, most)
            start = 0
            while start < len(listed):
                size = min(LIST_PAGE, max(1, room()))
                yield [str(job_id) for job_id in listed[start : start + size]]
                start += size
            return
        key = f"{self.db.base(queue)}:idx:{index}"
        start = 0
        while True:
            size = min(LIST_PAGE, max(1, room()))
            ids = cast(list[str], self.db.client.zrevrange(key, start, start + size - 1))
            if not ids:
                return
            start += len(ids)
            yield ids

    def _scanned(self, queue: str, index: str, state: str | None, most: int) -> list[str]:
        """The `most` newest of a queue's queued (or running) jobs, too many for
        listed_ids.lua to read in one call: their structures are scanned a page at a time
        (ZSCAN: no call holds the server long; the listing is not one atomic view, as no
        listing of several queues is). Layout 5 keeps no index of every job to walk instead:
        it was a write per job on the hot path (issue 32). A queued job's run_at (its score)
        says whether it is ready (`queued`) or `scheduled`, so the scan keeps only the state
        asked for. Ids newest first."""
        base, client = self.db.base(queue), self.db.client
        newest: list[tuple[int, str]] = []  # a min-heap of the newest (seq, id) met so far

        def offer(seq: int, job_id: str) -> None:
            if len(newest) < most:
                heapq.heappush(newest, (seq, job_id))
            elif (seq, job_id) > newest[0]:
                heapq.heapreplace(newest, (seq, job_id))

        # running and parked jobs: their sequence is read from their hashes
        unsequenced: Iterator[str] = iter(())
        if index == "running":
            unsequenced = (str(m) for m, _ in client.zscan_iter(f"{base}:running", count=1000))
        else:
            now = self.now()
            for key in _queued_zsets(client, base):
                for member, score in client.zscan_iter(key, count=1000):
                    seq, _, job_id = str(member).partition(":")
                    due = float(score) <= now
                    if job_id and seq.isdigit() and (state is None or due != (state == SCHEDULED)):
                        offer(int(seq), job_id)
            if state != SCHEDULED:  # a parked job waits for a slot: it is ready
                parked = [f"{base}:parked:{key}" for key in client.hkeys(f"{base}:conc_keys")]
                unsequenced = (str(j) for key in parked for j in client.lrange(key, 0, -1))
        while page := list(itertools.islice(unsequenced, LIST_PAGE)):
            rows = self.db.hash_fields([f"{base}:job:{j}" for j in page], ("seq",))
            for job_id, fields in zip(page, rows, strict=True):
                if fields is not None:
                    offer(to_int(fields.get("seq")), job_id)
        return [job_id for _, job_id in sorted(newest, reverse=True)]

    def queue_counts(self, *, keys: bool = False) -> dict[str, QueueCounts]:
        # Every state has a sorted set per queue, so each figure is a ZCARD (O(1)) or, for
        # queued against scheduled, a ZCOUNT by run_at (O(log n)), and the oldest ready job is
        # the queued set's lowest score: nothing here grows with the number of jobs. One
        # script per queue, all in one round trip.
        queues = self.db.queues()
        replies = self.db.run_many(
            [self.db.qcall("counts", q, "keys" if keys else "-") for q in queues]
        )
        out: dict[str, QueueCounts] = {}
        for queue, reply in zip(queues, replies, strict=True):
            figures = reply[1 : 1 + len(COUNTED_STATES)]
            counts = dict(zip(COUNTED_STATES, (int(n) for n in figures), strict=True))
            paused, oldest, waiting, per_key = reply[1 + len(COUNTED_STATES) :]
            if any(counts.values()) or paused:  # the registry keeps every queue ever used
                out[queue] = QueueCounts(
                    counts,
                    oldest_ready_age=ready_age(float(reply[0]), to_opt_float(oldest)),
                    paused=bool(paused),
                    waiting=int(waiting),
                    by_key=key_counts(per_key) if keys else None,
                )
        return out

    def retry_job(self, job_id: str) -> bool:
        queue = self.db.locate(job_id)
        return queue is not None and bool(self.db.run(self.db.qcall("retry_job", queue, job_id)))

    def forget_job(self, job_id: str) -> bool:
        queue = self.db.locate(job_id)
        if queue is None or not self.db.run(self.db.qcall("forget_job", queue, job_id)):
            return False
        self.db.job_queue.pop(job_id, None)
        return True

    def list_workers(self) -> list[WorkerRecord]:
        ids = cast(list[str], self.db.client.zrevrange(self.db.global_key("workers"), 0, -1))
        rows = self.db.hashes([self.db.global_key(f"worker:{worker_id}") for worker_id in ids])
        return [worker_record(worker_id, f) for worker_id, f in zip(ids, rows, strict=True) if f]


def _queued_zsets(client: Any, base: str) -> list[str]:
    """A queue's queued zsets: `queued` (priority 0) and one per other priority listed in
    `priorities` (prelude.lua's queued_keys; its member `paused` is no priority)."""
    priorities = cast(list[str], client.zrange(f"{base}:priorities", 0, -1))
    others = [p for p in priorities if p.lstrip("-").isdigit() and int(p) != 0]
    return [f"{base}:queued", *(f"{base}:queued:p{p}" for p in others)]


def key_counts(per_key: list[list[object]]) -> dict[str, KeyCounts]:
    """The counts script's (key, running, waiting, limit) rows, keys in use only."""
    out: dict[str, KeyCounts] = {}
    for key, running, waiting, limit in per_key:
        if to_int(str(running)) or to_int(str(waiting)):
            out[str(key)] = KeyCounts(
                to_int(str(running)), to_int(str(waiting)), to_int(str(limit))
            )
    return out
