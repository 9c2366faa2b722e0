"""PostgreSQL-only parts of the guards and of enqueueing in the application's transaction:
SQLAlchemy's proxy connection, autocommit refused, and migration 0003 on a populated schema."""

from __future__ import annotations

from typing import Any

import pytest

from backends.postgres.kit import PostgresKit
from conformance.helpers import W1, job, new_job
from tenure.core.errors import ConfigError
from tenure.core.records import Ending
from tenure.stores import Store


def test_enqueue_takes_the_driver_connection_of_a_sqlalchemy_proxy(
    store: Store, kit: PostgresKit
) -> None:
    class DBAPIProxy:  # what SQLAlchemy's Connection.connection is: the driver's inside
        def __init__(self, inner: Any) -> None:
            self.driver_connection = inner

    conn = kit.app_connection()
    try:
        j = new_job()
        assert store.enqueue_many([j], conn=DBAPIProxy(conn)) == [j.id]
        conn.commit()
        conn.autocommit = True
        with pytest.raises(ConfigError, match="autocommit"):
            store.enqueue_many([new_job()], conn=conn)
    finally:
        conn.close()
    assert job(store, j.id).state == "queued"


def test_upgrading_a_version_2_schema_with_jobs_in_it(request: pytest.FixtureRequest) -> None:
    """0003 adds the guard columns and tables to a populated schema; old jobs run unguarded."""
    from backends.postgres.kit import upgraded_from

    fill = (
        "INSERT INTO {s}.tenure_jobs (id, name, queue, payload, state, policy, created_at,"
        " run_at) VALUES ('old-job', 'n', 'default', '{}', 'queued', %s, 0, 0)"
    )
    base: str = request.getfixturevalue("postgres_url")
    with upgraded_from(base, 2, fill, (new_job().policy.to_json(),)) as store:
        r = store.reserve(queues=["default"], worker=W1, lease=30)[0]
        assert r.job_id == "old-job"
        assert store.claim_once(job_id="old-job", token=r.token, key="k")
        assert store.end_attempt(Ending(job_id="old-job", token=r.token))[0].accepted
        assert [e.key for e in job(store, "old-job").effects] == ["k"]
