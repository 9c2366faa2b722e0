"""The worker registry on the SQL stores, written once for SQLite and PostgreSQL: one row per
worker id, its times stamped by the server's clock (never a worker's), and the worker's end
recorded on the same row by the same verb."""

from __future__ import annotations

from tenure.core.records import WorkerRecord
from tenure.stores.sql.dialect import Cursor, Dialect


def register(d: Dialect, cur: Cursor, record: WorkerRecord, now: float | None = None) -> None:
    """Store.heartbeat's write of a worker's row. `now` None reads the server's clock in the
    statement itself; SQLite passes its own `now`, which tenure.testing may freeze."""
    clock, at = (d.clock_sql, ()) if now is None else ("%s", (now,))
    stamp = "stopped_at" if record.stopped_at is not None else "stopping_at"
    if record.stopped_at is not None or record.stopping_at is not None:
        cur.execute(
            d.q(f"UPDATE {{s}}.tenure_workers SET {stamp} = {clock} WHERE id = %s"),
            (*at, record.id),
        )
        return
    cur.execute(
        d.q(
            "INSERT INTO {s}.tenure_workers (id, host, pid, queues, concurrency, started_at,"
            f" last_seen_at, known) VALUES (%s, %s, %s, %s, %s, {clock}, {clock}, %s)"
            " ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
            " queues = excluded.queues, concurrency = excluded.concurrency,"
            " started_at = excluded.started_at, last_seen_at = excluded.last_seen_at,"
            " stopped_at = NULL, stopping_at = NULL, known = excluded.known"
        ),
        (record.id, record.host, record.pid, d.text_list(record.queues), record.concurrency)
        + at * 2
        + (None if record.known is None else d.text_list(record.known),),
    )


def list_all(d: Dialect, cur: Cursor) -> list[WorkerRecord]:
    """Every registered worker, stopped ones included, the latest started first."""
    rows = cur.execute(d.q("SELECT * FROM {s}.tenure_workers ORDER BY started_at DESC")).fetchall()
    return [
        WorkerRecord(
            id=r["id"],
            host=r["host"],
            pid=r["pid"],
            queues=d.read_text_list(r["queues"]),
            concurrency=r["concurrency"],
            started_at=r["started_at"],
            last_seen_at=r["last_seen_at"],
            stopped_at=r["stopped_at"],
            stopping_at=r["stopping_at"],
            known=None if r["known"] is None else d.read_text_list(r["known"]),
        )
        for r in rows
    ]
