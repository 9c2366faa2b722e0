"""The export as a batch of small jobs.

A request commits an `exports` row and a `start_export` job together. The job plans the export
with `app.batch_over_ids`: one `export_rows(lo, hi)` job per 50 customers, planned a slice at a
time by coordinator jobs; `finish_export` builds the CSV once every range is done.
"""

from __future__ import annotations

import os

import tenure
from exportapp import db

app = tenure.App(os.environ.get("EXPORTS_DATABASE_URL", "sqlite:///exports.db"))

CHUNK = 50  # customers per small job (I/O-bound work: 20-50 ids)
SLICE = 8  # ranges a coordinator adds before chaining the next one


def migrate() -> None:
    """tenure's tables and ours, before the first request: a `conn=` dispatch then writes in
    the request's transaction and has nothing to create."""
    app.store.migrate()
    db.create_schema(app.url)


@app.job(timeout=30, tries=5, backoff=[1, 5, 30])
def start_export(export_id: str) -> None:
    """Plan the batch. The job exists only if the request committed, so the row is there."""
    with db.transaction(app.url) as conn:
        lo, hi, batch_id = conn.one(
            "SELECT lo, hi, batch_id FROM exports WHERE id = %s", (export_id,)
        )
        if batch_id is not None:
            return  # a re-run after a crash: the batch is planned already
        batch = app.batch_over_ids(
            export_rows,
            lo,
            hi,
            chunk=CHUNK,
            slice_jobs=SLICE,
            name=f"export {export_id}",
            then=finish_export.sig(export_id),
        )
        conn.execute(
            "UPDATE exports SET batch_id = %s, status = 'running' WHERE id = %s",
            (batch.id, export_id),
        )


@app.job(timeout=30)
def export_rows(lo: int, hi: int) -> None:
    """One small, idempotent job: customers lo..hi become CSV lines of this batch."""
    batch = tenure.current().batch
    assert batch is not None, "export_rows runs as a member of an export batch"
    with db.transaction(app.url) as conn:
        for cid, name, email in conn.all(
            "SELECT id, name, email FROM customers WHERE id BETWEEN %s AND %s ORDER BY id",
            (lo, hi),
        ):
            conn.execute(
                "INSERT INTO export_lines (batch_id, customer_id, line) VALUES (%s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                (batch.id, cid, f"{cid},{name},{email}"),
            )


@app.job(timeout=30)
def finish_export(export_id: str) -> None:
    """The batch's `then` callback: assemble the CSV (idempotent)."""
    with db.transaction(app.url) as conn:
        (batch_id,) = conn.one("SELECT batch_id FROM exports WHERE id = %s", (export_id,))
        if batch_id is None or app.get_batch(batch_id).state != "succeeded":
            return  # the callback of a batch this export no longer records: nothing to do
        lines = conn.all(
            "SELECT line FROM export_lines WHERE batch_id = %s ORDER BY customer_id",
            (batch_id,),
        )
        csv = "id,name,email\n" + "".join(line + "\n" for (line,) in lines)
        conn.execute(
            "UPDATE exports SET status = 'done', rows = %s, csv = %s WHERE id = %s",
            (len(lines), csv, export_id),
        )
