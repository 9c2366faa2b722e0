"""`POST /exports` creates the export's batch in the request's own transaction and returns at
once; `GET /exports/ID` shows its progress, `/exports/ID.csv` the result. Run it with
`flask --app flaskexport.web run`, and a worker beside it: `tenure worker --app
flaskexport.jobs:app`."""

from __future__ import annotations

import uuid
from typing import Any

import click
from flask import Flask, Response, abort, request

from flaskexport import db
from flaskexport.jobs import app as jobs
from flaskexport.jobs import export_rows, finish_export

web = Flask(__name__)


@web.cli.command("seed")
@click.argument("customers", default=1000)
def seed(customers: int) -> None:
    """tenure's tables and ours, customers 1..N, account 1 with 10 credits."""
    jobs.store.migrate()  # before the first request: a `conn=` batch then has nothing to create
    db.setup(jobs.url, customers=customers, credits=10)


class NoCredits(Exception):
    pass


def create_export(conn: db.Db, lo: int, hi: int) -> str:
    """The batch, its first coordinator and callback, and our rows: one transaction."""
    export_id = uuid.uuid4().hex
    batch = jobs.batch_over_ids(
        export_rows,
        lo,
        hi,
        chunk=50,
        slice_jobs=8,
        name=f"export {export_id}",
        then=finish_export.sig(export_id),
        conn=conn.raw,  # in our transaction: a rollback leaves no batch and no job
    )
    conn.run("INSERT INTO exports VALUES (%s, %s, 'running', NULL)", (export_id, batch.id))
    # the last step may still fail: then the rollback takes the batch with it
    if conn.run("UPDATE accounts SET credits = credits - 1 WHERE credits > 0").rowcount != 1:
        raise NoCredits("no export credits left")
    return export_id


@web.post("/exports")
def start() -> tuple[dict[str, Any], int]:
    body = request.get_json()
    try:
        with db.transaction(jobs.url) as conn:
            export_id = create_export(conn, int(body["lo"]), int(body["hi"]))
    except NoCredits as exc:
        return {"error": str(exc)}, 402
    return {"id": export_id, "progress_url": f"/exports/{export_id}"}, 202


@web.get("/exports/<export_id>")
def progress(export_id: str) -> dict[str, Any]:
    batch_id, status, _ = _export(export_id)
    batch = jobs.get_batch(batch_id)  # total declared up front: progress never goes back
    return {"status": status, "progress": batch.progress, "done": batch.done, "total": batch.total}


@web.get("/exports/<export_id>.csv")
def download(export_id: str) -> Response:
    _, status, csv = _export(export_id)
    if status != "done":
        abort(404)
    return Response(csv, mimetype="text/csv")


def _export(export_id: str) -> tuple[str, str, str | None]:
    with db.transaction(jobs.url) as conn:
        found = conn.run(
            "SELECT batch_id, status, csv FROM exports WHERE id = %s", (export_id,)
        ).fetchone()
    if found is None:
        abort(404)
    return found[0], found[1], found[2]
