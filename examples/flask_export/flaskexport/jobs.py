"""The export's jobs: one small, idempotent `export_rows(lo, hi)` per 50 customers, planned by
tenure's coordinator jobs, and `finish_export`, the batch's `then` callback."""

from __future__ import annotations

import os

import tenure
from flaskexport import db

app = tenure.App(os.environ.get("EXPORTS_DATABASE_URL", "sqlite:///exports.db"))


@app.job(timeout=30)
def export_rows(lo: int, hi: int) -> None:
    batch = tenure.current().batch
    assert batch is not None, "export_rows runs as a member of an export batch"
    with db.transaction(app.url) as conn:
        for cid, name in conn.run(
            "SELECT id, name FROM customers WHERE id BETWEEN %s AND %s", (lo, hi)
        ).fetchall():
            conn.run(
                "INSERT INTO export_lines VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (batch.id, cid, f"{cid},{name}"),
            )


@app.job(timeout=30)
def finish_export(export_id: str) -> None:
    with db.transaction(app.url) as conn:
        lines = conn.run(
            "SELECT l.line FROM export_lines l JOIN exports e ON e.batch_id = l.batch_id"
            " WHERE e.id = %s ORDER BY l.customer_id",
            (export_id,),
        ).fetchall()
        csv = "id,name\n" + "".join(line + "\n" for (line,) in lines)
        conn.run("UPDATE exports SET status = 'done', csv = %s WHERE id = %s", (csv, export_id))
