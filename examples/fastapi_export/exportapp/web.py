"""The web side: start an export (returns at once), watch its progress, download the CSV.

Run it with `uvicorn exportapp.web:api`, and a worker beside it, without which nothing runs:
`tenure worker --app exportapp.jobs:app`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, HTTPException, Response
from pydantic import BaseModel, Field

from exportapp import db
from exportapp.jobs import app as jobs
from exportapp.jobs import migrate, start_export


class NoCredits(Exception):
    pass


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    migrate()
    yield


api = FastAPI(title="exports", lifespan=lifespan)


class ExportRequest(BaseModel):
    account_id: int
    lo: int = Field(ge=1)
    hi: int = Field(ge=1)


def create_export(conn: db.Db, account_id: int, lo: int, hi: int) -> str:
    """The request's own writes and the enqueue, on one connection, in one transaction."""
    export_id = uuid.uuid4().hex
    conn.execute(
        "INSERT INTO exports (id, account_id, lo, hi, status) VALUES (%s, %s, %s, %s, 'queued')",
        (export_id, account_id, lo, hi),
    )
    start_export.options(conn=conn.raw).dispatch(export_id)
    # the last step may still fail: then the rollback takes the row *and the job* with it
    charged = conn.execute(
        "UPDATE accounts SET export_credits = export_credits - 1"
        " WHERE id = %s AND export_credits > 0",
        (account_id,),
    ).rowcount
    if charged != 1:
        raise NoCredits(f"account {account_id} has no export credits left")
    return export_id


@api.post("/exports", status_code=202)
def start(body: ExportRequest) -> dict[str, Any]:
    if body.hi < body.lo:
        raise HTTPException(422, "hi must be >= lo")
    try:
        with db.transaction(jobs.url) as conn:
            export_id = create_export(conn, body.account_id, body.lo, body.hi)
    except NoCredits as exc:
        raise HTTPException(402, str(exc)) from None
    return {"id": export_id, "progress_url": f"/exports/{export_id}"}


# before /exports/{export_id}, which would match "ID.csv" too
@api.get("/exports/{export_id}.csv")
def download(export_id: str) -> Response:
    with db.connect(jobs.url) as conn:
        row = conn.one("SELECT csv FROM exports WHERE id = %s AND status = 'done'", (export_id,))
    if row is None:
        raise HTTPException(404, f"export {export_id} is not ready")
    return Response(row[0], media_type="text/csv")


@api.get("/exports/{export_id}")
def progress(export_id: str) -> dict[str, Any]:
    with db.connect(jobs.url) as conn:
        row = conn.one("SELECT status, batch_id, rows FROM exports WHERE id = %s", (export_id,))
    if row is None:
        raise HTTPException(404, f"no export {export_id}")
    status, batch_id, rows = row
    out: dict[str, Any] = {"id": export_id, "status": status, "progress": 0.0, "rows": rows}
    if batch_id is not None:
        batch = jobs.get_batch(batch_id)  # total is declared up front: progress never goes back
        out.update(
            batch_id=batch_id,
            batch_state=batch.state,
            progress=batch.progress,
            done=batch.done,
            total=batch.total,
        )
    if status == "done":
        out["download_url"] = f"/exports/{export_id}.csv"
    return out
