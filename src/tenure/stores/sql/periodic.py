"""Periodic jobs on the SQL stores, written once for SQLite and PostgreSQL: the due time a
periodic job was last claimed for, moved forward and the run enqueued in the caller's one
transaction (see Store.claim_periodic).

Two workers claiming one due time meet on the row: the first INSERT of a name wins (ON
CONFLICT DO NOTHING), and moving `last_due` forward is one UPDATE whose WHERE re-reads the row
once a concurrent writer's lock is gone (PostgreSQL's READ COMMITTED; SQLite has one writer),
so exactly one of them sees `last_due < due` and enqueues.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tenure.core.records import NewJob, PeriodicClaim, PeriodicRecord
from tenure.stores.sql.dialect import Cursor, Dialect

Enqueue = Callable[[Sequence[NewJob]], list[str]]


def claim(
    d: Dialect, cur: Cursor, name: str, due: float, job: NewJob | None, enqueue: Enqueue
) -> PeriodicClaim:
    first = cur.execute(
        d.q(
            "INSERT INTO {s}.tenure_periodic (name, last_due) VALUES (%s, %s)"
            " ON CONFLICT (name) DO NOTHING RETURNING name"
        ),
        (name, due),
    ).fetchone()
    if first is not None:
        return "recorded"  # first sighting: start at the next due time, no back-filled run
    moved = cur.execute(
        d.q(
            "UPDATE {s}.tenure_periodic SET last_due = %s WHERE name = %s AND last_due < %s"
            " RETURNING name"
        ),
        (due, name, due),
    ).fetchone()
    if moved is None:
        return "taken"
    if job is None:
        return "recorded"
    # A held unique key stands in for the run: the holder's id is what ran for it.
    job_id = enqueue([job])[0]
    cur.execute(
        d.q("UPDATE {s}.tenure_periodic SET last_job_id = %s WHERE name = %s"), (job_id, name)
    )
    return "dispatched"


def read_all(d: Dialect, cur: Cursor) -> list[PeriodicRecord]:
    rows = cur.execute(
        d.q("SELECT name, last_due, last_job_id FROM {s}.tenure_periodic ORDER BY name"), ()
    ).fetchall()
    return [PeriodicRecord(r["name"], float(r["last_due"]), r["last_job_id"]) for r in rows]
