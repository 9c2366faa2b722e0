"""On Redis 7 the store's scripts run as functions (FUNCTION LOAD, FCALL); a server that forgot
them gets them again, and a server that refuses FUNCTION runs the same scripts by EVALSHA."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tenure.core.records import Ending, NewJob, WorkerRef
from tenure.core.retry import Policy
from tenure.stores.redis import RedisStore, scripts
from tenure.stores.redis.scripts import global_library, global_scripts, queue_library, queue_scripts

from servers import ThrowawayRedis

WORKER = WorkerRef(id="w-1", host="host-a", pid=111)


def job(job_id: str, queue: str = "default") -> NewJob:
    return NewJob(id=job_id, name="fn", queue=queue, payload="{}", policy=Policy())


def library_name(text: str) -> str:
    shebang = text.split("\n", 1)[0]
    assert shebang.startswith("#!lua name=tenure_"), shebang
    return shebang.split("=", 1)[1]


LIBRARIES = [library_name(lib()[0]) for lib in (queue_library, global_library)]


def loaded(client: redis.Redis) -> set[str]:
    # each library comes back as a flat list: name, value, name, value, ...
    names = {
        str(dict(zip(lib[::2], lib[1::2], strict=True))["library_name"])
        for lib in client.function_list()
    }
    return names & set(LIBRARIES)


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url, decode_responses=True)
    if int(c.info("server")["redis_version"].split(".")[0]) < 7:
        c.close()
        pytest.skip("Redis before 7 has no functions: the scripts run by EVALSHA")
    yield c
    c.close()


def test_a_prelude_constant_is_built_once_and_what_a_call_fills_on_every_call() -> None:
    # a library's constants are built at FUNCTION LOAD; a value that reads this call's
    # arguments, an accumulator ({}), or a table some script writes into stays per call
    prelude = (
        "local base = ARGV[1]\n"
        "local FINAL = {succeeded = true, failed = true}\n"
        "local PARKED_AT = '253402214400.000000'  -- a comment naming base\n"
        "local LOST = {}\n"
        "local SEEN = {'a'}\n"
        "local ENDED = base .. ':ended'\n"
        "local clock_text\n"
        "local function mark() SEEN[1] = 'b' end\n"
    )
    body = "table.insert(FINAL, 1)\n"
    for lua, built_once in (("", ["FINAL", "PARKED_AT"]), (body, ["PARKED_AT"])):
        names, once, per_call, functions = scripts._split_prelude(prelude, lua)
        assert names == ["base", "FINAL", "PARKED_AT", "LOST", "SEEN", "ENDED", "clock_text"]
        assert [text.split(" =")[0] for text in once] == built_once
        assert [text.split(" =")[0] for text in per_call] == [
            n for n in names if n not in built_once
        ]
        assert len(functions) == 1


def test_a_library_table_is_built_once_though_calls_write_into_it() -> None:
    # `--#library`: a cache the library keeps across calls (prelude.lua's KEY_NAMES), though
    # a function fills it; an ordinary empty table is still made afresh on every call
    prelude = (
        "local base = ARGV[1]\n"
        "local NAMES = {} --#library\n"
        "local LOST = {}\n"
        "local function named(b) NAMES[b] = NAMES[b] or b .. ':x'; return NAMES[b] end\n"
    )
    names, once, per_call, _ = scripts._split_prelude(prelude, "")
    assert names == ["base", "NAMES", "LOST"]
    assert [text.split(" =")[0] for text in once] == ["NAMES"]
    assert [text.split(" =")[0] for text in per_call] == ["base", "LOST"]


def test_every_script_is_a_function_of_a_library_named_by_its_text() -> None:
    assert set(queue_library()[1]) == set(queue_scripts())
    assert set(global_library()[1]) == set(global_scripts())
    for lib in (queue_library, global_library):
        text, calls = lib()
        assert all(fn.startswith(library_name(text) + "_") for fn in calls.values())


def test_the_store_loads_its_libraries_and_loads_them_again_when_forgotten(
    store: RedisStore, client: redis.Redis
) -> None:
    store.enqueue_many([job("a")])
    assert loaded(client) == set(LIBRARIES)
    calls_before = int(client.info("commandstats").get("cmdstat_fcall", {}).get("calls", 0))
    for name in LIBRARIES:  # only tenure's own libraries: other tenants keep theirs
        client.function_delete(name)
    store.enqueue_many([job("b"), job("c", queue="mail")])  # the pipelined path
    assert loaded(client) == set(LIBRARIES)
    for name in LIBRARIES:
        client.function_delete(name)
    got = store.reserve(queues=["default", "mail"], worker=WORKER, lease=30, limit=3)  # one call
    assert [r.job_id for r in got] == ["a", "b", "c"]
    assert loaded(client) == set(LIBRARIES)
    calls_after = int(client.info("commandstats")["cmdstat_fcall"]["calls"])
    assert calls_after > calls_before


def test_a_server_that_refuses_function_runs_the_scripts_by_evalsha(
    throwaway_redis: ThrowawayRedis,
) -> None:
    admin = redis.Redis.from_url(throwaway_redis.url)
    admin.acl_setuser(
        "nofn",
        enabled=True,
        passwords=["+pw"],
        keys=["*"],
        channels=["*"],
        commands=["+@all", "-function"],
    )
    url = throwaway_redis.url.replace("redis://", "redis://nofn:pw@") + "?prefix=t"
    store = RedisStore(url)
    try:
        store.enqueue_many([job("a")])
        (r,) = store.reserve(queues=["default"], worker=WORKER, lease=30)
        assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
        stats = admin.info("commandstats")
        assert "cmdstat_fcall" not in stats
        assert int(stats["cmdstat_evalsha"]["calls"]) >= 3
    finally:
        store.close()
        admin.close()
