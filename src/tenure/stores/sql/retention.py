"""Pruning on the SQL stores (see tenure.core.retention), written once for SQLite and PostgreSQL:
one bounded chunk per call, inside the caller's one transaction.

Each job row carries its own retention (`keep_succeeded`, `keep_failed`, seconds; NULL keeps
it forever), so "due" is `finished_at + keep < now`: a range of a partial expression index
(migrations: tenure_jobs_prune_*) cut at `limit`, never a scan of the finished jobs. Batch
members are not in that index: they go with their settled batch, a chunk at a time, and the
batch row once its last member has gone. Two sweepers at once take disjoint chunks: SQLite
has one writer; PostgreSQL locks the chosen rows FOR UPDATE SKIP LOCKED, so the second skips
what the first holds, and every delete re-checks the row is still finished (a `tenure failed
retry` may have won).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tenure.core.retention import Pruned
from tenure.core.states import FAIR_BEFORE
from tenure.stores.sql.dialect import Cursor, Dialect, marks

FINAL_SQL = "('succeeded', 'failed', 'cancelled')"
# The state test of a delete by key, kept off every index: SQLite's planner (no statistics)
# takes `state IN (...)` to the (state, lease_expires_at) index once the key list passes ten,
# and walked every finished row per chunk (300 ms a chunk at 300,000 kept jobs, so a worker
# pruned a few hundred jobs a second). Concatenation leaves the key to do the lookup.
UNINDEXED_STATE = "state || ''"


@dataclass(frozen=True)
class Due:
    """One kind of prunable row: the table, its key, and when a row is due."""

    table: str
    key: str
    where: str


# A batch member goes with its batch, not here; the latest run of a periodic job is kept for
# `tenure periodic list`.
_KEPT = (
    " AND j.batch_id IS NULL"
    " AND NOT EXISTS (SELECT 1 FROM {s}.tenure_periodic p WHERE p.last_job_id = j.id)"
)
JOBS = (
    Due(
        "{s}.tenure_jobs j",
        "j.id",
        "j.state = 'succeeded' AND j.finished_at + j.keep_succeeded < %s" + _KEPT,
    ),
    Due(
        "{s}.tenure_jobs j",
        "j.id",
        "j.state IN ('failed', 'cancelled') AND j.finished_at + j.keep_failed < %s" + _KEPT,
    ),
)
BATCHES = (
    Due(
        "{s}.tenure_batches b",
        "b.id",
        "b.finished AND b.state = 'succeeded' AND b.finished_at + b.keep_succeeded < %s",
    ),
    Due(
        "{s}.tenure_batches b",
        "b.id",
        "b.finished AND b.state <> 'succeeded' AND b.finished_at + b.keep_failed < %s",
    ),
)


def prune(d: Dialect, cur: Cursor, now: float, limit: int) -> Pruned:
    """Delete one chunk of everything due, at most `limit` of each kind (jobs and batch members
    together); call inside a write transaction."""
    jobs = _chosen(d, cur, JOBS, now, limit)
    batches = _chosen(d, cur, BATCHES, now, limit)
    members: list[str] = []
    if batches and len(jobs) < limit:
        rows = cur.execute(
            d.q(
                f"SELECT id FROM {{s}}.tenure_jobs WHERE batch_id IN ({marks(batches)})"
                f" AND state IN {FINAL_SQL} LIMIT %s{_skip_locked(d)}"
            ),
            (*batches, limit - len(jobs)),
        ).fetchall()
        members = [r["id"] for r in rows]
    ids = jobs + members
    attempts = effects = guards = deleted = gone = 0
    if ids:
        ins = marks(ids)
        attempts = _delete(d, cur, f"tenure_attempts WHERE job_id IN ({ins})", ids)
        effects = _delete(d, cur, f"tenure_once WHERE job_id IN ({ins})", ids)
        guards = _delete(d, cur, f"tenure_unique WHERE job_id IN ({ins})", ids)
        deleted = _delete(
            d, cur, f"tenure_jobs WHERE id IN ({ins}) AND {UNINDEXED_STATE} IN {FINAL_SQL}", ids
        )
    if batches:
        # a batch goes once the last of its members has gone
        gone = _delete(
            d,
            cur,
            f"tenure_batches WHERE id IN ({marks(batches)}) AND finished AND NOT EXISTS"
            " (SELECT 1 FROM {s}.tenure_jobs m WHERE m.batch_id = tenure_batches.id)",
            batches,
        )
    row = _row_ref(d)
    expired = 0
    for table in ("tenure_unique", "tenure_rate_starts"):
        expired += _delete(
            d,
            cur,
            f"{table} WHERE {row} IN (SELECT {row} FROM {{s}}.{table} WHERE expires_at <= %s"
            f" LIMIT %s{_skip_locked(d)})",
            [now, limit],
        )
    expired += _prune_fair_turns(d, cur, limit)
    if d.slot_rows:
        expired += _delete(
            d,
            cur,
            f"tenure_concurrency WHERE {_UNUSED_SLOTS} AND key IN (SELECT key FROM"
            f" {{s}}.tenure_concurrency WHERE {_UNUSED_SLOTS} LIMIT %s{_skip_locked(d)})",
            [limit],
        )
    return Pruned(
        jobs=deleted,
        attempts=attempts,
        effects=effects,
        batches=gone,
        guards=guards + expired,
        more=len(ids) >= limit or len(batches) > gone or expired >= limit,
    )


def count_due(d: Dialect, cur: Cursor, now: float) -> Pruned:
    """What `prune` would delete if it had no limit: counted, nothing changed."""
    chosen = [f"SELECT {due.key} FROM {due.table} WHERE {due.where}" for due in JOBS]
    chosen += [
        f"SELECT m.id FROM {{s}}.tenure_jobs m WHERE m.state IN {FINAL_SQL} AND m.batch_id IN"
        f" (SELECT {due.key} FROM {due.table} WHERE {due.where})"
        for due in BATCHES
    ]
    jobs = attempts = effects = guards = 0
    for ids in chosen:
        jobs += _count(d, cur, f"FROM ({ids}) AS due", now)
        attempts += _count(d, cur, f"FROM {{s}}.tenure_attempts WHERE job_id IN ({ids})", now)
        effects += _count(d, cur, f"FROM {{s}}.tenure_once WHERE job_id IN ({ids})", now)
        guards += _count(d, cur, f"FROM {{s}}.tenure_unique WHERE job_id IN ({ids})", now)
    batches = sum(_count(d, cur, f"FROM {due.table} WHERE {due.where}", now) for due in BATCHES)
    guards += _count(d, cur, "FROM {s}.tenure_unique WHERE expires_at <= %s", now)
    guards += _count(d, cur, "FROM {s}.tenure_rate_starts WHERE expires_at <= %s", now)
    guards += sum(
        len(_unused_turns(d, cur, queue, largest, None)) for queue, largest in _fair_queues(d, cur)
    )
    if d.slot_rows:
        guards += _count(d, cur, f"FROM {{s}}.tenure_concurrency WHERE {_UNUSED_SLOTS}", now)
    return Pruned(jobs=jobs, attempts=attempts, effects=effects, batches=batches, guards=guards)


# A concurrency key's slot row (PostgreSQL) with nothing running and no live job of the key:
# a claim that finds no row leaves the job to the slow path, which makes it again. The delete
# checks it again on the row as it is then (a claim taking a slot meanwhile keeps it).
_UNUSED_SLOTS = (
    "running = 0 AND NOT EXISTS (SELECT 1 FROM {s}.tenure_jobs j"
    " WHERE j.concurrency_key = tenure_concurrency.key AND j.state IN ('queued', 'running'))"
)


def _prune_fair_turns(d: Dialect, cur: Cursor, limit: int) -> int:
    """Delete up to `limit` fair keys' turns (tenure_fair 'k:' rows) at or before their
    queue's virtual now: the head of its fair jobs, else the largest turn handed out. A
    dispatch of such a key starts at that virtual now anyway, which never goes back (no start
    is placed before it), so the row changes nothing. The queue's own row ('') stays."""
    deleted = 0
    for queue, largest in _fair_queues(d, cur):
        rows = _unused_turns(d, cur, queue, largest, limit - deleted)
        if rows:
            deleted += _delete(
                d,
                cur,
                f"tenure_fair WHERE queue = %s AND key IN ({marks(rows)}) AND next_vt <= %s",
                [queue, *rows, _virtual_now(d, cur, queue, largest)],
            )
        if deleted >= limit:
            break
    return deleted


def _fair_queues(d: Dialect, cur: Cursor) -> list[tuple[str, float]]:
    rows = cur.execute(d.q("SELECT queue, next_vt FROM {s}.tenure_fair WHERE key = ''"))
    return [(r["queue"], float(r["next_vt"])) for r in rows.fetchall()]


def _virtual_now(d: Dialect, cur: Cursor, queue: str, largest: float) -> float:
    head = cur.execute(d.q(d.fair_head), (queue, FAIR_BEFORE)).fetchone()["head"]
    return largest if head is None else float(head)


def _unused_turns(
    d: Dialect, cur: Cursor, queue: str, largest: float, limit: int | None
) -> list[str]:
    """The keys of `queue`'s turns that nothing needs (the range of tenure_fair_turns)."""
    cut = "" if limit is None else f" LIMIT {int(limit)}"
    rows = cur.execute(
        d.q(
            "SELECT key FROM {s}.tenure_fair WHERE queue = %s AND next_vt <= %s"
            f" AND key <> ''{cut}"
        ),
        (queue, _virtual_now(d, cur, queue, largest)),
    ).fetchall()
    return [r["key"] for r in rows]


def _chosen(d: Dialect, cur: Cursor, kinds: tuple[Due, ...], now: float, limit: int) -> list[str]:
    """Up to `limit` due rows' keys, oldest due first, locked for this transaction."""
    out: list[str] = []
    for due in kinds:
        want = limit - len(out)
        if want <= 0:
            break
        alias = due.table.rsplit(" ", 1)[-1]
        lock = f"{d.lock_rows} OF {alias} SKIP LOCKED" if d.lock_rows else ""
        rows = cur.execute(
            d.q(f"SELECT {due.key} AS k FROM {due.table} WHERE {due.where} LIMIT %s{lock}"),
            (now, want),
        ).fetchall()
        out += [r["k"] for r in rows]
    return out


def _delete(d: Dialect, cur: Cursor, rest: str, params: Sequence[object]) -> int:
    return int(cur.execute(d.q("DELETE FROM {s}." + rest), tuple(params)).rowcount)


def _count(d: Dialect, cur: Cursor, rest: str, now: float) -> int:
    sql = "SELECT count(*) AS n " + rest
    return int(cur.execute(d.q(sql), (now,) * sql.count("%s")).fetchone()["n"])


def _row_ref(d: Dialect) -> str:
    # a table without a key of its own (rate starts) is cut at `limit` by its row address
    return "ctid" if d.lock_rows else "rowid"


def _skip_locked(d: Dialect) -> str:
    return f"{d.lock_rows} SKIP LOCKED" if d.lock_rows else ""
