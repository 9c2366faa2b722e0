"""The worker's hot path keeps its plan whatever statistics PostgreSQL holds (issue 17).

Autovacuum ANALYZEs tenure_jobs whenever enough rows changed. Right after a drain its
statistics say almost no job is queued; the next burst then queues thousands. A pick planned
from those statistics walked every queued row and sorted them for each job claimed (a third
of the drain rate lost, measured in bench/). These tests put the table in each state and read
the plan of the pick: an ordered index range, no sort, whatever the statistics say.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from psycopg import sql

from conformance.helpers import W1, enqueue, new_job
from tenure.core.records import Ending
from tenure.stores import Store
from tenure.stores.postgres import claims, limited

pytestmark = pytest.mark.slow


def analyze(store: Store) -> None:
    db: Any = store.db  # type: ignore[attr-defined]
    with db.connection() as conn:
        conn.execute(db.q("ANALYZE {s}.tenure_jobs"))
        conn.execute(db.q("ANALYZE {s}.tenure_attempts"))


PARAMS: dict[str, Any] = {
    "id": "none",
    "token": 0,
    "queue": "default",
    "seen": [],
    "limit": 1,
    "lease": 30.0,
    "worker": W1.id,
    "host": W1.host,
    "pid": W1.pid,
    "result": None,
    "channel": "tenure_plans_test",
}
TYPES = {"id": "text", "token": "int", "queue": "text", "seen": "text[]", "limit": "int"}
TYPES |= {"lease": "float8", "worker": "text", "host": "text", "pid": "int", "result": "text"}
TYPES |= {"channel": "text"}


def plans(store: Store, statement: str) -> tuple[str, str]:
    """EXPLAIN of `statement` as planned for these values, and as the generic plan a
    prepared statement falls back to (the worker's statements are prepared)."""
    db: Any = store.db  # type: ignore[attr-defined]
    text = db.q(statement)
    names = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", text)))
    numbered = re.sub(r"%\((\w+)\)s", lambda m: f"${names.index(m.group(1)) + 1}", text)
    with db.connection() as conn:
        custom = conn.execute("EXPLAIN " + text, PARAMS).fetchall()
        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute(f"PREPARE pick({', '.join(TYPES[n] for n in names)}) AS {numbered}")
        values = sql.SQL(", ").join(sql.Literal(PARAMS[n]) for n in names).as_string(conn)
        generic = conn.execute(f"EXPLAIN EXECUTE pick({values})").fetchall()
        conn.execute("DEALLOCATE pick")  # prepared on the session, which the pool keeps
        conn.execute("RESET plan_cache_mode")
        conn.rollback()
    return tuple("\n".join(str(next(iter(r.values()))) for r in rows) for rows in (custom, generic))  # type: ignore[return-value]


def enqueue_in_chunks(store: Store, jobs: int) -> None:
    for _ in range(0, jobs, 500):
        enqueue(store, *[new_job() for _ in range(500)])


def nearly_drained(store: Store, jobs: int) -> None:
    """A table as a drain leaves it, by the worker's own calls: all but two jobs done."""
    enqueue_in_chunks(store, jobs)
    (res,) = store.reserve(queues=["default"], worker=W1, lease=30)
    for _ in range(jobs - 3):
        assert res is not None
        _, res = store.end_attempt(
            Ending(job_id=res.job_id, token=res.token), queues=["default"], worker=W1, lease=30
        )


def assert_pick_is_an_index_range(store: Store) -> None:
    for statement in (claims.CLAIM, claims.CLAIM_ONE, claims.COMPLETE_AND_CLAIM):
        for plan in plans(store, statement):
            assert "tenure_jobs_ready" in plan, plan
            assert "tenure_jobs_listing" not in plan, plan
            assert "Seq Scan on tenure_jobs" not in plan, plan
            # attempt rows are written by upserts (claims.OPEN_ATTEMPT), never found by a scan
            assert "Seq Scan on tenure_attempts" not in plan, plan
            # The sorts allowed order at most `limit` rows: the claimed rows of the reply, `c`,
            # and the picked rows of a concurrency key, oldest first, for its slots (`p`).
            sorts = [line for line in plan.splitlines() if "Sort Key:" in line]
            assert all("c.run_at" in line or "p.ckey" in line for line in sorts), plan


def test_the_pick_is_an_index_range_after_an_analyze_of_a_drained_table(store: Store) -> None:
    nearly_drained(store, 5_000)
    analyze(store)  # the statistics a drain leaves: (nearly) every job succeeded
    enqueue_in_chunks(store, 5_000)
    assert_pick_is_an_index_range(store)


def test_the_pick_is_an_index_range_after_an_analyze_of_a_burst(store: Store) -> None:
    enqueue_in_chunks(store, 5_000)
    analyze(store)  # every job queued, no attempt yet
    assert_pick_is_an_index_range(store)


def test_a_busy_workers_claim_is_by_primary_key_when_planned_on_a_new_install(
    store: Store,
) -> None:
    """A worker's first statements on a new install are planned on a nearly empty table, and
    a prepared statement keeps that generic plan while the table grows: the claim of one job
    (the busy worker's) must still find its row by primary key, not by a Seq Scan."""
    enqueue(store, *[new_job() for _ in range(3)])
    for statement in (claims.CLAIM_ONE, claims.COMPLETE_AND_CLAIM, limited.LIMITED_END_AND_CLAIM):
        for plan in plans(store, statement):
            assert "Seq Scan on tenure_jobs" not in plan, plan
            assert "Seq Scan on tenure_attempts" not in plan, plan
