"""A store written in key layout 2 (the release before layout 3) keeps working after the upgrade:
`migrate` (or any first use) rewrites it in place, and every job is still there, shown, listed,
counted and runnable as before.

The layout-2 store is written by that release's own scripts, frozen in layout2/lua (a copy of
src/tenure/stores/redis/lua as layout 2 shipped it), driven by this code's Python, whose calls
to the scripts (ARGV and replies) did not change but for the KEYS and an enqueued job's ARGV
group, which `Layout2Database` passes as layout 2 did. Keys written by the real scripts, rather
than by a fixture that spells them out, are what a store in production holds: the fixture would
only repeat this session's idea of layout 2."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import redis

from backends.redis.frozen import older_args
from tenure.core import chains
from tenure.core.guards import Guards
from tenure.core.records import (
    AttemptRecord,
    Ending,
    JobRecord,
    NewBatch,
    NewJob,
    Reservation,
    WorkerRef,
)
from tenure.core.retry import Policy
from tenure.stores.base import get_batch, get_job
from tenure.stores.redis import RedisStore
from tenure.stores.redis import scripts as current
from tenure.stores.redis.database import RedisDatabase

FROZEN = Path(__file__).parent / "layout2" / "lua"
LAYOUT2_QUEUE_KEYS = ("queued", "running", "notify", "seq", "all")
LAYOUT2_QUEUE_KEYS += tuple(f"idx:{s}" for s in ("queued", "running", "succeeded", "failed"))
LAYOUT2_QUEUE_KEYS += ("idx:cancelled", "paused")
# Layout 2's enqueue group: every field of a job, in this order (the current code sends a
# counted group in scripts.ENQUEUE_ORDER that stops at its last field not at its default).
LAYOUT2_ENQUEUE_ORDER = ("id", "name", "payload", "policy", "delay", "batch_id", "unique_key")
LAYOUT2_ENQUEUE_ORDER += ("unique_until", "unique_for", "overlap_key", "overlap_delay")
LAYOUT2_ENQUEUE_ORDER += ("rate_key", "rate_limit", "rate_window", "keep_s", "keep_f", "priority")
LAYOUT2_ENQUEUE_ORDER += ("chain", "concurrency_key", "concurrency_limit", "debounce_key")
LAYOUT2_ENQUEUE_ORDER += ("fair_key", "fair_weight")
# Layout 2's libraries (the frozen copy has no later ones).
LAYOUT2_QUEUE_LIBS = tuple(lib for lib in current.QUEUE_LIBS if (FROZEN / lib).exists())
W1 = WorkerRef(id="w-old", host="old-host", pid=11)
W2 = WorkerRef(id="w-new", host="new-host", pid=22)


def _frozen(relative: str) -> str:
    text = (FROZEN / relative).read_text("utf-8")
    return current.INCLUDE.sub(lambda m: _frozen(m.group(1)), text)


def _frozen_scripts(kind: str, libs: tuple[str, ...], *, wrap: bool) -> dict[str, str]:
    prelude = "".join(_frozen(lib) for lib in libs)
    out = {}
    for path in sorted((FROZEN / kind).glob("*.lua")):
        body = _frozen(f"{kind}/{path.name}")
        if wrap:
            body = f"local function body()\n{body}\nend\nreturn with_lost_callbacks(body())\n"
        constants = f"local ENQUEUE_FIELDS = {len(LAYOUT2_ENQUEUE_ORDER)}\n" + current.CONSTANTS
        out[path.stem] = constants + current._used(body, prelude) + body
    return out


def _layout2_groups(args: list[Any]) -> list[Any]:
    """The current enqueue groups (database.enqueue_args) as layout 2's scripts read them."""
    out: list[Any] = []
    i = 0
    while i < len(args):
        sent = int(args[i])
        values = [*args[i + 1 : i + 1 + sent], *current.ENQUEUE_DEFAULTS[sent:]]
        fields = dict(zip(current.ENQUEUE_ORDER, values, strict=True))
        out += [fields[name] for name in LAYOUT2_ENQUEUE_ORDER]
        i += 1 + sent
    return out


def _generic_groups(args: list[Any]) -> list[Any]:
    """enqueue_plain.lua's groups as enqueue.lua's (database.enqueue_args) would carry them."""
    out: list[Any] = []
    for i in range(0, len(args), current.PLAIN_FIELDS):
        job_id, name, payload, policy, delay, keep_s, keep_f, priority = args[i : i + 8]
        fields = [job_id, name, payload, policy, repr(float(delay))]
        fields += [f"+{keep}" if keep else "-" for keep in (keep_s, keep_f)]
        fields += [priority, *current.ENQUEUE_DEFAULTS[len(fields) + 1 :]]
        out += [len(fields), *fields]
    return out


def _flat_claims(rows: list[Any]) -> list[Any]:
    """Layout 2's reserve reply (rows, or ['idle', now, due]) as reserve answers now."""
    if rows and rows[0] == "idle":
        return [0, *rows[1:]]
    return [len(rows), *(field for row in rows for field in row)]


class Layout2Database(RedisDatabase):
    """This code's database over layout 2's scripts, run by EVALSHA, on keys marked layout 2."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        queue = _frozen_scripts("queue", LAYOUT2_QUEUE_LIBS, wrap=True)
        store_wide = _frozen_scripts("global", current.GLOBAL_LIBS, wrap=False)
        self.q = {name: self.client.register_script(text) for name, text in queue.items()}
        self.g = {name: self.client.register_script(text) for name, text in store_wide.items()}
        self._names = {script.sha: name for name, script in self.q.items()}

    # Layout 2's hot path answered in nested lists; this code reads one flat list
    # (lib/hot_path.lua): its replies are read as this code's scripts would have answered.
    def run(self, call: Any) -> Any:
        return self._flattened(call, super().run(call))

    def _send_scripts(self, calls: Any) -> list[Any]:
        results = super()._send_scripts(calls)
        return [
            r if isinstance(r, Exception) else self._flattened(c, r)
            for c, r in zip(calls, results, strict=True)
        ]

    def _flattened(self, call: Any, reply: Any) -> Any:
        name = self._names.get(call[0].sha)
        if name == "reserve":
            return _flat_claims(reply)
        if name == "complete":
            return reply[:1] if reply[0] == "ok" else reply
        if name == "complete_and_reserve":
            ended, claimed = reply
            return [*(ended[:1] if ended[0] == "ok" else ended), *_flat_claims(claimed)]
        return reply

    def _queue_keys(self, queue: str) -> list[str]:
        return [f"{self.base(queue)}:{name}" for name in LAYOUT2_QUEUE_KEYS]

    def qcall(self, script: str, queue: str, *args: Any) -> Any:
        args = older_args(script, args)
        if script == "enqueue_plain":  # layout 2 had one enqueue script for every job
            script, args = "enqueue", tuple(_generic_groups(list(args)))
        if script == "enqueue":
            args = tuple(_layout2_groups(list(args)))
        elif script == "claim_periodic" and len(args) > 2:  # name, due, then the run's group
            args = (*args[:2], *_layout2_groups(list(args[2:])))
        return super().qcall(script, queue, *args)

    def check_layout(self) -> None:
        self.client.hsetnx(self.global_key("meta"), "layout", "2")
        self._functions = {}
        self._layout_checked = True


class Layout2Store(RedisStore):
    """This code's Python over layout 2's keys and scripts (Layout2Database)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.db.close()
        self.db = Layout2Database(url)

    def _id_pages(
        self, queue: str, index: str, room: Callable[[], int], *_: object
    ) -> Iterator[list[str]]:
        """Layout 2's listing: an index per state, queued and running too (whole pages)."""
        key = f"{self.db.base(queue)}:{'all' if index == 'all' else 'idx:' + index}"
        start = 0
        while ids := self.db.client.zrevrange(key, start, start + 199):
            start += len(ids)
            yield ids


def new(queue: str, **kw: Any) -> NewJob:
    fields: dict[str, Any] = {"name": "j", "payload": "[]", "policy": Policy(tries=1), **kw}
    return NewJob(id=secrets.token_hex(8), queue=queue, **fields)


def take(store: RedisStore, queue: str, worker: WorkerRef = W1) -> Reservation:
    got = store.reserve(queues=[queue], worker=worker, lease=60, limit=1)
    assert len(got) == 1, f"nothing ready in {queue}"
    return got[0]


def fill(store: RedisStore) -> dict[str, Any]:
    """One of every kind of job a store holds, in layout 2; returns their ids and tokens."""
    ids: dict[str, Any] = {}
    queued, scheduled, urgent = new("plain"), new("plain", delay=3600), new("plain", priority=-5)
    store.enqueue_many([queued, scheduled, urgent])
    ids |= {"queued": queued.id, "scheduled": scheduled.id, "urgent": urgent.id}
    # running, with a beat and a memory reading on its open attempt
    store.enqueue_many([new("run")])
    running = take(store, "run")
    store.heartbeat(
        worker=W1, leases=[(running.job_id, running.token)], lease=60, memory={running.job_id: 12.5}
    )
    ids["running"] = (running.job_id, running.token)
    # failed for good after one attempt, and succeeded with a result
    store.enqueue_many([new("done"), new("done")])
    failing, succeeding = take(store, "done"), take(store, "done")
    store.end_attempt(
        Ending(
            job_id=failing.job_id,
            token=failing.token,
            outcome="failed",
            error="boom",
            permanent=True,
        )
    )
    store.end_attempt(Ending(job_id=succeeding.job_id, token=succeeding.token, result='"r"'))
    ids |= {"failed": failing.job_id, "succeeded": succeeding.job_id}
    # a batch: one member running, one queued, and a `then` callback still to come
    members = [new("bat"), new("bat")]
    batch = NewBatch(id=secrets.token_hex(6), name="b", then=new("bat", name="after"))
    store.enqueue_many(members, batch=batch)
    ids |= {"batch": batch.id, "members": [m.id for m in members], "then": batch.then.id}  # type: ignore[union-attr]
    ids["member_running"] = take(store, "bat")
    # a chain of two links, its first one queued
    links = [new("chain", name="first"), new("chain", name="second")]
    chain_id = secrets.token_hex(6)
    links = [replace(link, id=chains.link_id(chain_id, i)) for i, link in enumerate(links)]
    store.enqueue_many(
        [chains.first_link(chain_id, links, catch=None, finally_=None, pass_result=False)]
    )
    ids["chain"] = [link.id for link in links]
    # two jobs of one concurrency key of one slot: one running, the other parked behind it
    limited = [
        new("lim", guards=Guards(concurrency_key="k", concurrency_limit=1)) for _ in range(2)
    ]
    store.enqueue_many(limited)
    ids["limited_running"] = take(store, "lim")
    assert store.reserve(queues=["lim"], worker=W1, lease=60, limit=1) == []
    ids["limited_parked"] = limited[1].id
    # a paused queue holding a job
    store.set_control(paused={"held": True})
    store.enqueue_many([held := new("held")])
    ids["held"] = held.id
    return ids


def every_job(store: RedisStore) -> dict[str, JobRecord]:
    return {record.id: record for record in store.list_jobs(limit=1000)}


def listed(store: RedisStore) -> dict[str, set[str]]:
    states = ("queued", "scheduled", "running", "succeeded", "failed", "cancelled")
    return {s: {r.id for r in store.list_jobs(state=s, limit=1000)} for s in states}


def goes_on(
    store: RedisStore, ids: dict[str, Any], counts: dict[str, Any], opened: AttemptRecord
) -> None:
    """After an upgrade: every kind of job `fill` left runs on as it would have before it."""
    running_id, running_token = ids["running"]
    # runnable: the running job's result is taken with its old token (fencing kept), and
    # its attempt's history is the one the old layout began
    ended, _ = store.end_attempt(Ending(job_id=running_id, token=running_token, result="1"))
    assert ended.accepted
    record = get_job(store, running_id)
    assert record is not None and record.state == "succeeded"
    (closed,) = record.attempts
    assert (closed.outcome, closed.worker_id, closed.memory_mb) == ("succeeded", "w-old", 12.5)
    assert closed.started_at == opened.started_at
    # a stale token is still refused
    stale, _ = store.end_attempt(Ending(job_id=running_id, token=running_token, result="2"))
    assert not stale.accepted

    # priorities still order the plain queue; the scheduled job stays scheduled
    first, second = take(store, "plain", W2), take(store, "plain", W2)
    assert [first.job_id, second.job_id] == [ids["urgent"], ids["queued"]]
    assert store.reserve(queues=["plain"], worker=W2, lease=60, limit=1) == []
    # the failed job retries and runs
    assert store.retry_job(ids["failed"])
    again = take(store, "done", W2)
    assert again.job_id == ids["failed"] and again.attempt == 2
    store.end_attempt(Ending(job_id=again.job_id, token=again.token))
    retried = get_job(store, ids["failed"])
    assert retried is not None
    assert [a.outcome for a in retried.attempts] == ["failed", "succeeded"]

    # the batch: its running member (reserved in the old layout) and its queued one end, and its
    # callback is queued
    member = ids["member_running"]
    store.end_attempt(Ending(job_id=member.job_id, token=member.token))
    other = take(store, "bat", W2)
    store.end_attempt(Ending(job_id=other.job_id, token=other.token))
    settled = get_batch(store, ids["batch"])
    assert settled is not None and settled.state == "succeeded"
    assert take(store, "bat", W2).job_id == ids["then"]

    # the chain goes on to its second link
    link = take(store, "chain", W2)
    assert link.job_id == ids["chain"][0]
    store.end_attempt(Ending(job_id=link.job_id, token=link.token))
    assert take(store, "chain", W2).job_id == ids["chain"][1]

    # the concurrency slot frees when its old-layout holder ends: the parked job runs
    holder = ids["limited_running"]
    store.end_attempt(Ending(job_id=holder.job_id, token=holder.token))
    assert take(store, "lim", W2).job_id == ids["limited_parked"]

    # the paused queue stays paused until resumed
    assert counts["held"].paused and store.queue_counts()["held"].paused
    assert store.reserve(queues=["held"], worker=W2, lease=60, limit=1) == []
    store.set_control(paused={"held": False})
    assert take(store, "held", W2).job_id == ids["held"]


def test_a_layout_2_store_is_upgraded_in_place_and_nothing_is_lost(
    url: str, client: redis.Redis
) -> None:
    old = Layout2Store(url)
    try:
        ids = fill(old)
        before = {job_id: get_job(old, job_id) for job_id in every_job(old)}
        lists, counts = listed(old), old.queue_counts()
    finally:
        old.close()
    meta = f"{old.prefix}:{{g}}:meta"
    assert client.hget(meta, "layout") == "2"
    running_id, _ = ids["running"]
    att = f"{old.prefix}:{{q:run}}:att:{running_id}"
    assert client.hget(att, "1.memory_mb") == "12.5"  # layout 2 kept the open attempt there

    store = RedisStore(url)
    try:
        store.migrate()
        store.migrate()  # idempotent
        assert client.hget(meta, "layout") == "6"
        assert not list(client.scan_iter(match=f"{old.prefix}:*:idx:queued"))
        assert not list(client.scan_iter(match=f"{old.prefix}:*:all"))  # layout 5 keeps none
        assert not list(client.scan_iter(match=f"{old.prefix}:*:idx:running"))
        # the open attempt moved into the job's hash (layout 3), the ended ones too (layout 4)
        assert not list(client.scan_iter(match=f"{old.prefix}:*:att:*"))
        # shown, listed and counted exactly as layout 2 showed them
        after = {job_id: get_job(store, job_id) for job_id in before}
        for job_id in before:
            assert after[job_id] == before[job_id], (after[job_id], before[job_id])
        assert listed(store) == lists
        assert store.queue_counts() == counts
        shown = get_job(store, running_id)
        assert shown is not None and shown.state == "running"
        (opened,) = shown.attempts
        assert (opened.worker_id, opened.host, opened.memory_mb) == ("w-old", "old-host", 12.5)

        goes_on(store, ids, counts, opened)
    finally:
        store.close()
