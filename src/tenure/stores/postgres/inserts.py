"""The one insert every PostgreSQL enqueue path shares (a dispatch, a batch, a chain's next
link, a callback): all the jobs of a call in one statement, one round trip."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tenure.core.records import NewJob
from tenure.stores.postgres.database import Cursor, Database, in_schema

NOW = "date_part('epoch', now())"  # epoch seconds as double precision, the server's clock


def insert_jobs(
    db: Database, cur: Cursor, jobs: Sequence[NewJob], *, skip_existing: bool = False
) -> int:
    """Insert in one statement (one round trip) and NOTIFY every queue that got a job due now;
    the NOTIFY leaves with the commit. Returns how many rows were inserted."""
    if not jobs:
        return 0
    row = cur.execute(*insert_statement(db, jobs, skip_existing=skip_existing)).fetchone()
    return int(row["added"]) if row else 0


def insert_statement(
    db: Database, jobs: Sequence[NewJob], *, skip_existing: bool
) -> tuple[str, tuple[Any, ...]]:
    """The insert of `jobs` (insert_jobs) and its parameters, for the caller to run."""
    return in_schema(db.quoted_schema, _INSERT[skip_existing]), (
        [j.id for j in jobs],
        [j.name for j in jobs],
        [j.queue for j in jobs],
        [j.payload for j in jobs],
        [j.policy.text for j in jobs],
        [float(j.delay) for j in jobs],
        [j.batch_id for j in jobs],
        [j.guards.overlap_key for j in jobs],
        [_seconds(j.guards.overlap_delay) for j in jobs],
        [j.guards.rate_key for j in jobs],
        [j.guards.rate_limit for j in jobs],
        [_seconds(j.guards.rate_window) for j in jobs],
        [_seconds(j.keep.succeeded) for j in jobs],
        [_seconds(j.keep.failed) for j in jobs],
        [j.priority for j in jobs],
        [j.chain for j in jobs],
        [j.guards.concurrency_key for j in jobs],
        [j.guards.concurrency_limit for j in jobs],
        [j.guards.debounce_key for j in jobs],
        db.channel,
    )


def _insert_text(conflict: str) -> str:
    return (
        f"WITH clock AS (SELECT {NOW} AS now),"
        " ins AS (INSERT INTO {s}.tenure_jobs (id, name, queue, payload, state,"
        " policy, created_at, run_at, batch_id, overlap_key, overlap_delay, rate_key,"
        " rate_limit, rate_window, keep_succeeded, keep_failed, priority, chain,"
        " concurrency_key, concurrency_limit, debounce_key)"
        " SELECT j.id, j.name, j.queue, j.payload, 'queued', j.policy, clock.now,"
        " clock.now + greatest(j.delay, 0), j.batch_id, j.overlap_key, j.overlap_delay,"
        " j.rate_key, j.rate_limit, j.rate_window, j.keep_succeeded, j.keep_failed,"
        " j.priority, j.chain, j.concurrency_key, j.concurrency_limit, j.debounce_key"
        " FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[],"
        " %s::float8[], %s::text[], %s::text[], %s::float8[], %s::text[], %s::int[],"
        " %s::float8[], %s::float8[], %s::float8[], %s::int[], %s::text[], %s::text[],"
        " %s::int[], %s::text[]) WITH ORDINALITY"
        " AS j(id, name, queue, payload, policy, delay, batch_id, overlap_key,"
        " overlap_delay, rate_key, rate_limit, rate_window, keep_succeeded, keep_failed,"
        " priority, chain, concurrency_key, concurrency_limit, debounce_key, ord),"
        " clock"
        f" ORDER BY j.ord{conflict} RETURNING queue, run_at, created_at),"
        # a SELECT in WITH runs only if read: MATERIALIZED and counted below, so it does
        " woke AS MATERIALIZED (SELECT pg_notify(%s, d.queue) FROM"
        " (SELECT DISTINCT queue FROM ins WHERE run_at <= created_at) d)"
        " SELECT (SELECT count(*) FROM ins) AS added, (SELECT count(*) FROM woke) AS woke"
    )


# the insert, with `{s}` for the schema: put in a store's schema by in_schema (cached)
_INSERT = {False: _insert_text(""), True: _insert_text(" ON CONFLICT (id) DO NOTHING")}


def _seconds(value: float | None) -> float | None:
    # psycopg refuses a list mixing int and float (overlap_delay=30 beside 0.5): one type.
    return None if value is None else float(value)
