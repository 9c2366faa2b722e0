"""Redis-specific behaviour of batches: the Lua port of the batch rules agrees with
tenure.core.batch on every state, a batch's keys live in its queue's slot, Redis Cluster refuses
batches that span queues (and runs the ones that do not), and damaged batch records cannot make
a script write outside the store's prefix. Batch semantics shared with the other backends live
in tests/conformance/test_batch_lifecycle.py and test_batches.py.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Iterator
from dataclasses import astuple, replace
from typing import Any

import pytest
import redis
from redis.crc import key_slot

from conformance.helpers import counts
from tenure.core import batch as rules
from tenure.core.errors import ConfigError, TenureError
from tenure.core.guards import Guards
from tenure.core.records import Ending, NewBatch, NewJob, WorkerRef
from tenure.core.retry import Policy
from tenure.stores.base import get_batch
from tenure.stores.redis import RedisStore, split_prefix
from tenure.stores.redis.scripts import read_lua

from servers import raw_redis

WORKER = WorkerRef(id="w-1", host="host-a", pid=111)
ONE_TRY = Policy(tries=1, backoff=0)


def job(queue: str = "default", policy: Policy | None = None) -> NewJob:
    return NewJob(
        id=secrets.token_hex(6),
        name="member",
        queue=queue,
        payload='{"args":[],"kwargs":{}}',
        policy=policy or Policy(tries=3, backoff=0),
    )


def drop_keys(store: RedisStore) -> None:
    client = raw_redis(split_prefix(store.url)[0])
    try:
        # one key per command: on a cluster node a multi-key DEL must stay in one slot
        pipe = client.pipeline(transaction=False)
        for key in client.scan_iter(match=store.db.key_pattern(), count=1000):
            pipe.delete(key)
        pipe.execute()
    finally:
        client.close()


@pytest.fixture
def make_store() -> Iterator[Callable[[str], RedisStore]]:
    made: list[RedisStore] = []

    def make(server_url: str) -> RedisStore:
        store = RedisStore(f"{server_url}?prefix=tenure_tb_{secrets.token_hex(5)}")
        store.migrate()
        made.append(store)
        return store

    yield make
    for store in made:
        drop_keys(store)
        store.close()


@pytest.fixture
def store(redis_url: str, make_store: Callable[[str], RedisStore]) -> RedisStore:
    return make_store(redis_url)


def make_batch(store: RedisStore, members: list[NewJob], *, callbacks_in: str = "") -> str:
    batch_id = secrets.token_hex(5)
    queue = callbacks_in or (members[0].queue if members else "default")
    store.enqueue_many(
        members,
        batch=NewBatch(
            id=batch_id,
            name="b",
            then=job(queue),
            catch=job(queue),
            finally_=job(queue),
        ),
    )
    return batch_id


# -- the Lua rules are the Python rules ----------------------------------------------------------
HARNESS = """
local c = {state = ARGV[2], jobs = tonumber(ARGV[3]), done = tonumber(ARGV[4]),
  failed = tonumber(ARGV[5]), cancelled = tonumber(ARGV[6]), allow = ARGV[7] == '1',
  catch_sent = ARGV[8] == '1', finished = ARGV[9] == '1'}
local cbs, cancel = {}, false
if ARGV[1] == 'member_ended' then cancel = b_member_ended(c, ARGV[10], cbs)
elseif ARGV[1] == 'cancelled_by_user' then cancel = b_cancelled_by_user(c)
elseif ARGV[1] == 'queued_cancelled' then b_queued_cancelled(c, tonumber(ARGV[10]), cbs)
elseif ARGV[1] == 'member_retried' then b_member_retried(c)
else b_settle(c, cbs) end
return {c.state, c.jobs, c.done, c.failed, c.cancelled, c.allow and 1 or 0,
  c.catch_sent and 1 or 0, c.finished and 1 or 0, cbs, cancel and 1 or 0}
"""


def python_rule(op: str, counts: rules.BatchCounts, arg: str) -> rules.BatchChange:
    if op == "member_ended":
        return rules.member_ended(counts, arg)
    if op == "cancelled_by_user":
        return rules.cancelled_by_user(counts)
    if op == "queued_cancelled":
        return rules.queued_members_cancelled(counts, int(arg))
    if op == "member_retried":  # refused: the counts stay as they were
        return rules.BatchChange(rules.member_retried(counts) or counts)
    return rules.settle(counts)


def test_the_lua_batch_rules_agree_with_tenure_batch_on_every_state(client: redis.Redis) -> None:
    sha = client.script_load(read_lua("lib/batch_rules.lua") + HARNESS)
    ops = [
        ("member_ended", "succeeded"),
        ("member_ended", "failed"),
        ("member_ended", "cancelled"),
        ("cancelled_by_user", ""),
        ("queued_cancelled", "0"),
        ("queued_cancelled", "2"),
        ("member_retried", ""),
        ("settle", ""),
    ]
    cases: list[tuple[str, str, rules.BatchCounts]] = []
    numbers = itertools.product(range(4), range(3), range(3), range(3))
    switches = list(itertools.product((False, True), repeat=3))
    for state, (jobs, done, failed, cancelled) in itertools.product(rules.BATCH_STATES, numbers):
        for allow, catch_sent, finished in switches:
            counts = rules.BatchCounts(
                state, jobs, done, failed, cancelled, allow, catch_sent, finished
            )
            cases += [(op, arg, counts) for op, arg in ops]
    pipe = client.pipeline(transaction=False)
    for op, arg, counts in cases:
        flags = ["1" if x else "0" for x in (counts.allow_failures, counts.catch_sent)]
        pipe.evalsha(
            sha,
            0,
            op,
            counts.state,
            counts.jobs,
            counts.done,
            counts.failed,
            counts.cancelled,
            *flags,
            "1" if counts.finished else "0",
            arg,
        )
    replies = pipe.execute()
    assert len(cases) > 20_000
    for (op, arg, counts), reply in zip(cases, replies, strict=True):
        want = python_rule(op, counts, arg)
        c = want.counts
        expected: list[Any] = [
            c.state,
            c.jobs,
            c.done,
            c.failed,
            c.cancelled,
            int(c.allow_failures),
            int(c.catch_sent),
            int(c.finished),
            list(want.callbacks),
            int(want.cancel_queued),
        ]
        assert reply == expected, (op, arg, astuple(counts))


# -- where the keys live -------------------------------------------------------------------------
def test_a_batch_lives_in_its_first_members_queue_slot(
    store: RedisStore, client: redis.Redis
) -> None:
    batch_id = make_batch(store, [job("exports"), job("exports")])
    batch_keys = [k for k in client.scan_iter(match=f"{store.prefix}:*{batch_id}")]
    # the batch hash, its open members and every member (what list_jobs(batch_id=) reads)
    assert len(batch_keys) == 3
    queue_slot = key_slot(f"{store.prefix}:{{q:exports}}:queued".encode())
    assert {key_slot(k.encode()) for k in batch_keys} == {queue_slot}
    assert client.hget(f"{store.prefix}:{{g}}:batch_queues", batch_id) == "exports"


def test_on_one_server_members_and_callbacks_may_use_any_queues(store: RedisStore) -> None:
    a, b, c = job("alpha", ONE_TRY), job("beta"), job("gamma")
    batch_id = make_batch(store, [a, b, c], callbacks_in="callbacks")
    got = store.reserve(queues=["alpha"], worker=WORKER, lease=30)
    store.end_attempt(Ending(job_id=got[0].job_id, token=got[0].token, outcome="failed", error="e"))
    record = get_batch(store, batch_id)
    assert record is not None
    assert (record.state, record.failed, record.cancelled) == ("failed", 1, 2)
    assert [j.state for j in store.list_jobs(state="cancelled")] == ["cancelled"] * 2
    assert counts(store)["cancelled"] == 2
    assert store.reserve(queues=["beta", "gamma"], worker=WORKER, lease=30, limit=5) == []
    names = {j.id for j in store.list_jobs(queue="callbacks")}
    assert names == {record.catch_job_id, record.finally_job_id}


def test_creating_a_batch_twice_is_refused(store: RedisStore) -> None:
    batch_id = make_batch(store, [job()])
    with pytest.raises(TenureError, match="already exists"):
        store.enqueue_many([job()], batch=NewBatch(id=batch_id, name="again"))
    with pytest.raises(TenureError, match="already exists"):
        store.enqueue_many([job("other")], batch=NewBatch(id=batch_id, name="again"))


# -- damaged records -----------------------------------------------------------------------------
def test_damaged_queue_bases_never_lead_a_script_outside_the_prefix(
    store: RedisStore, client: redis.Redis
) -> None:
    member, waiting = job(policy=ONE_TRY), job()
    batch_id = make_batch(store, [member, waiting])
    base = f"{store.prefix}:{{q:default}}"
    foreign = f"elsewhere_{secrets.token_hex(4)}"
    client.hset(f"{base}:batch:{batch_id}", "catch.base", f"{foreign}:{{q:default}}")
    client.hset(f"{base}:bopen:{batch_id}", "ghost", f"{foreign}:{{q:default}}")
    got = store.reserve(queues=["default"], worker=WORKER, lease=30)
    store.end_attempt(Ending(job_id=got[0].job_id, token=got[0].token, outcome="failed", error="e"))
    record = get_batch(store, batch_id)
    assert record is not None
    # the ghost member is dropped as cancelled with the queued one; catch is skipped
    assert (record.state, record.failed, record.cancelled, record.pending) == ("failed", 1, 2, 0)
    assert record.catch_job_id is None and record.finally_job_id is not None
    assert list(client.scan_iter(match=f"{foreign}*")) == []
    assert list(client.scan_iter(match=":job:*")) == []


def test_a_batch_hash_without_a_state_stops_its_bookkeeping_not_its_members(
    store: RedisStore, client: redis.Redis
) -> None:
    batch_id = make_batch(store, [job(), job()])
    client.hdel(f"{store.prefix}:{{q:default}}:batch:{batch_id}", "state")
    for r in store.reserve(queues=["default"], worker=WORKER, lease=30, limit=2):
        store.report_progress(job_id=r.job_id, token=r.token, fraction=0.5)
        assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    record = get_batch(store, batch_id)
    assert record is not None and record.state == "failed"
    assert store.cancel(batch_id=batch_id).accepted is False
    assert len(store.enqueue_many([job()], into_batch=batch_id)) == 0


def test_a_callback_keeps_its_guards_and_an_older_record_without_them_still_runs(
    store: RedisStore, client: redis.Redis
) -> None:
    guards = Guards(overlap_key="k", overlap_delay=0.5, rate_key="r", rate_limit=2, rate_window=9)
    base = f"{store.prefix}:{{q:default}}"
    ids = []
    for damage in ("", "gone", "not json"):
        then = replace(job(), guards=guards)
        batch_id = secrets.token_hex(5)
        store.enqueue_many([job()], batch=NewBatch(id=batch_id, name="b", then=then))
        if damage == "gone":  # a batch written before callbacks kept their guards
            client.hdel(f"{base}:batch:{batch_id}", "then.guards")
        elif damage:
            client.hset(f"{base}:batch:{batch_id}", "then.guards", damage)
        ids.append(then.id)
    for r in store.reserve(queues=["default"], worker=WORKER, lease=30, limit=3):  # members
        assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    fields = ["overlap_key", "overlap_delay", "rate_key", "rate_limit", "rate_window"]
    kept, *older = (client.hmget(f"{base}:job:{i}", ["state", *fields]) for i in ids)
    assert kept == ["queued", "k", "0.5", "r", "2", "9"]
    assert older == [["queued", *[None] * len(fields)]] * 2


# -- Redis Cluster -------------------------------------------------------------------------------
def test_on_a_cluster_a_batch_in_one_queue_runs_whole(
    cluster_node: str, make_store: Callable[[str], RedisStore]
) -> None:
    store = make_store(cluster_node)
    members = [job("exports", ONE_TRY) for _ in range(3)]
    batch_id = make_batch(store, members)
    store.enqueue_many([job("exports")], into_batch=batch_id)
    got = store.reserve(queues=["exports"], worker=WORKER, lease=30, limit=2)
    store.report_progress(job_id=got[0].job_id, token=got[0].token, fraction=0.5)
    store.end_attempt(Ending(job_id=got[0].job_id, token=got[0].token))
    store.end_attempt(Ending(job_id=got[1].job_id, token=got[1].token, outcome="failed", error="e"))
    record = get_batch(store, batch_id)
    assert record is not None
    assert (record.state, record.done, record.failed, record.cancelled) == ("failed", 1, 1, 2)
    assert record.catch_job_id is not None and record.finally_job_id is not None
    other = make_batch(store, [job("exports")])
    assert store.cancel(batch_id=other).accepted
    assert [b.id for b in store.list_batches()] == [other, batch_id]
    client = raw_redis(cluster_node)
    try:
        slots = {key_slot(k.encode()) for k in client.scan_iter(match=f"{store.prefix}:*")}
    finally:
        client.close()
    home = key_slot(f"{store.prefix}:{{q:exports}}".encode())
    assert slots == {home, key_slot(f"{store.prefix}:{{g}}".encode())}


def test_on_a_cluster_a_batch_spanning_queues_is_refused_up_front(
    cluster_node: str, make_store: Callable[[str], RedisStore]
) -> None:
    store = make_store(cluster_node)
    with pytest.raises(ConfigError, match=r"Redis Cluster.*'exports'.*\['mail'\]"):
        make_batch(store, [job("exports"), job("mail")])
    with pytest.raises(ConfigError, match="Redis Cluster"):
        make_batch(store, [job("exports")], callbacks_in="callbacks")
    batch_id = make_batch(store, [job("exports")])
    with pytest.raises(ConfigError, match="Redis Cluster"):
        store.enqueue_many([job("mail")], into_batch=batch_id)
    assert store.list_jobs(queue="mail") == []
