"""Redis-specific behaviour of RedisStore: key layout, hash tags, prefix isolation, atomicity of
the Lua scripts under concurrency, the server's TIME as the only clock, damaged records, and
what a restart keeps. Store semantics shared with the other backends live in tests/conformance.

Runs against the real Redis at $TENURE_TEST_REDIS_URL (default redis://127.0.0.1:6379/11); each
test gets its own key prefix and deletes its keys afterwards.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
import redis
from redis.crc import key_slot

from conformance.helpers import counts
from tenure.core.errors import ConfigError, StoreUnavailable
from tenure.core.records import Ending, NewJob, Rescued, Reservation, WorkerRecord, WorkerRef
from tenure.core.retry import Policy
from tenure.stores import open_store
from tenure.stores.base import get_job
from tenure.stores.redis import RedisStore, split_prefix

from servers import ThrowawayRedis

DEADLINE_S = 20.0
WORKER = WorkerRef(id="w-1", host="host-a", pid=111)


def new_prefix() -> str:
    return f"tenure_test_{secrets.token_hex(6)}"


def drop_keys(url: str, store: RedisStore) -> None:
    client = redis.Redis.from_url(split_prefix(url)[0])
    try:
        keys = list(client.scan_iter(match=store.db.key_pattern(), count=1000))
        for start in range(0, len(keys), 500):
            client.delete(*keys[start : start + 500])
    finally:
        client.close()


@pytest.fixture
def make_store(redis_url: str) -> Iterator[Callable[..., RedisStore]]:
    """Stores under fresh prefixes (or a given one); every key they wrote is deleted after."""
    made: list[tuple[str, RedisStore]] = []

    def make(prefix: str | None = None) -> RedisStore:
        url = f"{redis_url}{'&' if '?' in redis_url else '?'}prefix={prefix or new_prefix()}"
        store = RedisStore(url)
        made.append((url, store))
        return store

    yield make
    for url, store in made:
        drop_keys(url, store)
        store.close()


@pytest.fixture
def store(make_store: Callable[..., RedisStore]) -> RedisStore:
    return make_store()


def job(job_id: str, *, queue: str = "default", delay: float = 0.0, **policy: object) -> NewJob:
    return NewJob(
        id=job_id,
        name="send_invoice",
        queue=queue,
        payload='{"args":[1],"kwargs":{}}',
        policy=Policy(**policy),  # type: ignore[arg-type]
        delay=delay,
    )


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {DEADLINE_S} s waiting for {what}")
        time.sleep(0.01)


# -- URL and keys ------------------------------------------------------------------------------
def test_prefix_is_taken_out_of_the_url_and_other_options_are_kept() -> None:
    url, prefix = split_prefix("redis://u:p@127.0.0.1:6379/2?prefix=t_abc&socket_timeout=7")
    assert prefix == "t_abc"
    assert url == "redis://u:p@127.0.0.1:6379/2?socket_timeout=7"
    assert split_prefix("redis://127.0.0.1:6379/0") == ("redis://127.0.0.1:6379/0", "tenure")


@pytest.mark.parametrize("bad", ["", "a{b}", "has space"])
def test_a_prefix_that_would_break_hash_tags_is_refused(bad: str) -> None:
    with pytest.raises(ConfigError, match="prefix="):
        RedisStore(f"redis://127.0.0.1:6379/0?prefix={bad}")


def test_open_store_picks_redis_and_keeps_the_full_url(redis_url: str) -> None:
    url = f"{redis_url}?prefix={new_prefix()}"
    store = open_store(url)
    try:
        assert isinstance(store, RedisStore)
        assert store.url == url
    finally:
        store.close()


def test_every_key_is_under_the_prefix_and_a_queue_lives_in_one_cluster_slot(
    store: RedisStore, client: redis.Redis
) -> None:
    queues = ["default", "mail", "a:b", "{x}", "100%"]
    store.enqueue_many([job(f"j-{i}", queue=q) for i, q in enumerate(queues)])
    store.reserve(queues=queues, worker=WORKER, lease=30, limit=len(queues))
    store.heartbeat(worker=WorkerRecord("w-1", "host-a", 111, ("default",), 2, 0.0, 0.0))
    store.set_control(restart=True)

    keys = set(client.scan_iter(match=f"{store.prefix}:*", count=1000))
    assert keys == set(client.scan_iter(match=store.db.key_pattern(), count=1000))
    slots_by_queue: dict[str, set[int]] = {}
    for key in keys:
        tag = key[len(store.prefix) + 1 :].split("}", 1)[0] + "}"
        assert tag.startswith("{"), key
        slots_by_queue.setdefault(tag, set()).add(key_slot(key.encode()))
    assert all(len(slots) == 1 for slots in slots_by_queue.values()), slots_by_queue
    # one tag per queue, plus the store-wide {g}
    assert len(slots_by_queue) == len(queues) + 1
    for i, queue in enumerate(queues):
        record = get_job(store, f"j-{i}")
        assert record is not None
        assert (record.queue, record.state) == (queue, "running")


def test_prefixes_are_isolated_even_when_one_extends_the_other(
    make_store: Callable[..., RedisStore], client: redis.Redis
) -> None:
    base = new_prefix()
    outer, inner = make_store(base), make_store(f"{base}:x")
    outer.enqueue_many([job("only-outer")])
    inner.enqueue_many([job("only-inner"), job("second-inner", queue="mail")])

    assert counts(outer)["queued"] == 1
    assert counts(inner)["queued"] == 2
    assert get_job(inner, "only-outer") is None
    assert [r.job_id for r in outer.reserve(queues=["default"], worker=WORKER, lease=30)] == [
        "only-outer"
    ]
    assert outer.reserve(queues=["default", "mail"], worker=WORKER, lease=30) == []
    outer_keys = set(client.scan_iter(match=outer.db.key_pattern(), count=1000))
    inner_keys = set(client.scan_iter(match=inner.db.key_pattern(), count=1000))
    assert outer_keys and inner_keys and not outer_keys & inner_keys


# -- Lua atomicity under concurrency ------------------------------------------------------------
def test_concurrent_reservers_never_get_the_same_job(store: RedisStore) -> None:
    total = 600
    store.enqueue_many([job(f"j-{i:04d}") for i in range(total)])
    got: list[str] = []
    lock = threading.Lock()

    def reserve_all(n: int) -> None:
        # Each thread its own store: its own connection pool, as separate workers would have.
        own = RedisStore(store.url)
        try:
            while batch := own.reserve(
                queues=["default"], worker=WorkerRef(f"w-{n}", "h", n), lease=30, limit=7
            ):
                with lock:
                    got.extend(r.job_id for r in batch)
        finally:
            own.close()

    threads = [threading.Thread(target=reserve_all, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S)
    assert len(got) == total
    assert len(set(got)) == total
    assert counts(store)["running"] == total


def test_concurrent_rescuers_close_each_expired_attempt_once(store: RedisStore) -> None:
    store.enqueue_many([job(f"j-{i}", backoff=60) for i in range(40)])
    reserved = store.reserve(queues=["default"], worker=WORKER, lease=0.2, limit=40)
    assert len(reserved) == 40
    wait_until(lambda: store.now() > max(r.lease_expires_at for r in reserved), "leases to expire")

    results: list[str] = []
    lock = threading.Lock()

    def rescue() -> None:
        own = RedisStore(store.url)
        try:
            found = own.sweep(prune=False).rescued
            with lock:
                results.extend(r.job_id for r in found)
        finally:
            own.close()

    threads = [threading.Thread(target=rescue) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S)
    assert sorted(results) == sorted(r.job_id for r in reserved)
    for r in reserved:
        record = get_job(store, r.job_id)
        assert record is not None
        assert record.state == "scheduled"  # backoff=60
        assert [a.outcome for a in record.attempts] == ["crashed"]
        assert record.tries_used == 1


def test_a_late_complete_racing_a_rescue_is_either_accepted_or_refused_never_both(
    store: RedisStore,
) -> None:
    for round_no in range(30):
        job_id = f"race-{round_no}"
        store.enqueue_many([job(job_id, backoff=60)])
        (r,) = store.reserve(queues=["default"], worker=WORKER, lease=0.05)
        wait_until(lambda: store.now() > r.lease_expires_at, "lease to expire")  # noqa: B023
        rescued: list[Rescued] = []
        rescuer = threading.Thread(target=lambda: rescued.extend(store.sweep(prune=False).rescued))  # noqa: B023
        rescuer.start()
        result = store.end_attempt(Ending(job_id=job_id, token=r.token))[0]
        rescuer.join(DEADLINE_S)
        record = get_job(store, job_id)
        assert record is not None
        if result.accepted:
            assert [x.job_id for x in rescued] == []
            assert record.state == "succeeded"
            assert [a.outcome for a in record.attempts] == ["succeeded"]
        else:
            assert [x.job_id for x in rescued] == [job_id]
            assert record.state == "scheduled"
            assert [a.outcome for a in record.attempts] == ["lost_lease"]
            assert "late result was refused" in (record.attempts[0].error or "")


# -- the server's clock -------------------------------------------------------------------------
def test_leases_and_schedules_use_the_servers_time_not_the_callers(
    store: RedisStore, client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    seconds, micros = client.time()
    assert abs(store.now() - (seconds + micros / 1e6)) < 1.0
    # This process's clock runs two minutes fast; nothing in the store may notice.
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + 120.0)
    store.enqueue_many([job("now"), job("later", delay=30)])
    (r,) = store.reserve(queues=["default"], worker=WORKER, lease=30)
    assert r.job_id == "now"
    assert 29.0 < r.lease_expires_at - store.now() <= 30.0
    assert store.sweep(prune=False).rescued == []
    later = get_job(store, "later")
    assert later is not None and later.state == "scheduled"
    assert 29.0 < later.run_at - store.now() <= 30.0


def test_the_same_enqueue_call_is_reserved_in_the_order_it_was_sent(store: RedisStore) -> None:
    # One enqueue_many reads the clock once, so every job has the same run_at; the order must
    # come from the sequence, not from the random-looking ids.
    ids = [secrets.token_hex(4) for _ in range(50)]
    store.enqueue_many([job(i) for i in ids])
    got = [r.job_id for r in store.reserve(queues=["default"], worker=WORKER, lease=30, limit=50)]
    assert got == ids
    assert [j.id for j in store.list_jobs(limit=50)] == ids[::-1]


# -- wake-ups -----------------------------------------------------------------------------------
def test_wait_for_work_wakes_on_enqueue_without_waiting_out_its_timeout(
    store: RedisStore,
) -> None:
    store.enqueue_many([job("drain")])
    store.wait_for_work(queues=["default"], timeout=1.0)  # eat the token that enqueue left
    returned = threading.Event()

    def waiter() -> None:
        store.wait_for_work(queues=["other", "default"], timeout=DEADLINE_S)
        returned.set()

    t = threading.Thread(target=waiter)
    started = time.monotonic()
    t.start()
    assert not returned.wait(0.2)  # still blocked: there was nothing to wake it
    store.enqueue_many([job("wake")])
    assert returned.wait(DEADLINE_S)
    assert time.monotonic() - started < DEADLINE_S - 1
    t.join(DEADLINE_S)


def test_wait_for_work_wakes_when_a_delayed_job_becomes_due(store: RedisStore) -> None:
    store.enqueue_many([job("soon", delay=0.5)])
    store.wait_for_work(queues=["default"], timeout=1.0)  # eat the token that enqueue left
    started = time.monotonic()
    store.wait_for_work(queues=["default"], timeout=DEADLINE_S)
    assert time.monotonic() - started < DEADLINE_S - 1
    assert [r.job_id for r in store.reserve(queues=["default"], worker=WORKER, lease=30)] == [
        "soon"
    ]


def test_wake_up_tokens_are_bounded(store: RedisStore, client: redis.Redis) -> None:
    store.enqueue_many([job(f"j-{i}") for i in range(1200)])
    assert counts(store)["queued"] == 1200
    assert client.llen(f"{store.prefix}:{{q:default}}:notify") <= 32


# -- damaged data and lost scripts --------------------------------------------------------------
def test_damaged_records_do_not_crash_reserve_or_get_job(
    store: RedisStore, client: redis.Redis
) -> None:
    raw = redis.Redis.from_url(split_prefix(store.url)[0])  # bytes in, bytes out
    base = f"{store.prefix}:{{q:default}}"
    store.enqueue_many([job("bad-bytes"), job("bad-policy"), job("no-fields"), job("gone")])
    raw.hset(f"{base}:job:bad-bytes", "payload", b"\xff\xfe{not json")
    client.hset(f"{base}:job:bad-policy", "policy", "{{{")
    client.hdel(f"{base}:job:no-fields", "name", "payload", "policy", "created_at")
    client.delete(f"{base}:job:gone")
    raw.close()

    got = {
        r.job_id: r for r in store.reserve(queues=["default"], worker=WORKER, lease=30, limit=10)
    }
    assert set(got) == {"bad-bytes", "bad-policy", "no-fields"}
    assert "\ufffd" in got["bad-bytes"].payload  # reaches the worker, which fails that job
    assert got["bad-policy"].policy == Policy()
    assert (got["no-fields"].name, got["no-fields"].payload) == ("", "")
    record = get_job(store, "no-fields")
    assert record is not None
    assert record.state == "running"
    assert "damaged" in (record.last_error or "")
    assert get_job(store, "gone") is None
    # the leftover entry of the vanished job was dropped, not left to block the queue
    assert client.zcard(f"{base}:queued") == 0
    assert counts(store)["running"] == 3


def test_keys_of_the_wrong_type_read_as_damaged_not_as_a_raw_wrongtype(
    store: RedisStore, client: redis.Redis
) -> None:
    base = f"{store.prefix}:{{q:default}}"
    store.enqueue_many([job("string-job"), job("list-effects")])
    client.delete(f"{base}:job:string-job")
    client.set(f"{base}:job:string-job", "a hand-written value")
    client.rpush(f"{base}:once:list-effects", "x")
    record = get_job(store, "string-job")
    assert record is not None
    assert "key job:string-job holds a string, not a hash" in (record.last_error or "")
    other = get_job(store, "list-effects")
    assert other is not None and other.state == "queued" and other.name == "send_invoice"
    assert "key once:list-effects holds a list, not a hash" in (other.last_error or "")
    assert {r.id for r in store.list_jobs(ids=["string-job", "list-effects"])} == {
        "string-job",
        "list-effects",
    }


def test_a_running_entry_without_its_job_is_cleaned_by_rescue(
    store: RedisStore, client: redis.Redis
) -> None:
    base = f"{store.prefix}:{{q:default}}"
    store.enqueue_many([job("vanishes")])
    (r,) = store.reserve(queues=["default"], worker=WORKER, lease=0.05)
    client.delete(f"{base}:job:vanishes")
    wait_until(lambda: store.now() > r.lease_expires_at, "the lease to expire")
    assert store.sweep(prune=False).rescued == []
    assert client.zcard(f"{base}:running") == 0


def test_scripts_are_reloaded_after_script_flush(store: RedisStore, client: redis.Redis) -> None:
    client.script_flush()
    store.enqueue_many([job("a"), job("b", queue="mail")])  # the pipelined path
    client.script_flush()
    got = store.reserve(queues=["default", "mail"], worker=WORKER, lease=30, limit=2)
    assert [r.job_id for r in got] == ["a", "b"]
    client.script_flush()
    assert not store.heartbeat(
        worker=WORKER, leases=[(r.job_id, r.token) for r in got], lease=30
    ).lost


def test_enqueueing_the_same_id_twice_keeps_the_first(store: RedisStore) -> None:
    # A client that retries after a lost reply must not create the job twice.
    store.enqueue_many([job("once")])
    store.enqueue_many([job("once", queue="default", delay=100)])
    record = get_job(store, "once")
    assert record is not None and record.state == "queued"
    assert counts(store)["queued"] == 1


def test_a_fresh_store_finds_jobs_by_id_alone(store: RedisStore) -> None:
    store.enqueue_many([job("in-mail", queue="mail")])
    (r,) = store.reserve(queues=["mail"], worker=WORKER, lease=30)
    other = RedisStore(store.url)  # no cache: must locate the queue on the server
    try:
        assert other.heartbeat(worker=WORKER, leases=[(r.job_id, r.token)], lease=30).lost == []
        assert other.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
        result = other.end_attempt(Ending(job_id="never-existed", token=1))[0]
        assert (result.accepted, result.state) == (False, "missing")
    finally:
        other.close()


def _commands(client: redis.Redis, prefix: str, action: Callable[[], object]) -> list[str]:
    """The commands clients sent (not those scripts ran) on keys under `prefix` while `action`
    ran, as MONITOR shows them."""
    mark = f"{prefix}:monitor-mark-{secrets.token_hex(4)}"
    seen: list[str] = []
    with client.monitor() as monitor:
        action()
        client.get(mark)
        while mark not in (command := str((sent := monitor.next_command())["command"])):
            if prefix in command and sent.get("client_type") != "lua":
                seen.append(command)
    return seen


def test_an_end_in_a_process_that_did_not_reserve_the_job_looks_nothing_up(
    make_store: Callable[..., RedisStore], client: redis.Redis
) -> None:
    """A worker's child ends the jobs its supervisor reserved: the job is tried in the worker's
    first queue, not looked up first (SMEMBERS of the queue registry, then EXISTS in each
    queue); a job of another queue is still completed where it is."""
    supervisor = make_store()
    supervisor.enqueue_many([job("first", queue="q1"), job("next", queue="q1")])
    supervisor.enqueue_many([job("elsewhere", queue="q2")])
    (a,) = supervisor.reserve(queues=["q1"], worker=WORKER, lease=30)
    (b,) = supervisor.reserve(queues=["q2"], worker=WORKER, lease=30)
    child = make_store(supervisor.prefix)
    child.db.check_layout()  # a child has used its store before (its first call checks the layout)
    ended: list[tuple[object, object]] = []

    def end(r: Reservation) -> None:
        ended.append(
            child.end_attempt(Ending(job_id=r.job_id, token=r.token), queues=["q1"], worker=WORKER)
        )

    seen = _commands(client, supervisor.prefix, lambda: end(a))
    # complete_and_reserve (sent again if the server had forgotten it), nothing else: FCALL of
    # its function on Redis 7, EVALSHA before
    assert {c.split()[0] for c in seen} in ({"FCALL"}, {"EVALSHA"})
    (result, following) = ended.pop()
    assert result.accepted and following is not None and following.job_id == "next"
    result, _ = child.end_attempt(
        Ending(job_id=b.job_id, token=b.token), queues=["q1"], worker=WORKER
    )
    assert (result.accepted, result.state) == (True, "succeeded")
    assert [get_job(supervisor, j).state for j in ("first", "elsewhere")] == ["succeeded"] * 2  # type: ignore[union-attr]


# -- what a restart keeps (the text at the top of stores/redis/store.py) ------------------------
def test_with_aof_a_restart_keeps_jobs_attempts_and_leases(
    throwaway_redis: ThrowawayRedis,
) -> None:
    server = throwaway_redis
    url = f"{server.url}?prefix={new_prefix()}"
    store = RedisStore(url)
    try:
        store.enqueue_many([job("kept"), job("running")])
        (r,) = store.reserve(queues=["default"], worker=WORKER, lease=60)
        server.stop()
        server.start()
        wait_until(lambda: _reachable(store), "Redis to come back")
        assert counts(store)["queued"] == 1
        assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
        record = get_job(store, r.job_id)
        assert record is not None and [a.outcome for a in record.attempts] == ["succeeded"]
    finally:
        store.close()


def test_without_persistence_a_restart_loses_everything() -> None:
    server = ThrowawayRedis(appendonly=False)
    try:
        server.start()
    except Exception as exc:  # no redis-server binary on this machine
        pytest.skip(f"cannot start a throwaway Redis: {exc}")
    store = RedisStore(f"{server.url}?prefix={new_prefix()}")
    try:
        store.enqueue_many([job("lost"), job("running")])
        (r,) = store.reserve(queues=["default"], worker=WORKER, lease=60)
        server.stop()
        server.start()
        wait_until(lambda: _reachable(store), "Redis to come back")
        assert counts(store) == dict.fromkeys(counts(store), 0)
        result = store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0]
        assert (result.accepted, result.state) == (False, "missing")
    finally:
        store.close()
        server.close()


def _reachable(store: RedisStore) -> bool:
    try:
        store.now()
    except StoreUnavailable:
        return False
    return True


def test_attempt_history_reads_back_in_order(store: RedisStore) -> None:
    store.enqueue_many([job("flaky", backoff=0, tries=5)])
    outcomes = ["failed", "interrupted", "timed_out", "crashed"]
    for outcome in outcomes:
        (r,) = store.reserve(queues=["default"], worker=WORKER, lease=30)
        store.end_attempt(
            Ending(job_id=r.job_id, token=r.token, outcome=outcome, error=f"{outcome}!")
        )
    (r,) = store.reserve(queues=["default"], worker=WORKER, lease=30)
    store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    record = get_job(store, "flaky")
    assert record is not None
    assert [a.number for a in record.attempts] == [1, 2, 3, 4, 5]
    assert [a.outcome for a in record.attempts] == [*outcomes, "succeeded"]
    assert Counter(a.worker_id for a in record.attempts) == {"w-1": 5}
    assert record.tries_used == 4  # interrupted used none, success used one


# -- migrate ------------------------------------------------------------------------------------
def test_migrate_is_idempotent_and_refuses_a_newer_layout(
    store: RedisStore, client: redis.Redis
) -> None:
    store.migrate()
    store.migrate()
    meta = f"{store.prefix}:{{g}}:meta"
    assert client.hget(meta, "layout") == "6"
    client.hset(meta, "layout", "99")
    with pytest.raises(ConfigError, match="layout 99"):
        store.migrate()


def test_migrate_warns_when_redis_may_evict_jobs(
    throwaway_redis: ThrowawayRedis, caplog: pytest.LogCaptureFixture
) -> None:
    store = RedisStore(f"{throwaway_redis.url}?prefix={new_prefix()}")
    try:
        store.migrate()
        assert "maxmemory-policy" not in caplog.text
        with redis.Redis.from_url(throwaway_redis.url) as admin:
            admin.config_set("maxmemory-policy", "allkeys-lru")
        store.migrate()
        assert "maxmemory-policy is allkeys-lru" in caplog.text
    finally:
        store.close()
