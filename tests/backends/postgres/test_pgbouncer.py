"""PostgreSQL behind PgBouncer in transaction pooling: what needs a session is given one.

The whole conformance suite also runs this way (its `pgbouncer` backend); these tests pin the
URL options and what happens without them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from conformance.helpers import counts
from tenure.core.errors import ConfigError
from tenure.core.records import NewJob
from tenure.core.retry import Policy
from tenure.stores import open_store
from tenure.stores.postgres.database import parse_url, pooler_settings

from servers import isolated_store_url


@pytest.fixture
def bounced_url(pgbouncer_url: str, tmp_path: Path) -> Iterator[str]:
    with isolated_store_url("postgres", pgbouncer_url, tmp_path) as url:
        yield url


def test_the_pooler_options_are_tenures_own_and_checked() -> None:
    url = "postgresql://u@pool:6432/app?pooler=transaction&listen_url=postgresql://u@db/app"
    assert parse_url(url) == ("postgresql://u@pool:6432/app", "tenure")
    assert pooler_settings(url) == (True, "postgresql://u@db/app")
    assert pooler_settings("postgresql://u@db/app") == (False, None)
    with pytest.raises(ConfigError, match="pooler: expected transaction, session or none"):
        pooler_settings("postgresql://u@db/app?pooler=yes")
    with pytest.raises(ConfigError, match="listen_url: expected a postgresql:// URL"):
        pooler_settings("postgresql://u@db/app?listen_url=redis://x")


def test_without_pooler_prepared_statements_break_behind_pgbouncer(bounced_url: str) -> None:
    """Why `pooler=transaction` exists: psycopg prepares a statement after five runs, and the
    next transaction on another server connection does not have it."""
    with (
        psycopg.connect(bounced_url.split("?")[0], autocommit=True) as a,
        psycopg.connect(bounced_url.split("?")[0], autocommit=True) as b,
        pytest.raises(psycopg.Error, match="prepared statement"),
    ):
        for _ in range(20):
            a.execute("SELECT 1")
            b.execute("SELECT 2")


def test_with_pooler_the_store_runs_and_idle_waits_poll(bounced_url: str) -> None:
    store = open_store(f"{bounced_url}&pooler=transaction")
    try:
        store.migrate()
        for i in range(20):  # past psycopg's prepare threshold, on shared server connections
            store.enqueue_many(
                [NewJob(id=f"j{i}", name="n", queue="q", payload="[]", policy=Policy())]
            )
        assert counts(store)["queued"] == 20
        # no listen_url: a bounded poll, the caller's timeout
        started = time.monotonic()
        store.wait_for_work(queues=["q"], timeout=0.5)
        assert 0.4 <= time.monotonic() - started < 5
    finally:
        store.close()


def test_listen_url_wakes_a_waiting_worker_through_the_pooler(
    bounced_url: str, postgres_url: str
) -> None:
    url = f"{bounced_url}&pooler=transaction&listen_url={postgres_url}"
    waiting, sender = open_store(url), open_store(url)
    try:
        waiting.migrate()
        waiting.wait_for_work(queues=["q"], timeout=0.1)  # LISTEN is in place after this
        woke: list[float] = []

        def wait() -> None:
            started = time.monotonic()
            waiting.wait_for_work(queues=["q"], timeout=30)
            woke.append(time.monotonic() - started)

        thread = threading.Thread(target=wait)
        thread.start()
        # not needed for correctness: a NOTIFY sent before the waiter blocks stays queued on
        # its LISTEN connection and still wakes it
        time.sleep(0.2)
        sender.enqueue_many([NewJob(id="w1", name="n", queue="q", payload="[]", policy=Policy())])
        thread.join(timeout=35)
        assert woke and woke[0] < 10
    finally:
        waiting.close()
        sender.close()
