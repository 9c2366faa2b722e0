"""The one insert every enqueue path on PostgreSQL shares."""

from __future__ import annotations

from collections.abc import Sequence

from tenure.stores.base import NewJob
from tenure.stores.postgres.database import Cursor, Database

NOW = "date_part('epoch', now())"  # epoch seconds as double precision, the server's clock


def insert_jobs(
    db: Database, cur: Cursor, jobs: Sequence[NewJob], *, skip_existing: bool = False
) -> int:
    """Insert in one statement (one round trip) and NOTIFY every queue that got a job due now;
    the NOTIFY leaves with the commit. Returns how many rows were inserted."""
    if not jobs:
        return 0
    conflict = " ON CONFLICT (id) DO NOTHING" if skip_existing else ""
    row = cur.execute(
        db.q(
            f"WITH clock AS (SELECT {NOW} AS now),"
            " ins AS (INSERT INTO {s}.tenure_jobs (id, name, queue, payload, state,"
            " policy, created_at, run_at, batch_id, overlap_key, overlap_delay, rate_key,"
            " rate_limit, rate_window, keep_succeeded, keep_failed, priority, chain)"
            " SELECT j.id, j.name, j.queue, j.payload, 'queued', j.policy, clock.now,"
            " clock.now + greatest(j.delay, 0), j.batch_id, j.overlap_key, j.overlap_delay,"
            " j.rate_key, j.rate_limit, j.rate_window, j.keep_succeeded, j.keep_failed,"
            " j.priority, j.chain"
            " FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[],"
            " %s::float8[], %s::text[], %s::text[], %s::float8[], %s::text[], %s::int[],"
            " %s::float8[], %s::float8[], %s::float8[], %s::int[], %s::text[]) WITH ORDINALITY"
            " AS j(id, name, queue, payload, policy, delay, batch_id, overlap_key,"
            " overlap_delay, rate_key, rate_limit, rate_window, keep_succeeded, keep_failed,"
            " priority, chain, ord),"
            " clock"
            f" ORDER BY j.ord{conflict} RETURNING queue, run_at, created_at),"
            # a SELECT in WITH runs only if read: MATERIALIZED and counted below, so it does
            " woke AS MATERIALIZED (SELECT pg_notify(%s, d.queue) FROM"
            " (SELECT DISTINCT queue FROM ins WHERE run_at <= created_at) d)"
            " SELECT (SELECT count(*) FROM ins) AS added, (SELECT count(*) FROM woke) AS woke"
        ),
        (
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
            db.channel,
        ),
    ).fetchone()
    return int(row["added"]) if row else 0


def _seconds(value: float | None) -> float | None:
    # psycopg refuses a list mixing int and float (overlap_delay=30 beside 0.5): one type.
    return None if value is None else float(value)
