"""PostgreSQL's job counters (issue 9): per-backend rows kept by triggers, folded when their
backend is gone, backfilled by the migration that added them, always equal to a GROUP BY."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.helpers import W1, enqueue, new_job, reserve_one, wait_until
from conformance.test_counts import (
    assert_counts_agree,
    one_in_each_state,
    run_mixed_workload,
    zeros,
)
from tenure.core.records import Ending
from tenure.stores import Store, open_store

ByQueueAndState = dict[tuple[str, str], int]


def postgres_group_by(store: Store) -> tuple[ByQueueAndState, ByQueueAndState]:
    """PostgreSQL only: (the jobs table counted with GROUP BY, the trigger-kept counters)."""
    db: Any = store.db  # type: ignore[attr-defined]
    with db.cursor() as cur:
        jobs = cur.execute(
            db.q("SELECT queue, state, count(*) AS n FROM {s}.tenure_jobs GROUP BY 1, 2")
        ).fetchall()
        kept = cur.execute(
            db.q(
                "SELECT queue, state, sum(n) AS n FROM {s}.tenure_job_counts GROUP BY 1, 2"
                " HAVING sum(n) <> 0"
            )
        ).fetchall()
    return (
        {(r["queue"], r["state"]): int(r["n"]) for r in jobs},
        {(r["queue"], r["state"]): int(r["n"]) for r in kept},
    )


def test_folding_the_rows_of_gone_backends_changes_no_count(store: Store, store_url: str) -> None:
    for i in range(6):  # six clients, six backends, each leaving counter rows of its own
        other = open_store(store_url)
        enqueue(other, *[new_job(queue=f"fold{i % 2}") for _ in range(5)])
        other.close()
    before = store.queue_counts()
    db: Any = store.db  # type: ignore[attr-defined]

    def shards() -> int:
        with db.cursor() as cur:
            row = cur.execute(db.q("SELECT count(*) AS n FROM {s}.tenure_job_counts")).fetchone()
        return int(row["n"])

    assert shards() >= 6

    def folded() -> bool:
        # a closed client's backend leaves pg_stat_activity a moment after the socket closes;
        # until then its rows are a live backend's, which a fold leaves alone
        store._fold_counts()  # type: ignore[attr-defined]
        return shards() == 2  # one row per (queue, state), in shard 0

    wait_until(folded, what="the closed clients' backends to exit and their rows to fold")
    assert before == {"fold0": zeros(queued=15), "fold1": zeros(queued=15)}
    assert store.queue_counts() == before


def test_the_upgrade_backfills_the_counters_from_the_jobs_present(
    request: pytest.FixtureRequest,
) -> None:
    """0004 on a populated schema: the counters start from the jobs already there."""
    import psycopg

    from backends.postgres.kit import upgraded_from

    fill = (
        "INSERT INTO {s}.tenure_jobs (id, name, queue, payload, state, policy, created_at,"
        " run_at) SELECT 'old-' || i, 'n', 'q' || (i %% 2), '{}',"
        " CASE WHEN i %% 3 = 0 THEN 'succeeded' ELSE 'queued' END, %s, 0,"
        " CASE WHEN i %% 5 = 0 THEN 1e12 ELSE 0 END FROM generate_series(1, 300) i"
    )
    base: str = request.getfixturevalue("postgres_url")
    with upgraded_from(base, 3, fill, (new_job().policy.to_json(),)) as store:
        assert_counts_agree(store)
        jobs, kept = postgres_group_by(store)
        assert kept == jobs and sum(jobs.values()) == 300
        # and from there on the triggers keep them
        r = reserve_one(store, queues=["q1"], worker=W1)
        store.end_attempt(Ending(job_id=r.job_id, token=r.token))
        assert_counts_agree(store)
        with psycopg.connect(store.db.conninfo, autocommit=True) as conn:
            conn.execute(f"TRUNCATE {store.db.quoted_schema}.tenure_jobs CASCADE")
        assert store.queue_counts() == {}


def test_the_counters_agree_with_a_group_by_after_a_concurrent_mixed_workload(
    store: Store, store_url: str
) -> None:
    run_mixed_workload(store, store_url)
    one_in_each_state(store)
    assert_counts_agree(store)
    jobs, kept = postgres_group_by(store)
    assert kept == jobs
