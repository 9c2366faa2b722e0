"""What only the PostgreSQL store promises: versioned migrations that survive a race, one
schema per installation, NOTIFY on every hand-back, and a clear error while the server is away.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from backends.postgres.kit import PostgresKit
from conformance.helpers import W1, counts, enqueue, job, new_job, reserve_one, wait_until
from tenure.core.errors import ConfigError, StoreUnavailable
from tenure.core.records import Ending
from tenure.core.retry import Policy
from tenure.stores import open_store
from tenure.stores.base import get_job
from tenure.stores.postgres import PostgresStore
from tenure.stores.postgres.database import channel_name, parse_url
from tenure.stores.postgres.schema import migrations

from servers import ThrowawayPostgres, with_query_param


@pytest.fixture
def fresh_schema(postgres_url: str) -> Iterator[tuple[str, str]]:
    """A schema name nobody has created yet, and the store URL naming it; dropped after."""
    name = f"tenure_pg_{secrets.token_hex(5)}"
    yield name, with_query_param(postgres_url, "schema", name)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def versions(postgres_url: str, schema: str) -> list[int]:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        rows = conn.execute(
            f'SELECT version FROM "{schema}".tenure_schema_version ORDER BY version'
        ).fetchall()
    return [r[0] for r in rows]


def test_first_use_creates_the_schema_and_records_its_version(
    postgres_url: str, fresh_schema: tuple[str, str]
) -> None:
    name, url = fresh_schema
    store = open_store(url)
    try:
        enqueue(store, new_job())  # no explicit migrate(): first use does it
        assert versions(postgres_url, name) == [m.version for m in migrations()]
        store.migrate()
        assert versions(postgres_url, name) == [m.version for m in migrations()]
    finally:
        store.close()


def test_processes_migrating_at_once_all_succeed_and_apply_each_step_once(
    postgres_url: str, fresh_schema: tuple[str, str]
) -> None:
    name, url = fresh_schema
    code = (
        "import sys; from tenure.stores.postgres import PostgresStore\n"
        "sys.stdin.readline(); s = PostgresStore(sys.argv[1]); s.migrate(); s.close()\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, url], stdin=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        p.communicate(timeout=60)
    assert [p.returncode for p in procs] == [0, 0, 0, 0]
    assert versions(postgres_url, name) == [m.version for m in migrations()]


def test_a_schema_newer_than_the_code_is_refused(
    postgres_url: str, fresh_schema: tuple[str, str]
) -> None:
    name, url = fresh_schema
    PostgresStore(url).migrate()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO \"{name}\".tenure_schema_version (version, name) VALUES (999, 'future')"
        )
    store = PostgresStore(url)
    try:
        with pytest.raises(ConfigError, match="version 999"):
            counts(store)
    finally:
        store.close()


def test_schemas_keep_installations_apart(postgres_url: str) -> None:
    a_name, b_name = (f"tenure_pg_{secrets.token_hex(5)}" for _ in range(2))
    a = PostgresStore(with_query_param(postgres_url, "schema", a_name))
    b = PostgresStore(with_query_param(postgres_url, "schema", b_name))
    try:
        (job_id,) = enqueue(a, new_job())
        assert get_job(b, job_id) is None
        assert counts(b)["queued"] == 0
        assert b.reserve(queues=["default"], worker=W1, lease=30, limit=1) == []
        assert counts(a)["queued"] == 1
    finally:
        a.close()
        b.close()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            for name in (a_name, b_name):
                conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def test_the_url_keeps_libpq_options_and_drops_tenures_own() -> None:
    conninfo, schema = parse_url(
        "postgresql://u:pw@db.example:6543/app?sslmode=require&schema=jobs&application_name=x"
    )
    assert schema == "jobs"
    assert conninfo == "postgresql://u:pw@db.example:6543/app?sslmode=require&application_name=x"
    assert parse_url("postgres://localhost/app") == ("postgres://localhost/app", "tenure")


def test_a_libpq_option_with_spaces_reaches_the_server(store_url: str) -> None:
    """`options=-c statement_timeout=...` spelled with %20: libpq reads '+' literally, so
    the URL tenure passes on must keep %20 (urlencode's default would write '+')."""
    store = open_store(with_query_param(store_url, "options", "-c statement_timeout=4321"))
    try:
        db: Any = store.db  # type: ignore[attr-defined]
        with db.connection() as conn:
            row = conn.execute("SHOW statement_timeout").fetchone()
        assert next(iter(row.values())) == "4321ms"
    finally:
        store.close()


@pytest.mark.parametrize("bad", ["", "1abc", "a-b", 'x"; DROP TABLE y; --', "a" * 64])
def test_a_schema_name_must_be_plain(bad: str) -> None:
    with pytest.raises(ConfigError, match="schema"):
        parse_url(f"postgresql://localhost/app?schema={bad}")


def test_notify_channels_fit_postgres_limits() -> None:
    assert channel_name("tenure") == "tenure:tenure"
    long = channel_name("a" * 63)
    assert len(long) <= 63 and long != channel_name("a" * 62 + "b")


def woke_within(store: PostgresStore, action: object, limit: float = 5.0) -> float:
    """Seconds an idle waiter took to wake after `action()` ran in another connection."""
    store.wait_for_work(queues=["default"], timeout=0.1)  # subscribe
    started = threading.Event()
    elapsed: list[float] = []

    def waiter() -> None:
        started.set()
        t = time.monotonic()
        store.wait_for_work(queues=["default"], timeout=limit * 4)
        elapsed.append(time.monotonic() - t)

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    started.wait(5)
    assert callable(action)
    action()  # NOTIFYs wait in the LISTEN connection, so the order does not matter
    thread.join(limit * 5)
    assert elapsed and elapsed[0] < limit, elapsed
    return elapsed[0]


def test_a_job_handed_back_wakes_an_idle_worker(fresh_schema: tuple[str, str]) -> None:
    store = PostgresStore(fresh_schema[1])
    other = PostgresStore(fresh_schema[1])
    try:
        (job_id,) = enqueue(other, new_job())
        r = reserve_one(other)
        woke_within(
            store,
            lambda: other.end_attempt(
                Ending(job_id=job_id, token=r.token, outcome="interrupted", error="SIGTERM")
            ),
        )
        r = reserve_one(other)
        other.end_attempt(
            Ending(job_id=job_id, token=r.token, outcome="failed", error="x", permanent=True)
        )
        woke_within(store, lambda: other.retry_job(job_id))
        assert job(store, job_id).state == "queued"
    finally:
        store.close()
        other.close()


def test_a_wake_up_for_another_queue_does_not_end_the_wait(
    fresh_schema: tuple[str, str],
) -> None:
    store = PostgresStore(fresh_schema[1])
    try:
        store.wait_for_work(queues=["mail"], timeout=0.1)  # subscribe
        enqueue(store, new_job(queue="other"))
        t = time.monotonic()
        store.wait_for_work(queues=["mail"], timeout=0.5)
        assert time.monotonic() - t >= 0.4
    finally:
        store.close()


def test_an_outage_raises_store_unavailable_then_the_store_reconnects(
    throwaway_postgres: ThrowawayPostgres,
) -> None:
    store = PostgresStore(throwaway_postgres.url)
    try:
        (job_id,) = enqueue(store, new_job(policy=Policy(tries=3, backoff=0)))
        r = reserve_one(store, lease=60)
        store.wait_for_work(queues=["default"], timeout=0.1)  # a LISTEN connection too
        throwaway_postgres.stop()
        with pytest.raises(StoreUnavailable):
            store.heartbeat(worker=W1, leases=[(job_id, r.token)], lease=60)
        with pytest.raises(StoreUnavailable):
            store.wait_for_work(queues=["default"], timeout=1)
        throwaway_postgres.start()  # same port, same data directory
        assert wait_until(
            lambda: (
                _try(lambda: store.heartbeat(worker=W1, leases=[(job_id, r.token)], lease=60).lost)
                == []
            ),
            timeout=20,
            what="the store to reconnect",
        )
        assert store.end_attempt(Ending(job_id=job_id, token=r.token))[0].accepted
        assert job(store, job_id).state == "succeeded"
        store.wait_for_work(queues=["default"], timeout=0.1)  # listens again
    finally:
        store.close()


def _try(call: object) -> object:
    assert callable(call)
    try:
        return call()
    except StoreUnavailable:
        return None


def test_a_rescue_whose_attempt_row_is_gone_still_rescues_and_says_whose_lease_it_was(
    store: PostgresStore, kit: PostgresKit
) -> None:
    job_id = enqueue(store, new_job())[0]
    reserve_one(store, lease=0.2)
    with psycopg.connect(kit.conninfo, autocommit=True) as conn:  # damaged data: no attempt row
        conn.execute(f"DELETE FROM {kit.app_table('tenure_attempts')} WHERE job_id = %s", (job_id,))
    rescued = wait_until(lambda: store.sweep(prune=False).rescued, what="a rescue")
    assert [(r.job_id, r.result.state) for r in rescued] == [(job_id, "queued")]
    error = job(store, job_id).last_error or ""
    assert error.startswith(f"worker {W1.id} (pid 0 on unknown host) stopped heartbeating"), error
